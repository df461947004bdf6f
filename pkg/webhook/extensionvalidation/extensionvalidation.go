// Package extensionvalidation validates Gardener's extension resources
// (extensions.gardener.cloud/v1alpha1) and etcd-druid's Etcds on CREATE and UPDATE (GRM's
// extension-validation webhook): required fields, well-formed values and, on UPDATE, immutable
// fields and no spec change while the object is being deleted. The rules are those of Gardener's
// pkg/api/extensions/validation and etcd-druid's api/validation, which live in modules this one
// does not import; they are written out here kind by kind.
package extensionvalidation

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/webhook"
)

// Name is the webhook's name.
const Name = "extension-validation"

// Webhook is the constructor the server registers. Gardener serves this webhook at one path
// per kind; one handler validates whichever of the kinds a request is about.
var Webhook = webhook.Constructor{
	Name:    Name,
	Enabled: func(c *componentconfig.ResourceManagerFile) bool { return c.Webhooks.ExtensionValidation.Enabled },
	New: func(deps webhook.Deps) (webhook.Webhook, error) {
		paths := make([]string, 0, len(kinds))
		for _, k := range kinds {
			paths = append(paths, Path(k.groupKind()))
		}
		wh := webhook.Admission(Name, paths[0], Handler(), deps.Log)
		wh.MorePaths = paths[1:]
		return wh, nil
	},
}

// Path is where Gardener serves the validation of a kind: controller-runtime's convention
// for validating webhooks, e.g. /validate-extensions-gardener-cloud-v1alpha1-worker.
func Path(kind schema.GroupKind) string {
	return "/validate-" + strings.ReplaceAll(kind.Group, ".", "-") + "-" + version + "-" + strings.ToLower(kind.Kind)
}

// version is the one version of every validated kind.
const version = "v1alpha1"

// Handler validates the object of a CREATE or UPDATE of any of the kinds and answers an
// invalid one as Gardener does: 422 Invalid with one cause per violated rule. Other operations
// pass; a kind it does not know is an error, since only a broken registration sends one.
func Handler() admission.Handler {
	return admission.HandlerFunc(func(_ context.Context, req admission.Request) admission.Response {
		if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
			return admission.Allowed("")
		}
		gk := schema.GroupKind{Group: req.Kind.Group, Kind: req.Kind.Kind}
		k, ok := byKind[gk]
		if !ok || req.Kind.Version != version {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("%s does not validate %s/%s %s", Name, req.Kind.Group, req.Kind.Version, req.Kind.Kind))
		}
		name, errs, err := k.validate(req)
		if err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		if len(errs) > 0 {
			status := apierrors.NewInvalid(gk, name, errs).ErrStatus
			return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &status}}
		}
		return admission.Allowed("")
	})
}
