package binding

import (
	"context"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// NewFunction declares the function of binding kind k: binding events, the deletion of Shoots
// that used a binding being deleted, and a resync sweep.
func NewFunction(k Kind) *function.Function {
	related := []function.List{
		// Full: which binding a Shoot uses is in its spec. Read only for bindings being deleted.
		{Kind: kinds.Shoot},
		// The bindings themselves, all of them: releasing one asks whether another binding still
		// needs its credentials and Quotas.
		{Kind: k.Binding},
		{Kind: kinds.Quota, MetadataOnly: true, LabelSelector: k.ReferenceLabel},
	}
	for _, ck := range k.Credentials {
		// Only the labelled ones: every protected object carries the label, and one that does
		// not needs a write anyway, before which it is read live (Reconciler.read). Listing
		// every Secret of a garden instead would cost far more.
		related = append(related, function.List{Kind: ck.Kind, MetadataOnly: true, LabelSelector: k.ReferenceLabel})
	}
	return &function.Function{
		Name:          k.Name,
		Parts:         []function.Part{function.Runtime},
		WorksOnGarden: true,
		RBAC:          k.rbac(),
		Reconcilers: []function.Reconciler{{
			Name: "main",
			For:  k.Binding,
			New: func(deps function.Deps) (function.Handler, error) {
				return &Reconciler{Kind: k, Writer: deps.Source.Writer, Live: deps.Source.Reader, Events: deps.Events, Log: deps.Log}, nil
			},
		}},
		Watches: []function.Watch{
			{Kind: k.Binding, Reconciler: "main", Predicate: BindingPredicate},
			{Kind: kinds.Shoot, Reconciler: "main", Predicate: k.ShootPredicate, Map: k.MapShootToDeletingBinding, Changes: function.NoUpdates},
		},
		Sweeps: []function.Sweep{{
			Name: "resync", Schedule: k.Schedule, Reconciler: "main",
			Primary: function.List{Kind: k.Binding},
			Related: related,
		}},
	}
}

// rbac: read and patch the bindings (their finalizer), the credentials and Quotas (finalizers
// and labels); list Shoots; record Events. Besides Events, nothing is created, updated whole
// or deleted.
func (k Kind) rbac() []rbacv1.PolicyRule {
	readPatch := []string{"get", "list", "patch"}
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{k.Binding.Group}, Resources: []string{k.Binding.Resource}, Verbs: readPatch},
		{APIGroups: []string{kinds.Quota.Group}, Resources: []string{kinds.Quota.Resource}, Verbs: readPatch},
		{APIGroups: []string{kinds.Shoot.Group}, Resources: []string{kinds.Shoot.Resource}, Verbs: []string{"list"}},
		function.EventsRBAC,
	}
	for _, ck := range k.Credentials {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{ck.Kind.Group}, Resources: []string{ck.Kind.Resource}, Verbs: readPatch})
	}
	return rules
}

// BindingPredicate lets through the events of bindings that have something to converge: one
// without its finalizer (new, or never reconciled) or one being deleted. A binding's references
// are immutable, so an update of a protected binding changes nothing the function decides on;
// what happens to the referenced objects meanwhile is the sweep's to repair, as Gardener's
// periodic resync does. Deleted bindings are gone: their finalizer made sure they released
// everything first.
func BindingPredicate(ev function.Event) bool {
	if ev.Deleted {
		return false
	}
	if ev.Object == nil {
		return true
	}
	return ev.Object.GetDeletionTimestamp() != nil || !slices.Contains(ev.Object.GetFinalizers(), Finalizer)
}

// ShootPredicate lets through the deletion of a Shoot that used a binding of the kind: it may
// have been the last user of a binding that waits to be deleted. Gardener's controller watches
// only bindings and retries a blocked deletion with backoff; a stateless function is told instead.
// A Shoot that switches to another binding is left to the sweep: its event does not say which
// binding it left.
func (k Kind) ShootPredicate(ev function.Event) bool {
	return ev.Deleted && ev.Object != nil && k.shootBinding(ev.Object) != ""
}

// MapShootToDeletingBinding maps a deleted Shoot to the binding it used, if that binding is
// being deleted: one metadata-only GET, and nothing to reconcile for a binding in use.
func (k Kind) MapShootToDeletingBinding(ctx context.Context, reader client.Reader, ev function.Event) ([]function.Key, error) {
	key := function.Key{Namespace: ev.Key.Namespace, Name: k.shootBinding(ev.Object)}
	b := &metav1.PartialObjectMetadata{}
	b.SetGroupVersionKind(k.Binding.GroupVersionKind)
	if err := reader.Get(ctx, key, b); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	if b.DeletionTimestamp == nil {
		return nil, nil
	}
	return []function.Key{key}, nil
}

func (k Kind) shootBinding(shoot *unstructured.Unstructured) string {
	name, _, _ := unstructured.NestedString(shoot.Object, k.ShootField...)
	return name
}
