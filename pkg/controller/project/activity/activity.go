// Package activity is the "Activity" reconciler of GCM's Project controller: activity on the
// objects that keep a Project in use (Shoots, BackupEntries, and the Secrets, InternalSecrets
// and Quotas that bindings reference) sets the Project's status.lastActivityTimestamp, so that a
// Project whose objects come and go between two stale sweeps is not taken for unused.
//
// Gardener's reconciler acts on events only. Ours also sweeps, because events get lost: the sweep
// records the latest activity that the objects still show (Evidence), where no event recorded it.
package activity

import (
	"context"
	"log/slog"
	"time"

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
// Project, the Project read, and the status patch; and its sweep's lists (Related).
var RBAC = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get"}},
	{APIGroups: []string{gardencorev1beta1.GroupName}, Resources: []string{"projects"}, Verbs: []string{"get", "list"}},
	{APIGroups: []string{gardencorev1beta1.GroupName}, Resources: []string{"projects/status"}, Verbs: []string{"patch"}},
	{APIGroups: []string{gardencorev1beta1.GroupName}, Resources: []string{"shoots", "backupentries", "quotas"}, Verbs: []string{"list"}},
}

// Related are the lists the activity sweep reads once per run: the kinds whose activity the
// objects themselves can still show. Each object is held only as far as Evidence reads it.
//
// Secrets and InternalSecrets are not among them. Only those a binding references count, and one
// LIST cannot select "either of two labels"; listing every Secret of the garden, even as metadata,
// would cost what the whole sweep is meant to save. Their lost events stay lost (as in Gardener).
var Related = []function.List{
	{Kind: kinds.Shoot, Project: func(obj client.Object) client.Object {
		shoot := obj.(*gardencorev1beta1.Shoot)
		return &gardencorev1beta1.Shoot{ObjectMeta: evidenceMeta(shoot), Status: gardencorev1beta1.ShootStatus{ObservedGeneration: shoot.Status.ObservedGeneration}}
	}},
	{Kind: kinds.BackupEntry, Project: func(obj client.Object) client.Object {
		entry := obj.(*gardencorev1beta1.BackupEntry)
		return &gardencorev1beta1.BackupEntry{ObjectMeta: evidenceMeta(entry), Status: gardencorev1beta1.BackupEntryStatus{ObservedGeneration: entry.Status.ObservedGeneration}}
	}},
	{Kind: kinds.Quota, Project: func(obj client.Object) client.Object {
		meta := evidenceMeta(obj)
		meta.Labels = map[string]string{}
		for _, label := range []string{v1beta1constants.LabelSecretBindingReference, v1beta1constants.LabelCredentialsBindingReference} {
			if value, ok := obj.GetLabels()[label]; ok {
				meta.Labels[label] = value
			}
		}
		return &gardencorev1beta1.Quota{ObjectMeta: meta}
	}},
}

// evidenceMeta is what Evidence reads of an object's metadata: the times of its managedFields,
// not their fields.
func evidenceMeta(obj client.Object) metav1.ObjectMeta {
	meta := metav1.ObjectMeta{Namespace: obj.GetNamespace(), Name: obj.GetName(), Generation: obj.GetGeneration(),
		CreationTimestamp: obj.GetCreationTimestamp(), DeletionTimestamp: obj.GetDeletionTimestamp()}
	for _, entry := range obj.GetManagedFields() {
		meta.ManagedFields = append(meta.ManagedFields, metav1.ManagedFieldsEntry{Time: entry.Time})
	}
	return meta
}

// Watches feed the reconciler named reconciler with the events that count as activity.
func Watches(reconciler string) []function.Watch {
	watches := []function.Watch{
		{Kind: kinds.Shoot, Reconciler: reconciler, Predicate: CreatedDeletedOrSpecChanged, Map: MapToProject, Changes: function.Changes{function.ChangedSpec}},
		{Kind: kinds.BackupEntry, Reconciler: reconciler, Predicate: CreatedDeletedOrSpecChanged, Map: MapToProject, Changes: function.Changes{function.ChangedSpec}},
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
// restart. Our cluster source replays nothing (it lists at most one object to begin, and sends no
// event for what changed while its watch's place was gone), so every add it sends is a real
// create.
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
	return referencedByBinding(ev.Object.GetLabels())
}

func referencedByBinding(labels map[string]string) bool {
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

// Reconcile records activity: for an event, status.lastActivityTimestamp becomes now (to the
// second, as the API stores it: a second event within the same second writes nothing); in the
// sweep, it becomes the latest activity the Project's objects show, where that is later than the
// one recorded (Unrecorded).
func (r *Reconciler) Reconcile(ctx context.Context, req function.Request) error {
	project := &gardencorev1beta1.Project{}
	if err := req.Reader.Get(ctx, req.Key, project); err != nil {
		return client.IgnoreNotFound(err)
	}
	now := metav1.NewTime(r.Clock.Now()).Rfc3339Copy()
	last := now
	if req.Sweep != "" {
		evidence, err := r.evidence(ctx, req.Reader, project)
		if err != nil {
			return err
		}
		unrecorded, ok := Unrecorded(project, evidence, now.Time)
		if !ok {
			return nil
		}
		last = metav1.NewTime(unrecorded)
	}
	changed, err := r.Writer.PatchStatus(ctx, project, func() { project.Status.LastActivityTimestamp = &last })
	if changed && err == nil {
		r.Log.Debug("Recorded activity on Project", "project", project.Name, "lastActivityTimestamp", last, "sweep", req.Sweep)
	}
	return err
}

// evidence is the latest activity the objects in the Project's namespace show, read from the
// sweep's lists.
func (r *Reconciler) evidence(ctx context.Context, reader client.Reader, project *gardencorev1beta1.Project) (time.Time, error) {
	var latest time.Time
	if project.Spec.Namespace == nil {
		return latest, nil
	}
	inNamespace := client.InNamespace(*project.Spec.Namespace)
	shoots, entries, quotas := &gardencorev1beta1.ShootList{}, &gardencorev1beta1.BackupEntryList{}, &gardencorev1beta1.QuotaList{}
	for _, list := range []client.ObjectList{shoots, entries, quotas} {
		if err := reader.List(ctx, list, inNamespace); err != nil {
			return latest, err
		}
	}
	later := func(t time.Time) {
		if t.After(latest) {
			latest = t
		}
	}
	for i := range shoots.Items {
		later(Evidence(&shoots.Items[i], shoots.Items[i].Generation != shoots.Items[i].Status.ObservedGeneration))
	}
	for i := range entries.Items {
		later(Evidence(&entries.Items[i], entries.Items[i].Generation != entries.Items[i].Status.ObservedGeneration))
	}
	for i := range quotas.Items {
		later(Evidence(&quotas.Items[i], referencedByBinding(quotas.Items[i].Labels)))
	}
	return latest, nil
}

// Evidence is the latest moment at which the object, as it is now, shows that an event counting
// as activity happened: its creation, the start of its deletion and, where every change of it
// counts (everyChange: a Shoot or BackupEntry whose specification is not observed yet, a Quota a
// binding references), its latest change, the newest time in its managedFields. Zero if none.
// It is a lower bound: an object deleted outright, or a change that a later one superseded,
// leaves no trace.
func Evidence(obj client.Object, everyChange bool) time.Time {
	latest := obj.GetCreationTimestamp().Time
	if deletion := obj.GetDeletionTimestamp(); deletion != nil && deletion.After(latest) {
		latest = deletion.Time
	}
	if everyChange {
		for _, entry := range obj.GetManagedFields() {
			if entry.Time != nil && entry.Time.After(latest) {
				latest = entry.Time.Time
			}
		}
	}
	return latest
}

// Unrecorded is the activity a sweep records on a Project, given the latest evidence its objects
// show: only evidence not before the Project's creation (an event before it maps to no Project;
// within the same second, the order is unknown and the activity counts) and later than its
// recorded last activity (which an event set to the moment it was handled, at
// or after the change it saw), and never later than now (the API server's clock may run ahead).
func Unrecorded(project *gardencorev1beta1.Project, evidence, now time.Time) (time.Time, bool) {
	if evidence.IsZero() || evidence.Before(project.CreationTimestamp.Time) {
		return time.Time{}, false
	}
	if last := project.Status.LastActivityTimestamp; last != nil && !evidence.After(last.Time) {
		return time.Time{}, false
	}
	if evidence.After(now) {
		evidence = now
	}
	return evidence.Truncate(time.Second), true
}
