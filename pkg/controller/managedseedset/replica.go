// Package managedseedset keeps a ManagedSeedSet's replicas (a Shoot, the ManagedSeed on it and
// the Seed that registers) at the set's replica count, one replica at a time (GCM's
// ManagedSeedSet controller): Decide is Gardener's actuator as a pure function of the set and its
// replicas; the Reconciler reads them live, makes the one write Decide plans and records the
// set's status.
package managedseedset

import (
	"regexp"
	"strconv"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	seedmanagementv1alpha1 "github.com/gardener/gardener/pkg/apis/seedmanagement/v1alpha1"
	seedmanagementconstants "github.com/gardener/gardener/pkg/apis/seedmanagement/v1alpha1/constants"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ReplicaStatus is how far a replica has come. Creation goes ShootReconciling → ShootReconciled →
// ManagedSeedPreparing → ManagedSeedRegistered, deletion ManagedSeedRegistered →
// ManagedSeedDeleting → ShootReconciled → ShootDeleting → gone; a failed Shoot is
// ShootReconcileFailed or ShootDeleteFailed until retried. The order is Gardener's: a "less
// advanced" status is a lower value, and scale-in deletes the least advanced replica first.
type ReplicaStatus int

// The replica statuses, in Gardener's order.
const (
	StatusUnknown ReplicaStatus = iota
	StatusShootReconcileFailed
	StatusShootDeleteFailed
	StatusShootReconciling
	StatusShootDeleting
	StatusShootReconciled
	StatusManagedSeedPreparing
	StatusManagedSeedDeleting
	StatusManagedSeedRegistered
)

func (s ReplicaStatus) String() string {
	switch s {
	case StatusShootReconcileFailed:
		return "ShootReconcileFailed"
	case StatusShootDeleteFailed:
		return "ShootDeleteFailed"
	case StatusShootReconciling:
		return "ShootReconciling"
	case StatusShootDeleting:
		return "ShootDeleting"
	case StatusShootReconciled:
		return "ShootReconciled"
	case StatusManagedSeedPreparing:
		return "ManagedSeedPreparing"
	case StatusManagedSeedDeleting:
		return "ManagedSeedDeleting"
	case StatusManagedSeedRegistered:
		return "ManagedSeedRegistered"
	}
	return "Unknown"
}

// ShootHealth is the value of a Shoot's shoot.gardener.cloud/status label.
type ShootHealth string

// The Shoot health statuses.
const (
	ShootHealthy     ShootHealth = "healthy"
	ShootProgressing ShootHealth = "progressing"
	ShootUnknown     ShootHealth = "unknown"
	ShootUnhealthy   ShootHealth = "unhealthy"
)

// value orders health from worst to best, as Gardener does. Gardener panics on a label value it
// does not know; here such a value counts as unknown.
func (h ShootHealth) value() int {
	switch h {
	case ShootHealthy:
		return 3
	case ShootProgressing:
		return 2
	case ShootUnhealthy:
		return 0
	}
	return 1
}

// Replica is one replica of a set: its Shoot (always), the ManagedSeed on it and the Seed it
// registered, when they exist.
type Replica struct {
	Shoot       *gardencorev1beta1.Shoot
	ManagedSeed *seedmanagementv1alpha1.ManagedSeed
	Seed        *gardencorev1beta1.Seed
	// HasScheduledShoots says that Shoots run on the replica's Seed: it cannot be deleted.
	HasScheduledShoots bool
}

// Name is the replica's name: that of its Shoot, ManagedSeed and Seed.
func (r *Replica) Name() string { return r.Shoot.Name }

// Key is the replica's Shoot's (and ManagedSeed's) namespace and name.
func (r *Replica) Key() client.ObjectKey { return client.ObjectKeyFromObject(r.Shoot) }

// Ordinal is the number the replica's name ends in, or -1 when the set did not create it.
func (r *Replica) Ordinal() int32 { return ordinalOf(r.Shoot.Name) }

// Status is how far the replica has come: from its Shoot while it has no ManagedSeed, from the
// ManagedSeed once it has one.
func (r *Replica) Status() ReplicaStatus {
	if r.Shoot == nil {
		return StatusUnknown
	}
	if r.ManagedSeed == nil {
		switch {
		case ShootReconcileSucceeded(r.Shoot):
			return StatusShootReconciled
		case ShootReconcileFailed(r.Shoot):
			return StatusShootReconcileFailed
		case ShootDeleteFailed(r.Shoot):
			return StatusShootDeleteFailed
		case r.Shoot.DeletionTimestamp == nil:
			return StatusShootReconciling
		default:
			return StatusShootDeleting
		}
	}
	switch {
	case ManagedSeedRegistered(r.ManagedSeed):
		return StatusManagedSeedRegistered
	case r.ManagedSeed.DeletionTimestamp == nil:
		return StatusManagedSeedPreparing
	default:
		return StatusManagedSeedDeleting
	}
}

// SeedReady says whether the replica's Seed exists and is ready.
func (r *Replica) SeedReady() bool { return r.Seed != nil && SeedReady(r.Seed) }

// ShootHealth is the replica's Shoot's health.
func (r *Replica) ShootHealth() ShootHealth {
	if r.Shoot == nil {
		return ShootUnhealthy
	}
	return HealthOf(r.Shoot)
}

// Ready says whether the replica is complete: its ManagedSeed registered, its Seed ready and its
// Shoot healthy.
func (r *Replica) Ready() bool {
	return r.Status() == StatusManagedSeedRegistered && r.SeedReady() && r.ShootHealth() == ShootHealthy
}

// Deletable says whether scale-in may delete the replica: no Shoots run on its Seed, and
// neither its Shoot nor its ManagedSeed is annotated
// seedmanagement.gardener.cloud/protect-from-deletion=true.
func (r *Replica) Deletable() bool {
	protected := func(obj client.Object) bool {
		return obj.GetAnnotations()[seedmanagementconstants.AnnotationProtectFromDeletion] == "true"
	}
	return !r.HasScheduledShoots && !(r.Shoot != nil && protected(r.Shoot)) && !(r.ManagedSeed != nil && protected(r.ManagedSeed))
}

// managedSeedExists says whether a replica of status s has its ManagedSeed.
func managedSeedExists(s ReplicaStatus) bool { return s >= StatusManagedSeedPreparing }

// ShootReconcileSucceeded says the Shoot's latest spec was created or reconciled successfully.
func ShootReconcileSucceeded(shoot *gardencorev1beta1.Shoot) bool {
	return shootLastOperationIs(shoot, false, gardencorev1beta1.LastOperationStateSucceeded, gardencorev1beta1.LastOperationTypeCreate, gardencorev1beta1.LastOperationTypeReconcile)
}

// ShootReconcileFailed says the Shoot's latest spec failed to be created or reconciled.
func ShootReconcileFailed(shoot *gardencorev1beta1.Shoot) bool {
	return shootLastOperationIs(shoot, false, gardencorev1beta1.LastOperationStateFailed, gardencorev1beta1.LastOperationTypeCreate, gardencorev1beta1.LastOperationTypeReconcile)
}

// ShootDeleteFailed says the Shoot's deletion failed.
func ShootDeleteFailed(shoot *gardencorev1beta1.Shoot) bool {
	return shootLastOperationIs(shoot, true, gardencorev1beta1.LastOperationStateFailed, gardencorev1beta1.LastOperationTypeDelete)
}

func shootLastOperationIs(shoot *gardencorev1beta1.Shoot, deleting bool, state gardencorev1beta1.LastOperationState, types ...gardencorev1beta1.LastOperationType) bool {
	op := shoot.Status.LastOperation
	if shoot.Generation != shoot.Status.ObservedGeneration || (shoot.DeletionTimestamp != nil) != deleting || op == nil || op.State != state {
		return false
	}
	for _, t := range types {
		if op.Type == t {
			return true
		}
	}
	return false
}

// ManagedSeedRegistered says the ManagedSeed's latest spec registered its Seed.
func ManagedSeedRegistered(ms *seedmanagementv1alpha1.ManagedSeed) bool {
	c := condition(ms.Status.Conditions, seedmanagementv1alpha1.SeedRegistered)
	return ms.Generation == ms.Status.ObservedGeneration && ms.DeletionTimestamp == nil && c != nil && c.Status == gardencorev1beta1.ConditionTrue
}

// SeedReady says the Seed's latest spec is observed, its gardenlet is ready, its system
// components are healthy, and its backup buckets (if it reports on them) are ready.
func SeedReady(seed *gardencorev1beta1.Seed) bool {
	isTrue := func(t gardencorev1beta1.ConditionType, absentIsTrue bool) bool {
		c := condition(seed.Status.Conditions, t)
		if c == nil {
			return absentIsTrue
		}
		return c.Status == gardencorev1beta1.ConditionTrue
	}
	return seed.Generation == seed.Status.ObservedGeneration && seed.DeletionTimestamp == nil &&
		isTrue(gardencorev1beta1.GardenletReady, false) &&
		isTrue(gardencorev1beta1.SeedSystemComponentsHealthy, false) &&
		isTrue(gardencorev1beta1.SeedBackupBucketsReady, true)
}

// HealthOf is the Shoot's health label; a Shoot without it counts as progressing.
func HealthOf(shoot *gardencorev1beta1.Shoot) ShootHealth {
	if v, ok := shoot.Labels[v1beta1constants.ShootStatus]; ok {
		return ShootHealth(v)
	}
	return ShootProgressing
}

func condition(conditions []gardencorev1beta1.Condition, t gardencorev1beta1.ConditionType) *gardencorev1beta1.Condition {
	for i := range conditions {
		if conditions[i].Type == t {
			return &conditions[i]
		}
	}
	return nil
}

// ordinalPattern extracts the ordinal from a replica's name.
var ordinalPattern = regexp.MustCompile(".*-([0-9]+)$")

func ordinalOf(name string) int32 {
	m := ordinalPattern.FindStringSubmatch(name)
	if len(m) < 2 {
		return -1
	}
	n, err := strconv.ParseInt(m[1], 10, 32)
	if err != nil {
		return -1
	}
	return int32(n)
}
