// Package activity is the "Activity" reconciler of GCM's Project controller: activity on the
// objects that keep a Project in use (Shoots, BackupEntries, and the Secrets, InternalSecrets
// and Quotas that bindings reference) sets the Project's status.lastActivityTimestamp, so that a
// Project whose objects come and go between two stale sweeps is not taken for unused.
package activity

import (
	"context"
	"log/slog"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// RBAC is what the Activity reconciler needs: the namespace read that maps an event to its
// Project, the Project read, and the status patch.
var RBAC = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get"}},
	{APIGroups: []string{gardencorev1beta1.GroupName}, Resources: []string{"projects"}, Verbs: []string{"get"}},
	{APIGroups: []string{gardencorev1beta1.GroupName}, Resources: []string{"projects/status"}, Verbs: []string{"patch"}},
}

// Watches feed the reconciler named reconciler with the events that count as activity.
func Watches(reconciler string) []function.Watch {
	watches := []function.Watch{
		{Kind: kinds.Shoot, Reconciler: reconciler, Predicate: CreatedDeletedOrSpecChanged, Map: MapToProject},
		{Kind: kinds.BackupEntry, Reconciler: reconciler, Predicate: CreatedDeletedOrSpecChanged, Map: MapToProject},
		{Kind: kinds.Quota, Reconciler: reconciler, Predicate: ReferencedByBinding, Map: MapToProject},
	}
	// Secrets are confidential: their events carry only a reference, so the predicate cannot see
	// the labels. The source's label selectors do its work on the server instead: only Secrets
	// referenced by a binding cause events at all.
	for _, k := range []function.Kind{kinds.Secret, kinds.InternalSecret} {
		for _, label := range []string{v1beta1constants.LabelSecretBindingReference, v1beta1constants.LabelCredentialsBindingReference} {
			watches = append(watches, function.Watch{Kind: k, Reconciler: reconciler, LabelSelector: label, Predicate: ReferencedByBinding, Map: MapToProject})
		}
	}
	return watches
}

// CreatedDeletedOrSpecChanged is Gardener's predicate on Shoots and BackupEntries (creates,
// deletes and generation changes) on the event alone. Knative's update events carry only the new
// object, so a generation change is recognised the way the object's own controller sees it:
// metadata.generation differs from status.observedGeneration until gardenlet has observed the new
// specification. A new object has no observed generation yet, so its create passes too.
//
// Gardener also drops creates of objects older than an hour, which its informers replay on every
// restart. Knative's source replays nothing (its store ignores the initial list), so every add it
// sends is a real create.
func CreatedDeletedOrSpecChanged(ev function.Event) bool {
	if ev.Deleted || ev.Object == nil {
		return true
	}
	return ev.SpecUnobserved()
}

// ReferencedByBinding is Gardener's predicate on Secrets, InternalSecrets and Quotas: every
// change to one that a SecretBinding or CredentialsBinding references (it carries the binding
// controllers' reference label). Knative's update events carry only the new object, so an update
// that removes the label is not seen; Gardener also looks at the old object.
func ReferencedByBinding(ev function.Event) bool {
	if ev.Object == nil {
		return true
	}
	labels := ev.Object.GetLabels()
	_, bySecretBinding := labels[v1beta1constants.LabelSecretBindingReference]
	_, byCredentialsBinding := labels[v1beta1constants.LabelCredentialsBindingReference]
	return bySecretBinding || byCredentialsBinding
}

// MapToProject maps an event to the Project of the object's namespace, named by the namespace's
// project.gardener.cloud/name label (which the Main reconciler sets, and requires of a namespace
// it adopts): one metadata-only GET. Namespaces of no Project map to nothing.
func MapToProject(ctx context.Context, reader client.Reader, ev function.Event) ([]function.Key, error) {
	if ev.Key.Namespace == "" {
		return nil, nil
	}
	namespace := &metav1.PartialObjectMetadata{}
	namespace.SetGroupVersionKind(kinds.Namespace.GroupVersionKind)
	if err := reader.Get(ctx, client.ObjectKey{Name: ev.Key.Namespace}, namespace); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	project := namespace.Labels[v1beta1constants.ProjectName]
	if project == "" {
		return nil, nil
	}
	return []function.Key{{Name: project}}, nil
}

// Reconciler records activity on a Project.
type Reconciler struct {
	Writer function.Writer
	Clock  clock.PassiveClock
	Log    *slog.Logger
}

var _ function.Handler = &Reconciler{}

// New builds the Activity reconciler.
func New(deps function.Deps) (*Reconciler, error) {
	return &Reconciler{Writer: deps.Source.Writer, Clock: deps.Clock, Log: deps.Log}, nil
}

// Reconcile sets status.lastActivityTimestamp to now (to the second, as the API stores it: a
// second event within the same second writes nothing).
func (r *Reconciler) Reconcile(ctx context.Context, req function.Request) error {
	project := &gardencorev1beta1.Project{}
	if err := req.Reader.Get(ctx, req.Key, project); err != nil {
		return client.IgnoreNotFound(err)
	}
	now := metav1.NewTime(r.Clock.Now()).Rfc3339Copy()
	changed, err := r.Writer.PatchStatus(ctx, project, func() { project.Status.LastActivityTimestamp = &now })
	if changed && err == nil {
		r.Log.Debug("Recorded activity on Project", "project", project.Name, "lastActivityTimestamp", now)
	}
	return err
}
