// Package gardencabundle keeps the CA bundle of the runtime part's webhook registrations in the
// garden: extension-registration validates the garden's ControllerRegistrations and
// ControllerDeployments, so its registrations of those kinds live in the garden (as
// gardener-operator registers its webhooks in the virtual garden), and the garden's
// kube-apiserver calls the runtime cluster's Service by url. webhookcertificates, which runs in the
// runtime cluster, issues and rotates that Service's certificate but cannot reach the garden; this
// function, which works on the garden from the runtime cluster, carries the certificate's bundle
// over.
//
// One reconcile per serving certificate (its Secret in the runtime part's namespace, the Target):
// every garden registration labelled app.kubernetes.io/part-of=gardener-knative whose
// gardener-knative.io/inject-ca-from-secret annotation names the Secret gets its bundle (ca.crt)
// in the caBundle of each of its webhooks; then the Secret records which bundle the garden
// carries (webhookcertificates.AnnotationGardenBundle), which a rotation waits for before it
// serves the new certificate. Gardener needs no such controller: gardener-operator writes its
// virtual-garden registrations with its own CA when it reconciles.
package gardencabundle

import (
	"context"
	"fmt"
	"log/slog"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/webhookcertificates"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// ReconcilerName is the function's one reconciler.
const ReconcilerName = "main"

// ResyncSweepName is its sweep.
const ResyncSweepName = "resync"

// namespace is where the serving certificates it carries over are: the runtime part's.
var namespace = function.Runtime.Namespace()

// partOf selects the registrations of gardener-knative, in the garden as in any cluster.
var partOf = client.MatchingLabels{"app.kubernetes.io/part-of": "gardener-knative"}

// Function carries the runtime part's serving certificates' bundles into the garden's
// registrations.
var Function = &function.Function{
	Name:          "gardencabundle",
	Parts:         []function.Part{function.Runtime},
	WorksOnGarden: true,
	// In the garden: the registrations, to read and to give their bundles.
	RBAC: []rbacv1.PolicyRule{{
		APIGroups: []string{admissionregistrationv1.GroupName},
		Resources: []string{kinds.MutatingWebhookConfiguration.Resource, kinds.ValidatingWebhookConfiguration.Resource},
		Verbs:     []string{"list", "patch"},
	}},
	// Where it runs: the Secrets a registration names (serving certificates, the ingress's CA), to
	// read and to record the garden's bundle on.
	NamespacedTargetRBAC: map[string][]rbacv1.PolicyRule{
		function.OwnNamespace: {{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "patch"}}},
	},
	Reconcilers: []function.Reconciler{{Name: ReconcilerName, For: kinds.Secret, Cluster: function.Target, New: newReconciler}},
	Watches: []function.Watch{
		// A serving certificate issued or rotated (webhookcertificates' watch, shared in the
		// source). Secrets are watched by reference: their events carry no labels, so the
		// predicate keeps those of our namespace.
		{Kind: kinds.Secret, Cluster: function.Target, Reconciler: ReconcilerName, LabelSelector: webhookcertificates.LabelServingCertificate, Predicate: inOurNamespace},
		// A garden registration added, changed or deleted: the Secret it names.
		{Kind: kinds.MutatingWebhookConfiguration, Reconciler: ReconcilerName, LabelSelector: webhookcertificates.LabelPartOf, Map: mapToSecret},
		{Kind: kinds.ValidatingWebhookConfiguration, Reconciler: ReconcilerName, LabelSelector: webhookcertificates.LabelPartOf, Map: mapToSecret},
	},
	// As webhookcertificates' resync, over every Secret of our namespace, by metadata: it also
	// catches a change of the ingress's CA (an input, which sends no event here) and a
	// registration that stopped naming a Secret (its event names only the Secret it names now).
	Sweeps: []function.Sweep{{
		Name: ResyncSweepName, Schedule: "*/5 * * * *", Reconciler: ReconcilerName,
		Primary: function.List{Kind: kinds.Secret, Cluster: function.Target, Namespace: namespace, MetadataOnly: true},
		Related: []function.List{
			{Kind: kinds.MutatingWebhookConfiguration, LabelSelector: webhookcertificates.LabelPartOf},
			{Kind: kinds.ValidatingWebhookConfiguration, LabelSelector: webhookcertificates.LabelPartOf},
		},
	}},
}

func inOurNamespace(ev function.Event) bool { return ev.Key.Namespace == namespace }

// mapToSecret maps a garden registration's event to the Secret of our namespace that its
// annotation names, if any (from the event alone: no request).
func mapToSecret(_ context.Context, _ client.Reader, ev function.Event) ([]function.Key, error) {
	if ev.Object == nil {
		return nil, nil
	}
	if key, ok := SecretNamedBy(ev.Object); ok {
		return []function.Key{key}, nil
	}
	return nil, nil
}

// SecretNamedBy is the Secret of the runtime part's namespace whose bundle a registration's
// annotation asks for; false when it names none, or one of another namespace (not a serving
// certificate of the runtime cluster).
func SecretNamedBy(obj metav1.Object) (function.Key, bool) {
	key, ok := webhookcertificates.InjectedFrom(obj)
	if !ok || key.Namespace != namespace || key.Name == "" {
		return function.Key{}, false
	}
	return key, true
}

// Reconciler gives the garden's registrations of one Secret its bundle.
type Reconciler struct {
	Source, Target function.ClusterClient
	Log            *slog.Logger
}

func newReconciler(deps function.Deps) (function.Handler, error) {
	return &Reconciler{Source: deps.Source, Target: deps.Target, Log: deps.Log}, nil
}

// Reconcile injects the Secret's bundle into every garden registration naming it, then, for a
// serving certificate, records on its Secret that the garden carries that bundle (conditional on
// the version read, so that a bundle changed meanwhile is not recorded as carried). When no
// garden registration names the Secret, it removes a record left from one that did; the Secret's
// data is then never read.
func (r *Reconciler) Reconcile(ctx context.Context, req function.Request) error {
	named, err := registrationsNaming(ctx, req)
	if err != nil {
		return err
	}
	if len(named) == 0 {
		return r.forget(ctx, req)
	}
	// Live: a sweep lists only the Secrets' metadata.
	secret := &corev1.Secret{}
	if err := r.Target.Reader.Get(ctx, req.Key, secret); err != nil {
		return err
	}
	bundle := secret.Data[webhookcertificates.KeyBundle]
	if len(webhookcertificates.ParseBundle(bundle)) == 0 {
		// A serving certificate not issued yet comes with its Secret's next event; an input
		// without a CA leaves the registrations as they are until the operator fixes it.
		return function.Terminal(fmt.Errorf("the Secret %s holds no certificate in %s", req.Key, webhookcertificates.KeyBundle))
	}
	for _, obj := range named {
		patched, err := r.Source.Writer.Patch(ctx, obj, func() {
			for _, cc := range webhookcertificates.ClientConfigs(obj) {
				cc.CABundle = bundle
			}
		})
		if err != nil {
			return fmt.Errorf("the garden's registration %s: %w", obj.GetName(), err)
		}
		if patched {
			r.Log.Info("CA bundle injected into the garden's registration", "registration", obj.GetName(), "secret", req.Key)
		}
	}
	if secret.Labels[webhookcertificates.LabelServingCertificate] != "true" {
		// An operator's input (the ingress's CA): nothing rotates it here, nothing waits.
		return nil
	}
	_, err = r.Target.Writer.Patch(ctx, secret, func() {
		metav1.SetMetaDataAnnotation(&secret.ObjectMeta, webhookcertificates.AnnotationGardenBundle, webhookcertificates.Digest(bundle))
	})
	return err
}

// forget removes the garden's record from a Secret no garden registration names.
func (r *Reconciler) forget(ctx context.Context, req function.Request) error {
	secret := &metav1.PartialObjectMetadata{}
	secret.SetGroupVersionKind(kinds.Secret.GroupVersionKind)
	if err := req.Reader.Get(ctx, req.Key, secret); err != nil {
		return client.IgnoreNotFound(err)
	}
	if _, recorded := secret.Annotations[webhookcertificates.AnnotationGardenBundle]; !recorded {
		return nil
	}
	_, err := r.Target.Writer.Patch(ctx, secret, func() {
		delete(secret.Annotations, webhookcertificates.AnnotationGardenBundle)
	})
	return err
}

// registrationsNaming are the garden's registrations of gardener-knative that name the request's
// Secret (two LISTs, from the sweep's snapshot during a sweep).
func registrationsNaming(ctx context.Context, req function.Request) ([]client.Object, error) {
	var named []client.Object
	for _, list := range []client.ObjectList{&admissionregistrationv1.MutatingWebhookConfigurationList{}, &admissionregistrationv1.ValidatingWebhookConfigurationList{}} {
		if err := req.Source.List(ctx, list, partOf); err != nil {
			return nil, fmt.Errorf("listing the garden's registrations: %w", err)
		}
		for _, obj := range webhookcertificates.Registrations(list) {
			if key, ok := SecretNamedBy(obj); ok && key == req.Key {
				named = append(named, obj)
			}
		}
	}
	return named, nil
}
