package seed

import (
	"context"
	"slices"

	"github.com/gardener/gardener/pkg/apis/core"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// Watches feed the reconciler with seed keys. Knative's update events carry the new object
// only, so Gardener's "this field changed" predicates become "a change may be unobserved"
// predicates (see the docs); the sweep catches what they let pass unnoticed.
var Watches = []function.Watch{
	{Kind: kinds.Seed, Reconciler: ReconcilerName, Predicate: SeedPredicate, Changes: function.Changes{function.ChangedMetadata, function.ChangedSpec}},
	// A change of a registration or deployment lists the whole garden (AllSeeds): only their
	// specs (all but metadata and status) can change what a seed needs; the function's own
	// finalizer patches of every registration must not each load the garden again (at 1,000
	// Shoots, 20 such loads at once were over the function's memory limit: docs/testing.md).
	{Kind: kinds.ControllerRegistration, Reconciler: AllSeedsReconcilerName, Predicate: NotDeleted, Changes: function.Changes{function.ChangedSpec}},
	{Kind: kinds.ControllerDeployment, Reconciler: AllSeedsReconcilerName, Predicate: NotDeleted, Map: MapControllerDeploymentToRegistration, Changes: function.Changes{function.ChangedSpec}},
	{Kind: kinds.BackupBucket, Reconciler: ReconcilerName, Predicate: SpecUnobserved, Map: MapToSpecSeed, Changes: function.Changes{function.ChangedSpec}},
	{Kind: kinds.BackupEntry, Reconciler: ReconcilerName, Predicate: SpecUnobserved, Map: MapToSpecSeed, Changes: function.Changes{function.ChangedSpec}},
	{Kind: kinds.Shoot, Reconciler: ReconcilerName, Predicate: SpecUnobserved, Map: MapShootToSeeds, Changes: function.Changes{function.ChangedSpec, function.StatusField("seedName")}},
	{Kind: kinds.ControllerInstallation, Reconciler: ReconcilerName, Predicate: ControllerInstallationPredicate, Map: MapControllerInstallationToSeed, Changes: function.Changes{function.StatusField("conditions")}},
}

// SweepName names the main reconciler's sweep.
const SweepName = "seeds"

// Index functions of the sweep's snapshot: the field selectors Read lists with.
var (
	indexSpecSeedName = func(obj client.Object) []string {
		switch o := obj.(type) {
		case *gardencorev1beta1.Shoot:
			return values(o.Spec.SeedName)
		case *gardencorev1beta1.BackupBucket:
			return values(o.Spec.SeedName)
		case *gardencorev1beta1.BackupEntry:
			return values(o.Spec.SeedName)
		}
		return nil
	}
	indexStatusSeedName = func(obj client.Object) []string {
		if shoot, ok := obj.(*gardencorev1beta1.Shoot); ok {
			return values(shoot.Status.SeedName)
		}
		return nil
	}
	indexSeedRefName = func(obj client.Object) []string {
		if ci, ok := obj.(*gardencorev1beta1.ControllerInstallation); ok && ci.Spec.SeedRef != nil {
			return []string{ci.Spec.SeedRef.Name}
		}
		return nil
	}
)

func values(s *string) []string {
	if s == nil {
		return nil
	}
	return []string{*s}
}

// Sweep revisits every Seed with one LIST (per page) of each kind Read reads: the seeds'
// reconciles answer their field-selected LISTs from the indexed snapshot, so the sweep costs
// the same number of LISTs for one seed as for a hundred.
var Sweep = function.Sweep{
	Name: SweepName, Schedule: "*/10 * * * *", Reconciler: ReconcilerName,
	Primary: function.List{Kind: kinds.Seed},
	Related: []function.List{
		{Kind: kinds.ControllerRegistration},
		{Kind: kinds.ControllerDeployment},
		{Kind: kinds.ControllerInstallation, Indexes: map[string]function.IndexFunc{core.SeedRefName: indexSeedRefName}},
		{Kind: kinds.BackupBucket, Indexes: map[string]function.IndexFunc{core.BackupBucketSeedName: indexSpecSeedName}},
		{Kind: kinds.BackupEntry, Indexes: map[string]function.IndexFunc{core.BackupEntrySeedName: indexSpecSeedName}},
		{Kind: kinds.Shoot, Indexes: map[string]function.IndexFunc{core.ShootSeedName: indexSpecSeedName, core.ShootStatusSeedName: indexStatusSeedName}},
		// Only the domain Secrets, metadata-only: their annotations are all that is read.
		{Kind: kinds.Secret, MetadataOnly: true, LabelSelector: DomainSecretSelector},
	},
}

// RBAC is what the main reconciler reads and writes.
var RBAC = []rbacv1.PolicyRule{
	{APIGroups: []string{gardencorev1beta1.GroupName}, Resources: []string{"seeds", "controllerregistrations", "controllerdeployments", "backupbuckets"}, Verbs: []string{"get", "list"}},
	{APIGroups: []string{gardencorev1beta1.GroupName}, Resources: []string{"backupentries", "shoots"}, Verbs: []string{"list"}},
	{APIGroups: []string{gardencorev1beta1.GroupName}, Resources: []string{"controllerinstallations"}, Verbs: []string{"get", "list", "create", "patch", "delete"}},
	{APIGroups: []string{corev1.GroupName}, Resources: []string{"secrets"}, Verbs: []string{"list"}},
}

// SeedPredicate passes a Seed's creation, its deletion timestamp, and its updates while
// gardenlet has not yet observed its generation (a spec change). Gardener passes changes of the
// spec, labels or annotations; an update event does not say which changed, and passing every
// update would reconcile the seed on each of gardenlet's status updates, each writing the
// seed's new resourceVersion into all its installations (which makes gardenlet deploy them
// again). Label changes (seed selectors) are the sweep's to find.
func SeedPredicate(ev function.Event) bool {
	if ev.Deleted {
		return false
	}
	return ev.Created || ev.Object == nil || ev.Object.GetDeletionTimestamp() != nil || SpecUnobserved(ev)
}

// NotDeleted passes creations and updates: Gardener watches ControllerRegistrations and
// ControllerDeployments for those (a deleted one has no installations left to manage). An
// update does not say what changed, so the function's own finalizer patch passes too.
func NotDeleted(ev function.Event) bool { return !ev.Deleted }

// SpecUnobserved passes the creation and deletion of a Shoot, BackupBucket or BackupEntry, and
// its updates while its generation is not yet observed by gardenlet: a spec change (seed,
// provider, workers, extensions, DNS, networking, bucket) raises the generation, and gardenlet
// observes it when it starts reconciling, so only the updates right after a spec change pass
// and the many status-only updates cost nothing.
func SpecUnobserved(ev function.Event) bool {
	if ev.Created || ev.Deleted || ev.Object == nil {
		return true
	}
	observed, _, _ := unstructured.NestedInt64(ev.Object.Object, "status", "observedGeneration")
	return ev.Object.GetGeneration() != observed
}

// ControllerInstallationPredicate passes the creation of installations someone else created
// (Gardener passes every creation: an unwanted one is deleted), deletions (one may unblock a
// pending re-creation), and updates whose Required condition is False: Gardener reacts when
// Required flips, and only a flip to False can make an installation deletable. The creations
// of this function's own installations, recognised by their name, need nothing.
func ControllerInstallationPredicate(ev function.Event) bool {
	if ev.Deleted || ev.Object == nil {
		return true
	}
	if ev.Created {
		registration := nestedString(ev.Object, "spec", "registrationRef", "name")
		seed := nestedString(ev.Object, "spec", "seedRef", "name")
		return !slices.Contains(InstallationNames(registration, seed), ev.Object.GetName())
	}
	conditions, _, _ := unstructured.NestedSlice(ev.Object.Object, "status", "conditions")
	for _, c := range conditions {
		condition, ok := c.(map[string]any)
		if ok && condition["type"] == string(gardencorev1beta1.ControllerInstallationRequired) {
			return condition["status"] == string(gardencorev1beta1.ConditionFalse)
		}
	}
	return false
}

// MapControllerDeploymentToRegistration maps a ControllerDeployment's event to one
// ControllerRegistration that references it (the first by name), none when none does: the
// all-seeds reconcile converges every seed whichever registration it is for.
func MapControllerDeploymentToRegistration(ctx context.Context, reader client.Reader, ev function.Event) ([]function.Key, error) {
	registrations := &gardencorev1beta1.ControllerRegistrationList{}
	if err := reader.List(ctx, registrations); err != nil {
		return nil, err
	}
	var first string
	for _, r := range registrations.Items {
		if r.Spec.Deployment == nil || (first != "" && r.Name > first) {
			continue
		}
		for _, ref := range r.Spec.Deployment.DeploymentRefs {
			if ref.Name == ev.Key.Name {
				first = r.Name
			}
		}
	}
	if first == "" {
		return nil, nil
	}
	return []function.Key{{Name: first}}, nil
}

// MapToSpecSeed maps a BackupBucket's or BackupEntry's event to the seed in its spec.seedName.
func MapToSpecSeed(_ context.Context, _ client.Reader, ev function.Event) ([]function.Key, error) {
	if ev.Object == nil {
		return nil, nil
	}
	return seedKeys(nestedString(ev.Object, "spec", "seedName")), nil
}

// MapShootToSeeds maps a Shoot's event to the seeds in its spec.seedName and status.seedName:
// both count it.
func MapShootToSeeds(_ context.Context, _ client.Reader, ev function.Event) ([]function.Key, error) {
	if ev.Object == nil {
		return nil, nil
	}
	return seedKeys(nestedString(ev.Object, "spec", "seedName"), nestedString(ev.Object, "status", "seedName")), nil
}

// MapControllerInstallationToSeed maps an installation's event to the seed in spec.seedRef.
func MapControllerInstallationToSeed(_ context.Context, _ client.Reader, ev function.Event) ([]function.Key, error) {
	if ev.Object == nil {
		return nil, nil
	}
	return seedKeys(nestedString(ev.Object, "spec", "seedRef", "name")), nil
}

func nestedString(u *unstructured.Unstructured, fields ...string) string {
	s, _, _ := unstructured.NestedString(u.Object, fields...)
	return s
}

func seedKeys(names ...string) []function.Key {
	var keys []function.Key
	for _, name := range names {
		if name != "" && (len(keys) == 0 || keys[0].Name != name) {
			keys = append(keys, function.Key{Name: name})
		}
	}
	return keys
}
