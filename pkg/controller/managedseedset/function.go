package managedseedset

import (
	"context"
	"fmt"

	cmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/controllermanager/v1alpha1"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	seedmanagementv1alpha1 "github.com/gardener/gardener/pkg/apis/seedmanagement/v1alpha1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// DefaultMaxShootRetries is Gardener's default of controllers.managedSeedSet.maxShootRetries.
const DefaultMaxShootRetries = 3

// Config is the managedseedset function's configuration.
type Config struct {
	// MaxShootRetries is how often a failed replica Shoot is retried before the set gives up on
	// it. MANAGEDSEEDSET_MAX_SHOOT_RETRIES wins over controllers.managedSeedSet.maxShootRetries
	// (Gardener's default 3).
	MaxShootRetries int `envconfig:"MANAGEDSEEDSET_MAX_SHOOT_RETRIES"`
}

// FromControllerManager takes controllers.managedSeedSet.maxShootRetries.
func (c *Config) FromControllerManager(cm *cmv1alpha1.ControllerManagerConfiguration) {
	c.MaxShootRetries = DefaultMaxShootRetries
	if cm.Controllers.ManagedSeedSet != nil && cm.Controllers.ManagedSeedSet.MaxShootRetries != nil {
		c.MaxShootRetries = *cm.Controllers.ManagedSeedSet.MaxShootRetries
	}
}

// ResyncSweep is the sweep that reconciles every set.
const ResyncSweep = "resync"

var (
	seedManagementGroup = seedmanagementv1alpha1.SchemeGroupVersion.Group
	coreGroup           = gardencorev1beta1.SchemeGroupVersion.Group
)

// RBAC is what converging sets takes. Updating managedseedsets/finalizers is what a garden with
// kube-apiserver's OwnerReferencesPermissionEnforcement demands of whoever creates objects
// whose controller reference blocks the set's deletion (the replicas' Shoots and ManagedSeeds).
var RBAC = []rbacv1.PolicyRule{
	{APIGroups: []string{seedManagementGroup}, Resources: []string{"managedseedsets"}, Verbs: []string{"get", "list", "patch"}},
	{APIGroups: []string{seedManagementGroup}, Resources: []string{"managedseedsets/status"}, Verbs: []string{"patch"}},
	{APIGroups: []string{seedManagementGroup}, Resources: []string{"managedseedsets/finalizers"}, Verbs: []string{"update"}},
	{APIGroups: []string{seedManagementGroup}, Resources: []string{"managedseeds"}, Verbs: []string{"get", "list", "create", "delete"}},
	{APIGroups: []string{coreGroup}, Resources: []string{"shoots"}, Verbs: []string{"get", "list", "create", "patch", "delete"}},
	{APIGroups: []string{coreGroup}, Resources: []string{"seeds"}, Verbs: []string{"get", "list"}},
	function.EventsRBAC,
}

// Function is GCM's ManagedSeedSet controller.
var Function = &function.Function{
	Name:          "managedseedset",
	Parts:         []function.Part{function.Runtime},
	WorksOnGarden: true,
	Config:        &Config{},
	RBAC:          RBAC,
	Reconcilers: []function.Reconciler{{
		Name: "main",
		For:  kinds.ManagedSeedSet,
		New: func(deps function.Deps) (function.Handler, error) {
			cfg := deps.Config.(*Config)
			if cfg.MaxShootRetries < 0 {
				return nil, fmt.Errorf("maxShootRetries must not be negative, got %d", cfg.MaxShootRetries)
			}
			return &Reconciler{Writer: deps.Source.Writer, Events: deps.Events, Clock: deps.Clock, MaxShootRetries: cfg.MaxShootRetries, Log: deps.Log}, nil
		},
	}},
	Watches: []function.Watch{
		{Kind: kinds.ManagedSeedSet, Reconciler: "main", Predicate: SetPredicate},
		{Kind: kinds.Shoot, Reconciler: "main", Predicate: ControlledBySet, Map: MapShoot,
			Changes: function.Changes{function.ChangedMetadata, function.ChangedSpec, function.StatusField("observedGeneration"), function.StatusField("lastOperation")}},
		{Kind: kinds.ManagedSeed, Reconciler: "main", Predicate: ControlledBySet, Map: MapManagedSeed},
		{Kind: kinds.Seed, Reconciler: "main", Predicate: SeedPredicate, Map: MapSeed},
	},
	// Sets are few, and each reads its own replicas by its selector (three LISTs filtered on the
	// server), which costs less than listing every Shoot of the garden namespace and every Seed
	// in full each time. A tick every five minutes catches lost events; Gardener resyncs every
	// 30 minutes (syncPeriod).
	Sweeps: []function.Sweep{{
		Name: ResyncSweep, Schedule: "4-59/5 * * * *", Reconciler: "main",
		Primary: function.List{Kind: kinds.ManagedSeedSet},
	}},
}

// SetPredicate is Gardener's GenerationChangedPredicate, on the event alone: a set's creation,
// a spec the controller has not observed yet, or a set being deleted. Status updates (the
// controller's own) pass only while it is deleted.
func SetPredicate(ev function.Event) bool {
	if ev.Deleted {
		return false
	}
	if ev.Created || ev.Object == nil || ev.Object.GetDeletionTimestamp() != nil {
		return true
	}
	return ev.SpecUnobserved()
}

// ControlledBySet lets through events of objects a ManagedSeedSet controls.
func ControlledBySet(ev function.Event) bool {
	if ev.Object == nil {
		return true
	}
	_, ok := controllingSet(ev.Object.GetOwnerReferences())
	return ok
}

// SeedPredicate drops Seed deletions (Gardener's filter never passes them); other Seed events
// are mapped through the ManagedSeed of the Seed's name.
func SeedPredicate(ev function.Event) bool { return !ev.Deleted }

func controllingSet(refs []metav1.OwnerReference) (string, bool) {
	for _, ref := range refs {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err == nil && gv.Group == seedManagementGroup && ref.Kind == "ManagedSeedSet" && ref.Controller != nil && *ref.Controller {
			return ref.Name, true
		}
	}
	return "", false
}

// MapShoot maps an event of a set's Shoot to the set when ShootEventMatters.
func MapShoot(ctx context.Context, reader client.Reader, ev function.Event) ([]function.Key, error) {
	shoot := &gardencorev1beta1.Shoot{}
	return mapOwned(ctx, reader, ev, shoot, func(set *seedmanagementv1alpha1.ManagedSeedSet) bool {
		return ShootEventMatters(set, shoot, ev.Deleted)
	})
}

// MapManagedSeed maps an event of a set's ManagedSeed to the set when ManagedSeedEventMatters.
func MapManagedSeed(ctx context.Context, reader client.Reader, ev function.Event) ([]function.Key, error) {
	ms := &seedmanagementv1alpha1.ManagedSeed{}
	return mapOwned(ctx, reader, ev, ms, func(set *seedmanagementv1alpha1.ManagedSeedSet) bool {
		return ManagedSeedEventMatters(set, ms, ev.Deleted)
	})
}

// mapOwned reads the set that controls the event's object (decoded into obj) and maps to it
// when matters says so. An event without content (never sent for these kinds) is mapped by a
// live read of the object.
func mapOwned(ctx context.Context, reader client.Reader, ev function.Event, obj client.Object, matters func(*seedmanagementv1alpha1.ManagedSeedSet) bool) ([]function.Key, error) {
	if ev.Object != nil {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(ev.Object.Object, obj); err != nil {
			return nil, function.Terminal(fmt.Errorf("decoding %s %s: %w", ev.Kind.Kind, ev.Key, err))
		}
	} else if err := reader.Get(ctx, ev.Key, obj); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	name, ok := controllingSet(obj.GetOwnerReferences())
	if !ok {
		return nil, nil
	}
	key := function.Key{Namespace: obj.GetNamespace(), Name: name}
	set := &seedmanagementv1alpha1.ManagedSeedSet{}
	if err := reader.Get(ctx, key, set); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if !matters(set) {
		return nil, nil
	}
	return []function.Key{key}, nil
}

// MapSeed maps a Seed's event to the set controlling the ManagedSeed of the Seed's name in the
// garden namespace (where ManagedSeeds live), when SeedEventMatters.
func MapSeed(ctx context.Context, reader client.Reader, ev function.Event) ([]function.Key, error) {
	seed := &gardencorev1beta1.Seed{}
	if ev.Object != nil {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(ev.Object.Object, seed); err != nil {
			return nil, function.Terminal(fmt.Errorf("decoding Seed %s: %w", ev.Key.Name, err))
		}
	} else if err := reader.Get(ctx, ev.Key, seed); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	ms := &metav1.PartialObjectMetadata{}
	ms.SetGroupVersionKind(seedmanagementv1alpha1.SchemeGroupVersion.WithKind("ManagedSeed"))
	if err := reader.Get(ctx, function.Key{Namespace: v1beta1constants.GardenNamespace, Name: seed.Name}, ms); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	name, ok := controllingSet(ms.OwnerReferences)
	if !ok {
		return nil, nil
	}
	key := function.Key{Namespace: ms.Namespace, Name: name}
	set := &seedmanagementv1alpha1.ManagedSeedSet{}
	if err := reader.Get(ctx, key, set); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if !SeedEventMatters(set, seed) {
		return nil, nil
	}
	return []function.Key{key}, nil
}

// ShootEventMatters is Gardener's Shoot predicate without the old object: the event of the
// pending replica's Shoot that progressed from what it is pending for (or whose deletion it
// waits for), and, since an update event carries only the new Shoot, instead of "its deletion
// or health changed": a Shoot being deleted, or whose health may disagree with the set's count
// of ready replicas.
func ShootEventMatters(set *seedmanagementv1alpha1.ManagedSeedSet, shoot *gardencorev1beta1.Shoot, deleted bool) bool {
	if p := set.Status.PendingReplica; p != nil && p.Name == shoot.Name {
		if deleted && p.Reason == seedmanagementv1alpha1.ShootDeletingReason {
			return true
		}
		switch p.Reason {
		case seedmanagementv1alpha1.ShootReconcilingReason:
			if ShootReconcileFailed(shoot) || ShootReconcileSucceeded(shoot) || shoot.DeletionTimestamp != nil {
				return true
			}
		case seedmanagementv1alpha1.ShootDeletingReason:
			if ShootDeleteFailed(shoot) {
				return true
			}
		case seedmanagementv1alpha1.ShootReconcileFailedReason:
			if !ShootReconcileFailed(shoot) {
				return true
			}
		case seedmanagementv1alpha1.ShootDeleteFailedReason:
			if !ShootDeleteFailed(shoot) {
				return true
			}
		case seedmanagementv1alpha1.ShootNotHealthyReason:
			if HealthOf(shoot) == ShootHealthy {
				return true
			}
		}
	}
	if deleted {
		return false
	}
	return shoot.DeletionTimestamp != nil || readinessMayDisagree(set, HealthOf(shoot) == ShootHealthy)
}

// ManagedSeedEventMatters is Gardener's ManagedSeed predicate without the old object: the
// pending replica's ManagedSeed registered or being deleted, its deletion when the set waits
// for it, and (instead of "its deletion started") any ManagedSeed being deleted.
func ManagedSeedEventMatters(set *seedmanagementv1alpha1.ManagedSeedSet, ms *seedmanagementv1alpha1.ManagedSeed, deleted bool) bool {
	if p := set.Status.PendingReplica; p != nil && p.Name == ms.Name {
		if deleted && p.Reason == seedmanagementv1alpha1.ManagedSeedDeletingReason {
			return true
		}
		if p.Reason == seedmanagementv1alpha1.ManagedSeedPreparingReason && (ManagedSeedRegistered(ms) || ms.DeletionTimestamp != nil) {
			return true
		}
	}
	return !deleted && ms.DeletionTimestamp != nil
}

// SeedEventMatters is Gardener's Seed predicate without the old object: the pending replica's
// Seed became ready, and (instead of "its readiness changed") a Seed whose readiness may
// disagree with the set's count of ready replicas.
func SeedEventMatters(set *seedmanagementv1alpha1.ManagedSeedSet, seed *gardencorev1beta1.Seed) bool {
	if p := set.Status.PendingReplica; p != nil && p.Name == seed.Name && p.Reason == seedmanagementv1alpha1.SeedNotReadyReason && SeedReady(seed) {
		return true
	}
	return readinessMayDisagree(set, SeedReady(seed))
}

// readinessMayDisagree says whether a replica's part that is (or is not) ok may have changed
// what the set counts: not ok while the set counts every replica ready, or ok while it counts
// some not ready.
func readinessMayDisagree(set *seedmanagementv1alpha1.ManagedSeedSet, ok bool) bool {
	allReady := set.Status.ReadyReplicas == set.Status.Replicas
	return ok != allReady
}
