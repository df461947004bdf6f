// Package crddeletionprotection refuses unconfirmed deletions (GRM's crd-deletion-protection
// webhook): DELETE of a CustomResourceDefinition labelled gardener.cloud/deletion-protected=true,
// of one of Gardener's extension resources or of an etcd-druid Etcd passes only when the object
// is annotated confirmation.gardener.cloud/deletion=true. Losing such an object (say a shoot's
// Infrastructure, or the CRD and with it every Infrastructure) is hard to recover from, so a
// stray `kubectl delete` must not be enough.
package crddeletionprotection

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/webhook"
)

const (
	// Name is the webhook's name.
	Name = "crd-deletion-protection"
	// Path is where Gardener serves it.
	Path = "/webhooks/validate-crd-deletion"
	// ProtectedLabel marks the CustomResourceDefinitions whose deletion must be confirmed.
	ProtectedLabel = "gardener.cloud/deletion-protected"
	// ConfirmationAnnotation confirms a deletion when its value is true.
	ConfirmationAnnotation = v1beta1constants.ConfirmationDeletion
)

// Webhook is the constructor the server registers. The objects it checks live in the cluster
// whose kube-apiserver calls it, so it reads the target.
var Webhook = webhook.Constructor{
	Name:    Name,
	Enabled: func(c *componentconfig.ResourceManagerFile) bool { return c.Webhooks.CRDDeletionProtection.Enabled },
	New: func(deps webhook.Deps) (webhook.Webhook, error) {
		return webhook.Admission(Name, Path, Handler(deps.Target), deps.Log), nil
	},
}

// crdResources are CustomResourceDefinitions at both versions Gardener registers (v1beta1 is
// no longer served by current kube-apiservers).
var crdResources = map[metav1.GroupVersionResource]bool{
	{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}:      true,
	{Group: "apiextensions.k8s.io", Version: "v1beta1", Resource: "customresourcedefinitions"}: true,
}

// protectedResources are the custom resources whose every deletion must be confirmed: those
// Gardener's handler lists. Gardener also registers bastions, but its handler lets them go, and
// so does this one.
var protectedResources = map[metav1.GroupVersionResource]bool{
	{Group: "druid.gardener.cloud", Version: "v1alpha1", Resource: "etcds"}: true,
	extensions("backupbuckets"): true, extensions("backupentries"): true, extensions("containerruntimes"): true,
	extensions("controlplanes"): true, extensions("dnsrecords"): true, extensions("extensions"): true,
	extensions("infrastructures"): true, extensions("networks"): true, extensions("operatingsystemconfigs"): true,
	extensions("selfhostedshootexposures"): true, extensions("workers"): true,
}

func extensions(resource string) metav1.GroupVersionResource {
	return metav1.GroupVersionResource{Group: "extensions.gardener.cloud", Version: "v1alpha1", Resource: resource}
}

// Handler refuses unconfirmed DELETEs of protected objects. A DELETECOLLECTION reaches it once
// per object, without the object's name and without the collection's selectors; like Gardener,
// it then lists the objects from target (the protected CRDs, or all objects of the kind in the
// request's namespace) and refuses unless every one of them is confirmed, so that a collection is
// not left half deleted.
func Handler(target client.Reader) admission.Handler {
	return admission.HandlerFunc(func(ctx context.Context, req admission.Request) admission.Response {
		if req.Operation != admissionv1.Delete {
			return admission.Allowed("operation is not DELETE")
		}
		crd := crdResources[req.Resource]
		if !crd && !protectedResources[req.Resource] {
			return admission.Allowed("resource is not deletion-protected")
		}
		if req.Name == "" {
			return collection(ctx, target, req, crd)
		}
		if len(req.OldObject.Raw) == 0 {
			return admission.Errored(http.StatusBadRequest, errors.New("no object found in admission request"))
		}
		obj := &metav1.PartialObjectMetadata{}
		if err := json.Unmarshal(req.OldObject.Raw, obj); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		// The registration selects protected CRDs; checking the label here too keeps a single
		// DELETE and a DELETECOLLECTION alike, whatever the registration says.
		if crd && obj.Labels[ProtectedLabel] != "true" {
			return admission.Allowed("CustomResourceDefinition is not deletion-protected")
		}
		if !confirmed(obj) {
			logf.FromContext(ctx).Info("Refusing unconfirmed deletion", "user", req.UserInfo.Username)
			return admission.Denied(unconfirmed)
		}
		return admission.Allowed("")
	})
}

// unconfirmed is Gardener's message for a deletion without confirmation.
var unconfirmed = fmt.Sprintf("must have a %q annotation to delete", ConfirmationAnnotation)

func collection(ctx context.Context, target client.Reader, req admission.Request, crd bool) admission.Response {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: req.Kind.Group, Version: req.Kind.Version, Kind: req.Kind.Kind + "List"})
	opt := client.ListOption(client.InNamespace(req.Namespace))
	if crd {
		opt = client.MatchingLabels{ProtectedLabel: "true"}
	}
	if err := target.List(ctx, list, opt); err != nil {
		if apierrors.IsNotFound(err) {
			return admission.Allowed("object was not found")
		}
		return admission.Errored(http.StatusInternalServerError, err)
	}
	for i := range list.Items {
		if obj := &list.Items[i]; !confirmed(obj) {
			name := obj.Name
			if obj.Namespace != "" {
				name = obj.Namespace + "/" + obj.Name
			}
			logf.FromContext(ctx).Info("Refusing unconfirmed deletion of a collection", "user", req.UserInfo.Username, "object", name)
			return admission.Denied(fmt.Sprintf("%s %s %s", req.Kind.Kind, name, unconfirmed))
		}
	}
	return admission.Allowed("")
}

// confirmed says whether the object's deletion is confirmed: the annotation parses as true
// (true, True, TRUE, t, T or 1), as Gardener reads it.
func confirmed(obj client.Object) bool {
	ok, err := strconv.ParseBool(obj.GetAnnotations()[ConfirmationAnnotation])
	return err == nil && ok
}
