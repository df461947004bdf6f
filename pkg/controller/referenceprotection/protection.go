// Package referenceprotection is the one mechanism behind GCM's controllers that keep an object
// while other objects still reference it: CloudProfile, NamespacedCloudProfile,
// ControllerDeployment, ExposureClass and Quota. Each of those functions is a Protection: the
// protected kind, its finalizer, and the kinds that reference it with how each names the
// protected object. Protection.Function builds the whole function from that:
//
//   - the protected kind's own events add the finalizer to every object that is not being
//     deleted (as Gardener does, referenced or not: a reference may appear at any time, and the
//     finalizer must already be there when the delete comes);
//   - on deletion, the finalizer is removed once no referrer is left; while one is, the
//     deletion stays blocked and the reason is logged and, where Gardener does, recorded as an
//     Event (ResourceReferenced);
//   - referrer events that can release a blocked deletion (a referrer deleted, or a mutable
//     reference possibly changed) are mapped to the protected objects concerned;
//   - a resync sweep lists the protected kind metadata-only and every referrer kind once, with
//     a reverse index, so "is it still referenced?" is answered from the snapshot: the sweep
//     costs one LIST per kind (per page), however many objects there are.
package referenceprotection

import (
	"context"
	"fmt"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kube"
	"github.com/gardener-knative/gardener-knative/pkg/scheme"
)

const (
	// ReconcilerName names the protection's reconciler in every function built here.
	ReconcilerName = "main"
	// ResyncSweep names the protection's sweep.
	ResyncSweep = "resync"
	// ReferencesIndex is the field the resync sweep indexes every referrer by: the keys
	// (Key.String()) of the protected objects it references. No API server offers it; only the
	// sweep's snapshot answers it.
	ReferencesIndex = "referenceprotection.gardener-knative/references"
	// pageSize bounds the LISTs of live checks, as the sweeps' pages do.
	pageSize = 500
)

// Protection declares one protected kind.
type Protection struct {
	// FunctionName is the function's name.
	FunctionName string
	Kind         function.Kind
	Finalizer    string
	// Referrers are checked in this order; Blocked sees them in this order too.
	Referrers []Referrer
	// Blocked words why a deletion is still blocked, from the referrers found (only kinds that
	// still have some, in the order of Referrers). It is logged, and recorded as an Event when
	// RecordEvent is set.
	Blocked func(key function.Key, referencing []Referencing) string
	// RecordEvent records Blocked's message as a Normal Event with reason ResourceReferenced on
	// the protected object, as Gardener's controller does (its ControllerDeployment controller
	// records none).
	RecordEvent bool
	// Schedule is the resync sweep's cron schedule.
	Schedule string
}

// Referrer is a kind whose objects reference protected objects.
type Referrer struct {
	Kind function.Kind
	// References returns the keys of the protected objects obj (a typed object of Kind)
	// references. It is the one definition of the reference: the sweep's index, the event
	// mapping and the live check all use it.
	References func(obj client.Object) []function.Key
	// SameNamespace says a referrer references only protected objects of its own namespace,
	// so that a live check lists a single namespace.
	SameNamespace bool
	// ReferenceMayHaveChanged says whether an update of a referrer may have dropped a
	// reference. Knative's update events carry the new object only, so the reference it had
	// before is unknown: such an update is mapped to every protected object whose deletion is
	// blocked. Nil means the reference is immutable: only a referrer's deletion releases.
	ReferenceMayHaveChanged function.Predicate
}

// Referencing are the referrers of one kind that still reference a protected object.
type Referencing struct {
	// Kind is the referrers' kind, e.g. "Shoot".
	Kind string
	// Names are "namespace/name" (or "name" for cluster-scoped referrers), sorted.
	Names []string
}

// NamesOf returns the names of the referrers of the given kind, nil if there are none.
func NamesOf(referencing []Referencing, kind string) []string {
	for _, r := range referencing {
		if r.Kind == kind {
			return r.Names
		}
	}
	return nil
}

// Typed adapts a reference function of one typed kind to Referrer.References; any other
// object references nothing.
func Typed[T client.Object](references func(T) []function.Key) func(client.Object) []function.Key {
	return func(obj client.Object) []function.Key {
		typed, ok := obj.(T)
		if !ok {
			return nil
		}
		return references(typed)
	}
}

// NeedsFinalizer: obj is not being deleted and lacks the finalizer.
func NeedsFinalizer(obj metav1.Object, finalizer string) bool {
	return obj.GetDeletionTimestamp() == nil && !slices.Contains(obj.GetFinalizers(), finalizer)
}

// AwaitsRelease: obj is being deleted and still holds the finalizer, so its deletion waits for
// the last referrer to go.
func AwaitsRelease(obj metav1.Object, finalizer string) bool {
	return obj.GetDeletionTimestamp() != nil && slices.Contains(obj.GetFinalizers(), finalizer)
}

// Function builds the function that protects p's kind.
func (p *Protection) Function() *function.Function {
	fn := &function.Function{
		Name:          p.FunctionName,
		Parts:         []function.Part{function.Runtime},
		WorksOnGarden: true,
		RBAC:          p.rbac(),
		Reconcilers: []function.Reconciler{{
			Name: ReconcilerName,
			For:  p.Kind,
			New: func(deps function.Deps) (function.Handler, error) {
				return &Reconciler{Protection: p, Writer: deps.Source.Writer, Events: deps.Events, Log: deps.Log}, nil
			},
		}},
		Watches: []function.Watch{{Kind: p.Kind, Reconciler: ReconcilerName, Predicate: p.ProtectedPredicate}},
		Sweeps: []function.Sweep{{
			Name: ResyncSweep, Schedule: p.Schedule, Reconciler: ReconcilerName,
			// The decision needs metadata only: deletion timestamp and finalizers.
			Primary: function.List{Kind: p.Kind, MetadataOnly: true},
		}},
	}
	for _, ref := range p.Referrers {
		// References live in the referrers' specs: an update that changes no spec releases
		// nothing, and an immutable reference is released by the referrer's deletion alone.
		changes := function.Changes{function.ChangedSpec}
		if ref.ReferenceMayHaveChanged == nil {
			changes = function.NoUpdates
		}
		fn.Watches = append(fn.Watches, function.Watch{
			Kind: ref.Kind, Reconciler: ReconcilerName,
			Predicate: ref.mayRelease,
			Map:       p.referrerMapper(ref),
			Changes:   changes,
		})
		// References live in the referrers' specs, so they are listed in full.
		fn.Sweeps[0].Related = append(fn.Sweeps[0].Related, function.List{
			Kind:    ref.Kind,
			Indexes: map[string]function.IndexFunc{ReferencesIndex: ref.index},
		})
	}
	return fn
}

// rbac is least privilege: read and patch (finalizers) the protected kind, list the referrers,
// create Events where they are recorded.
func (p *Protection) rbac() []rbacv1.PolicyRule {
	rules := []rbacv1.PolicyRule{{APIGroups: []string{p.Kind.Group}, Resources: []string{p.Kind.Resource}, Verbs: []string{"get", "list", "patch"}}}
	for _, ref := range p.Referrers {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{ref.Kind.Group}, Resources: []string{ref.Kind.Resource}, Verbs: []string{"list"}})
	}
	if p.RecordEvent {
		rules = append(rules, function.EventsRBAC)
	}
	return rules
}

// ProtectedPredicate lets through the events of protected objects that need something done: a
// missing finalizer, or a deletion waiting for release. The function's own finalizer patches,
// and every other change of a protected object, cost nothing.
func (p *Protection) ProtectedPredicate(ev function.Event) bool {
	if ev.Deleted {
		return false
	}
	if ev.Object == nil {
		return true
	}
	return NeedsFinalizer(ev.Object, p.Finalizer) || AwaitsRelease(ev.Object, p.Finalizer)
}

// mayRelease lets through the referrer events after which a blocked deletion may be released.
func (ref Referrer) mayRelease(ev function.Event) bool {
	return ev.Deleted || (ref.ReferenceMayHaveChanged != nil && ref.ReferenceMayHaveChanged(ev))
}

// keys are the protected objects obj references, each once (a Shoot may name its CloudProfile
// in two fields).
func (ref Referrer) keys(obj client.Object) []function.Key {
	var keys []function.Key
	for _, k := range ref.References(obj) {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys
}

func (ref Referrer) index(obj client.Object) []string {
	keys := ref.keys(obj)
	values := make([]string, 0, len(keys))
	for _, k := range keys {
		values = append(values, k.String())
	}
	return values
}

// referrerMapper maps a referrer's deletion to the protected objects it referenced (the delete
// event carries its last state), and any other event that passed the predicate to the protected
// objects whose deletion is blocked, since the reference it dropped is unknown.
func (p *Protection) referrerMapper(ref Referrer) function.Mapper {
	return func(ctx context.Context, reader client.Reader, ev function.Event) ([]function.Key, error) {
		if ev.Deleted && ev.Object != nil {
			obj, err := scheme.Gardener.New(ev.Object.GroupVersionKind())
			if err != nil {
				return nil, function.Terminal(fmt.Errorf("%s is not a kind the scheme knows: %w", ev.Object.GroupVersionKind(), err))
			}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(ev.Object.Object, obj); err != nil {
				return nil, function.Terminal(fmt.Errorf("decoding %s %s: %w", ev.Kind.Kind, ev.Key, err))
			}
			return ref.keys(obj.(client.Object)), nil
		}
		namespace := ""
		if ref.SameNamespace {
			namespace = ev.Key.Namespace
		}
		return p.awaitingRelease(ctx, reader, namespace)
	}
}

// awaitingRelease lists the protected kind metadata-only (in namespace, if set) and returns the
// objects whose deletion waits for release.
func (p *Protection) awaitingRelease(ctx context.Context, reader client.Reader, namespace string) ([]function.Key, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(p.Kind.GroupVersion().WithKind(p.Kind.Kind + "List"))
	var opts []client.ListOption
	if namespace != "" {
		opts = append(opts, client.InNamespace(namespace))
	}
	items, err := kube.ListAll(ctx, reader, list, pageSize, opts...)
	if err != nil {
		return nil, err
	}
	var keys []function.Key
	for _, item := range items {
		if AwaitsRelease(item, p.Finalizer) {
			keys = append(keys, client.ObjectKeyFromObject(item))
		}
	}
	return keys, nil
}
