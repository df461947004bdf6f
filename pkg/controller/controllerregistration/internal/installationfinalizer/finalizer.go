// Package installationfinalizer is the one mechanism behind the ControllerRegistration and
// Seed finalizer reconcilers: an object of the kind gets Gardener's finalizer
// "core.gardener.cloud/controllerregistration" while it lives, and loses it on deletion once no
// ControllerInstallation references it by the given field.
package installationfinalizer

import (
	"context"
	"log/slog"
	"slices"
	"sort"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/referenceprotection"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
	"github.com/gardener-knative/gardener-knative/pkg/kube"
)

// FinalizerName is the finalizer Gardener's ControllerRegistration controller puts on
// ControllerRegistrations and Seeds.
const FinalizerName = "core.gardener.cloud/controllerregistration"

const pageSize = 500

// Finalizer keeps objects of Kind while ControllerInstallations reference them.
type Finalizer struct {
	Kind function.Kind
	// Field is the ControllerInstallation field naming the object (a field selector
	// gardener-apiserver offers), e.g. "spec.seedRef.name".
	Field string
	// Referenced is the name Field holds; empty when the installation names none.
	Referenced func(*gardencorev1beta1.ControllerInstallation) string
	// Blocked, when set, words the log line of a blocked deletion from the installations' names.
	Blocked func(name string, installations []string) string
}

// Index answers the finalizer's field selector in a sweep's snapshot.
func (f *Finalizer) Index(obj client.Object) []string {
	if ci, ok := obj.(*gardencorev1beta1.ControllerInstallation); ok {
		if name := f.Referenced(ci); name != "" {
			return []string{name}
		}
	}
	return nil
}

// Predicate passes the object's events that need something done: a missing finalizer, or a
// deletion waiting for release. The reconciler's own patches cost nothing.
func (f *Finalizer) Predicate(ev function.Event) bool {
	if ev.Deleted {
		return false
	}
	if ev.Object == nil {
		return true
	}
	return referenceprotection.NeedsFinalizer(ev.Object, FinalizerName) || referenceprotection.AwaitsRelease(ev.Object, FinalizerName)
}

// InstallationDeleted passes the deletions of ControllerInstallations: the last one's may
// release a deletion.
func InstallationDeleted(ev function.Event) bool { return ev.Deleted }

// MapInstallation maps an installation's deletion to the object it named.
func (f *Finalizer) MapInstallation(_ context.Context, _ client.Reader, ev function.Event) ([]function.Key, error) {
	ci, err := function.Decode[gardencorev1beta1.ControllerInstallation](ev)
	if err != nil || ci == nil {
		return nil, err
	}
	if name := f.Referenced(ci); name != "" {
		return []function.Key{{Name: name}}, nil
	}
	return nil, nil
}

// Reconciler adds and releases the finalizer.
type Reconciler struct {
	*Finalizer
	Writer function.Writer
	Log    *slog.Logger
}

// Reconcile converges one object. A deletion that installations still block is not an error
// (Gardener's ControllerRegistration finalizer returns one, to be retried with backoff): the
// installations' deletion events and the sweep bring the object back.
func (r *Reconciler) Reconcile(ctx context.Context, req function.Request) error {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(r.Kind.GroupVersionKind)
	if err := req.Reader.Get(ctx, req.Key, obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	if referenceprotection.NeedsFinalizer(obj, FinalizerName) {
		r.Log.Info("Adding finalizer", "kind", r.Kind.Kind, "name", obj.Name)
		finalizers := append(slices.Clip(obj.Finalizers), FinalizerName)
		_, err := r.Writer.Patch(ctx, obj, func() { obj.Finalizers = finalizers })
		return client.IgnoreNotFound(err)
	}
	if !referenceprotection.AwaitsRelease(obj, FinalizerName) {
		return nil
	}
	installations := &metav1.PartialObjectMetadataList{}
	installations.SetGroupVersionKind(kinds.ControllerInstallation.GroupVersion().WithKind("ControllerInstallationList"))
	items, err := kube.ListAll(ctx, req.Reader, installations, pageSize, client.MatchingFields{r.Field: obj.Name})
	if err != nil {
		return err
	}
	if len(items) > 0 {
		if r.Blocked != nil {
			names := make([]string, 0, len(items))
			for _, item := range items {
				names = append(names, item.GetName())
			}
			sort.Strings(names)
			r.Log.Info("Deletion blocked", "kind", r.Kind.Kind, "name", obj.Name, "reason", r.Blocked(obj.Name, names))
		}
		return nil
	}
	r.Log.Info("Removing finalizer", "kind", r.Kind.Kind, "name", obj.Name)
	finalizers := slices.DeleteFunc(slices.Clone(obj.Finalizers), func(f string) bool { return f == FinalizerName })
	_, err = r.Writer.Patch(ctx, obj, func() { obj.Finalizers = finalizers })
	return client.IgnoreNotFound(err)
}

// Declaration is the reconciler's part of the function: its reconciler, watches, sweep and
// RBAC (read and patch the finalizers of objects of Kind, list ControllerInstallations).
func (f *Finalizer) Declaration(reconcilerName, sweepName, schedule string) (function.Reconciler, []function.Watch, function.Sweep, []rbacv1.PolicyRule) {
	reconciler := function.Reconciler{
		Name: reconcilerName, For: f.Kind,
		New: func(deps function.Deps) (function.Handler, error) {
			return &Reconciler{Finalizer: f, Writer: deps.Source.Writer, Log: deps.Log}, nil
		},
	}
	watches := []function.Watch{
		{Kind: f.Kind, Reconciler: reconcilerName, Predicate: f.Predicate, Changes: function.Changes{function.ChangedMetadata}},
		{Kind: kinds.ControllerInstallation, Reconciler: reconcilerName, Predicate: InstallationDeleted, Map: f.MapInstallation, Changes: function.NoUpdates},
	}
	sweep := function.Sweep{
		Name: sweepName, Schedule: schedule, Reconciler: reconcilerName,
		Primary: function.List{Kind: f.Kind, MetadataOnly: true},
		Related: []function.List{{Kind: kinds.ControllerInstallation, Indexes: map[string]function.IndexFunc{f.Field: f.Index}}},
	}
	rbac := []rbacv1.PolicyRule{
		{APIGroups: []string{f.Kind.Group}, Resources: []string{f.Kind.Resource}, Verbs: []string{"get", "list", "patch"}},
		{APIGroups: []string{kinds.ControllerInstallation.Group}, Resources: []string{kinds.ControllerInstallation.Resource}, Verbs: []string{"list"}},
	}
	return reconciler, watches, sweep, rbac
}
