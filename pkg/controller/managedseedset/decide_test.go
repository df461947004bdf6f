package managedseedset

import (
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	seedmanagementv1alpha1 "github.com/gardener/gardener/pkg/apis/seedmanagement/v1alpha1"
	seedmanagementconstants "github.com/gardener/gardener/pkg/apis/seedmanagement/v1alpha1/constants"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var (
	now     = time.Date(2026, 2, 1, 10, 0, 0, 0, time.UTC)
	earlier = metav1.NewTime(now.Add(-time.Hour))
)

// replicaIn builds replica <set>-<ordinal> with the given status, seed readiness and shoot health.
func replicaIn(ordinal int32, status ReplicaStatus, seedReady bool, health ShootHealth) *Replica {
	name := ReplicaName(&seedmanagementv1alpha1.ManagedSeedSet{ObjectMeta: metav1.ObjectMeta{Name: "set"}}, ordinal)
	shoot := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "garden", Generation: 1, Labels: map[string]string{v1beta1constants.ShootStatus: string(health)}}}
	shoot.Status.ObservedGeneration = 1
	lastOp := func(t gardencorev1beta1.LastOperationType, s gardencorev1beta1.LastOperationState) {
		shoot.Status.LastOperation = &gardencorev1beta1.LastOperation{Type: t, State: s}
	}
	r := &Replica{Shoot: shoot}
	managedSeed := func() *seedmanagementv1alpha1.ManagedSeed {
		ms := &seedmanagementv1alpha1.ManagedSeed{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "garden", Generation: 1}}
		ms.Status.ObservedGeneration = 1
		return ms
	}
	switch status {
	case StatusShootReconcileFailed:
		lastOp(gardencorev1beta1.LastOperationTypeReconcile, gardencorev1beta1.LastOperationStateFailed)
	case StatusShootDeleteFailed:
		shoot.DeletionTimestamp = &earlier
		lastOp(gardencorev1beta1.LastOperationTypeDelete, gardencorev1beta1.LastOperationStateFailed)
	case StatusShootReconciling:
		lastOp(gardencorev1beta1.LastOperationTypeCreate, gardencorev1beta1.LastOperationStateProcessing)
	case StatusShootDeleting:
		shoot.DeletionTimestamp = &earlier
		lastOp(gardencorev1beta1.LastOperationTypeDelete, gardencorev1beta1.LastOperationStateProcessing)
	case StatusShootReconciled:
		lastOp(gardencorev1beta1.LastOperationTypeReconcile, gardencorev1beta1.LastOperationStateSucceeded)
	case StatusManagedSeedPreparing:
		lastOp(gardencorev1beta1.LastOperationTypeReconcile, gardencorev1beta1.LastOperationStateSucceeded)
		r.ManagedSeed = managedSeed()
	case StatusManagedSeedDeleting:
		lastOp(gardencorev1beta1.LastOperationTypeReconcile, gardencorev1beta1.LastOperationStateSucceeded)
		r.ManagedSeed = managedSeed()
		r.ManagedSeed.DeletionTimestamp = &earlier
	case StatusManagedSeedRegistered:
		lastOp(gardencorev1beta1.LastOperationTypeReconcile, gardencorev1beta1.LastOperationStateSucceeded)
		r.ManagedSeed = managedSeed()
		r.ManagedSeed.Status.Conditions = []gardencorev1beta1.Condition{{Type: seedmanagementv1alpha1.SeedRegistered, Status: gardencorev1beta1.ConditionTrue}}
	}
	if r.ManagedSeed != nil {
		seed := &gardencorev1beta1.Seed{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1}}
		seed.Status.ObservedGeneration = 1
		if seedReady {
			seed.Status.Conditions = []gardencorev1beta1.Condition{
				{Type: gardencorev1beta1.GardenletReady, Status: gardencorev1beta1.ConditionTrue},
				{Type: gardencorev1beta1.SeedSystemComponentsHealthy, Status: gardencorev1beta1.ConditionTrue},
			}
		}
		r.Seed = seed
	}
	return r
}

func ready(ordinal int32) *Replica {
	return replicaIn(ordinal, StatusManagedSeedRegistered, true, ShootHealthy)
}

func set(replicas int32, pending *seedmanagementv1alpha1.PendingReplica) *seedmanagementv1alpha1.ManagedSeedSet {
	s := &seedmanagementv1alpha1.ManagedSeedSet{ObjectMeta: metav1.ObjectMeta{Name: "set", Namespace: "garden", Generation: 2}}
	s.Spec.Replicas = &replicas
	s.Status.PendingReplica = pending
	return s
}

func pendingFor(name string, reason seedmanagementv1alpha1.PendingReplicaReason, retries *int32) *seedmanagementv1alpha1.PendingReplica {
	return &seedmanagementv1alpha1.PendingReplica{Name: name, Reason: reason, Since: earlier, Retries: retries}
}

func TestReplicaStatus(t *testing.T) {
	for _, s := range []ReplicaStatus{StatusShootReconcileFailed, StatusShootDeleteFailed, StatusShootReconciling, StatusShootDeleting, StatusShootReconciled, StatusManagedSeedPreparing, StatusManagedSeedDeleting, StatusManagedSeedRegistered} {
		t.Run(s.String(), func(t *testing.T) {
			assert.Equal(t, s, replicaIn(0, s, true, ShootHealthy).Status())
		})
	}
	t.Run("a Shoot whose latest spec is not observed is reconciling", func(t *testing.T) {
		r := replicaIn(0, StatusShootReconciled, true, ShootHealthy)
		r.Shoot.Generation = 2
		assert.Equal(t, StatusShootReconciling, r.Status())
	})
	t.Run("a Seed whose backup buckets are not ready is not ready", func(t *testing.T) {
		r := ready(0)
		r.Seed.Status.Conditions = append(r.Seed.Status.Conditions, gardencorev1beta1.Condition{Type: gardencorev1beta1.SeedBackupBucketsReady, Status: gardencorev1beta1.ConditionFalse})
		assert.False(t, r.SeedReady())
		assert.False(t, r.Ready())
	})
	t.Run("a Shoot without health label is progressing", func(t *testing.T) {
		r := ready(0)
		r.Shoot.Labels = nil
		assert.Equal(t, ShootProgressing, r.ShootHealth())
		assert.False(t, r.Ready())
	})
	t.Run("ordinals", func(t *testing.T) {
		assert.Equal(t, int32(12), ordinalOf("set-12"))
		assert.Equal(t, int32(-1), ordinalOf("hand-made"))
		assert.Equal(t, int32(-1), ordinalOf("set-99999999999"))
	})
}

func TestClassifyAndDeletable(t *testing.T) {
	protectedShoot := ready(3)
	protectedShoot.Shoot.Annotations = map[string]string{seedmanagementconstants.AnnotationProtectFromDeletion: "true"}
	protectedManagedSeed := ready(4)
	protectedManagedSeed.ManagedSeed.Annotations = map[string]string{seedmanagementconstants.AnnotationProtectFromDeletion: "true"}
	inUse := ready(5)
	inUse.HasScheduledShoots = true
	notProtected := ready(6)
	notProtected.Shoot.Annotations = map[string]string{seedmanagementconstants.AnnotationProtectFromDeletion: "false"}
	pending := replicaIn(1, StatusShootReconciling, false, ShootProgressing)
	postponed := replicaIn(2, StatusManagedSeedRegistered, false, ShootHealthy)

	replicas := []*Replica{notProtected, inUse, protectedManagedSeed, protectedShoot, postponed, pending}
	status := &seedmanagementv1alpha1.ManagedSeedSetStatus{PendingReplica: pendingFor("set-1", seedmanagementv1alpha1.ShootReconcilingReason, nil)}
	c := Classify(replicas, status)

	assert.Equal(t, []*Replica{pending, postponed, protectedShoot, protectedManagedSeed, inUse, notProtected}, replicas, "sorted by ordinal")
	assert.Same(t, pending, c.Pending)
	assert.Equal(t, []*Replica{protectedShoot, protectedManagedSeed, inUse, notProtected}, c.Ready)
	assert.Equal(t, []*Replica{postponed}, c.Postponed, "the pending replica is not postponed")
	assert.Equal(t, []*Replica{pending, postponed, notProtected}, c.Deletable)
}

func TestSortByDeletionPriority(t *testing.T) {
	registeredUnhealthy := replicaIn(1, StatusManagedSeedRegistered, true, ShootUnhealthy)
	registeredProgressing := replicaIn(0, StatusManagedSeedRegistered, true, ShootProgressing)
	registeredSeedNotReady := replicaIn(7, StatusManagedSeedRegistered, false, ShootHealthy)
	registeredHealthyHigh := replicaIn(9, StatusManagedSeedRegistered, true, ShootHealthy)
	registeredHealthyLow := replicaIn(2, StatusManagedSeedRegistered, true, ShootHealthy)
	reconciling := replicaIn(8, StatusShootReconciling, false, ShootHealthy)
	failed := replicaIn(5, StatusShootReconcileFailed, false, ShootHealthy)
	unknownLabel := replicaIn(3, StatusManagedSeedRegistered, true, "garbage")

	replicas := []*Replica{registeredHealthyHigh, registeredHealthyLow, registeredUnhealthy, unknownLabel, registeredProgressing, registeredSeedNotReady, reconciling, failed}
	SortByDeletionPriority(replicas)
	assert.Equal(t, []*Replica{
		failed,                 // least advanced status
		reconciling,            // next status
		registeredSeedNotReady, // registered, but its Seed is not ready
		registeredUnhealthy,    // worst health
		unknownLabel,           // an unknown health label counts as unknown
		registeredProgressing,
		registeredHealthyLow, // all equal: the lower ordinal first
		registeredHealthyHigh,
	}, replicas)
}

func TestDecide(t *testing.T) {
	three := int32(3)
	for _, tc := range []struct {
		name     string
		set      *seedmanagementv1alpha1.ManagedSeedSet
		replicas []*Replica
		// want
		action    ActionType
		replica   string // the acted-on replica, or the new one
		event     string
		pending   *seedmanagementv1alpha1.PendingReplica // after success
		replicasN int32
		readyN    int32
		next      int32
		done      bool
		err       error
	}{
		// Not scaling: the pending replica, then postponed ones, are driven to ready.
		{name: "failed shoot is retried", set: set(1, nil), replicas: []*Replica{replicaIn(0, StatusShootReconcileFailed, false, ShootUnhealthy)},
			action: RetryShoot, replica: "set-0", event: EventRetryingShootReconciliation,
			pending: pendingFor("set-0", seedmanagementv1alpha1.ShootReconcilingReason, ptrTo(int32(1))), replicasN: 1},
		{name: "failed shoot after max retries is given up", set: set(1, pendingFor("set-0", seedmanagementv1alpha1.ShootReconcilingReason, &three)), replicas: []*Replica{replicaIn(0, StatusShootReconcileFailed, false, ShootUnhealthy)},
			event: EventNotRetryingShootReconciliation, pending: pendingFor("set-0", seedmanagementv1alpha1.ShootReconcileFailedReason, &three), replicasN: 1},
		{name: "failed deletion is retried", set: set(1, nil), replicas: []*Replica{replicaIn(0, StatusShootDeleteFailed, false, ShootUnhealthy)},
			action: RetryShoot, replica: "set-0", event: EventRetryingShootDeletion,
			pending: pendingFor("set-0", seedmanagementv1alpha1.ShootDeletingReason, ptrTo(int32(1))), replicasN: 1},
		{name: "failed deletion after max retries is given up", set: set(1, pendingFor("set-0", seedmanagementv1alpha1.ShootDeletingReason, &three)), replicas: []*Replica{replicaIn(0, StatusShootDeleteFailed, false, ShootUnhealthy)},
			event: EventNotRetryingShootDeletion, pending: pendingFor("set-0", seedmanagementv1alpha1.ShootDeleteFailedReason, &three), replicasN: 1},
		{name: "reconciling shoot is waited for", set: set(1, nil), replicas: []*Replica{replicaIn(0, StatusShootReconciling, false, ShootProgressing)},
			event: EventWaitingForShootReconciled, pending: pendingFor("set-0", seedmanagementv1alpha1.ShootReconcilingReason, nil), replicasN: 1},
		{name: "deleting shoot is waited for", set: set(1, nil), replicas: []*Replica{replicaIn(0, StatusShootDeleting, false, ShootProgressing)},
			event: EventWaitingForShootDeleted, pending: pendingFor("set-0", seedmanagementv1alpha1.ShootDeletingReason, nil), replicasN: 1},
		{name: "reconciled shoot gets its managed seed", set: set(1, nil), replicas: []*Replica{replicaIn(0, StatusShootReconciled, false, ShootHealthy)},
			action: CreateManagedSeed, replica: "set-0", event: EventCreatingManagedSeed, pending: pendingFor("set-0", seedmanagementv1alpha1.ManagedSeedPreparingReason, nil), replicasN: 1},
		{name: "preparing managed seed is waited for", set: set(1, nil), replicas: []*Replica{replicaIn(0, StatusManagedSeedPreparing, false, ShootHealthy)},
			event: EventWaitingForManagedSeedRegistered, pending: pendingFor("set-0", seedmanagementv1alpha1.ManagedSeedPreparingReason, nil), replicasN: 1},
		{name: "deleting managed seed is waited for", set: set(1, nil), replicas: []*Replica{replicaIn(0, StatusManagedSeedDeleting, false, ShootHealthy)},
			event: EventWaitingForManagedSeedDeleted, pending: pendingFor("set-0", seedmanagementv1alpha1.ManagedSeedDeletingReason, nil), replicasN: 1},
		{name: "seed not ready is waited for", set: set(1, nil), replicas: []*Replica{replicaIn(0, StatusManagedSeedRegistered, false, ShootHealthy)},
			event: EventWaitingForSeedReady, pending: pendingFor("set-0", seedmanagementv1alpha1.SeedNotReadyReason, nil), replicasN: 1},
		{name: "unhealthy shoot is waited for", set: set(1, nil), replicas: []*Replica{replicaIn(0, StatusManagedSeedRegistered, true, ShootUnhealthy)},
			event: EventWaitingForShootHealthy, pending: pendingFor("set-0", seedmanagementv1alpha1.ShootNotHealthyReason, nil), replicasN: 1},
		{name: "all ready: done, pending replica cleared", set: set(2, pendingFor("set-1", seedmanagementv1alpha1.SeedNotReadyReason, nil)), replicas: []*Replica{ready(0), ready(1)},
			replicasN: 2, readyN: 2, done: true},
		{name: "waiting keeps since when nothing changed", set: set(1, pendingFor("set-0", seedmanagementv1alpha1.ShootReconcilingReason, nil)), replicas: []*Replica{replicaIn(0, StatusShootReconciling, false, ShootProgressing)},
			event: EventWaitingForShootReconciled, pending: pendingFor("set-0", seedmanagementv1alpha1.ShootReconcilingReason, nil), replicasN: 1},

		// Scaling out: the pending replica first, then a new one.
		{name: "scale-out waits for the pending replica", set: set(3, pendingFor("set-1", seedmanagementv1alpha1.ShootReconcilingReason, nil)), replicas: []*Replica{ready(0), replicaIn(1, StatusShootReconciling, false, ShootProgressing)},
			event: EventWaitingForShootReconciled, pending: pendingFor("set-1", seedmanagementv1alpha1.ShootReconcilingReason, nil), replicasN: 2, readyN: 1},
		{name: "scale-out creates the next replica's shoot", set: set(3, pendingFor("set-1", seedmanagementv1alpha1.SeedNotReadyReason, nil)), replicas: []*Replica{ready(0), ready(1)},
			action: CreateShoot, replica: "set-2", event: EventCreatingShoot, pending: pendingFor("set-2", seedmanagementv1alpha1.ShootReconcilingReason, nil), replicasN: 3, readyN: 2, next: 3},
		{name: "scale-out does not wait for a postponed replica", set: set(3, nil), replicas: []*Replica{ready(0), replicaIn(1, StatusManagedSeedRegistered, false, ShootHealthy)},
			action: CreateShoot, replica: "set-2", event: EventCreatingShoot, pending: pendingFor("set-2", seedmanagementv1alpha1.ShootReconcilingReason, nil), replicasN: 3, readyN: 1, next: 3},
		{name: "scale-out skips ordinals used before", set: func() *seedmanagementv1alpha1.ManagedSeedSet {
			s := set(2, nil)
			s.Status.NextReplicaNumber = 7
			return s
		}(), replicas: []*Replica{ready(0)},
			action: CreateShoot, replica: "set-7", event: EventCreatingShoot, pending: pendingFor("set-7", seedmanagementv1alpha1.ShootReconcilingReason, nil), replicasN: 2, readyN: 1, next: 8},
		{name: "scale-out repairs a nextReplicaNumber below the replicas'", set: func() *seedmanagementv1alpha1.ManagedSeedSet {
			s := set(3, nil)
			s.Status.NextReplicaNumber = 1
			return s
		}(), replicas: []*Replica{ready(0), ready(4)},
			action: CreateShoot, replica: "set-5", event: EventCreatingShoot, pending: pendingFor("set-5", seedmanagementv1alpha1.ShootReconcilingReason, nil), replicasN: 3, readyN: 2, next: 6},

		// Scaling in: the lowest-priority deletable replica goes, managed seed first.
		{name: "scale-in deletes the managed seed of the lowest-priority replica", set: set(1, nil), replicas: []*Replica{ready(0), ready(1)},
			action: DeleteManagedSeed, replica: "set-0", event: EventDeletingManagedSeed, pending: pendingFor("set-0", seedmanagementv1alpha1.ManagedSeedDeletingReason, nil), replicasN: 2, readyN: 1},
		{name: "scale-in deletes the shoot of a replica without managed seed", set: set(1, nil), replicas: []*Replica{ready(0), replicaIn(1, StatusShootReconciling, false, ShootProgressing)},
			action: DeleteShoot, replica: "set-1", event: EventDeletingShoot, pending: pendingFor("set-1", seedmanagementv1alpha1.ShootDeletingReason, nil), replicasN: 2, readyN: 1},
		{name: "scale-in deletes the shoot of a pending reconciled replica", set: set(0, pendingFor("set-0", seedmanagementv1alpha1.ManagedSeedDeletingReason, nil)), replicas: []*Replica{replicaIn(0, StatusShootReconciled, false, ShootHealthy)},
			action: DeleteShoot, replica: "set-0", event: EventDeletingShoot, pending: pendingFor("set-0", seedmanagementv1alpha1.ShootDeletingReason, nil), replicasN: 1},
		{name: "scale-in waits for a deleting managed seed", set: set(0, pendingFor("set-0", seedmanagementv1alpha1.ManagedSeedDeletingReason, nil)), replicas: []*Replica{replicaIn(0, StatusManagedSeedDeleting, false, ShootHealthy)},
			event: EventWaitingForManagedSeedDeleted, pending: pendingFor("set-0", seedmanagementv1alpha1.ManagedSeedDeletingReason, nil), replicasN: 1},
		{name: "scale-in does not wait for a failed shoot to be retried", set: set(0, pendingFor("set-0", seedmanagementv1alpha1.ShootReconcilingReason, nil)), replicas: []*Replica{replicaIn(0, StatusShootReconcileFailed, false, ShootUnhealthy)},
			action: DeleteShoot, replica: "set-0", event: EventDeletingShoot, pending: pendingFor("set-0", seedmanagementv1alpha1.ShootDeletingReason, nil), replicasN: 1},
		{name: "scale-in without deletable replicas fails", set: set(1, nil), replicas: func() []*Replica {
			a, b := ready(0), ready(1)
			a.HasScheduledShoots = true
			b.Shoot.Annotations = map[string]string{seedmanagementconstants.AnnotationProtectFromDeletion: "true"}
			return []*Replica{a, b}
		}(), replicasN: 2, readyN: 2, err: ErrNoDeletableReplicas},
		{name: "a set being deleted scales in to zero", set: func() *seedmanagementv1alpha1.ManagedSeedSet {
			s := set(2, nil)
			s.DeletionTimestamp = &earlier
			return s
		}(), replicas: []*Replica{ready(0)},
			action: DeleteManagedSeed, replica: "set-0", event: EventDeletingManagedSeed, pending: pendingFor("set-0", seedmanagementv1alpha1.ManagedSeedDeletingReason, nil), replicasN: 1},
		{name: "a set being deleted without replicas is done", set: func() *seedmanagementv1alpha1.ManagedSeedSet {
			s := set(2, pendingFor("set-0", seedmanagementv1alpha1.ShootDeletingReason, nil))
			s.DeletionTimestamp = &earlier
			return s
		}(), done: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := Decide(tc.set, tc.replicas, 3, now)
			assert.Equal(t, tc.action, plan.Action.Type)
			if tc.action != NoAction {
				assert.Equal(t, tc.replica, replicaName(tc.set, plan.Action))
			}
			if tc.event == "" {
				assert.Nil(t, plan.Event)
			} else if assert.NotNil(t, plan.Event) {
				assert.Equal(t, tc.event, plan.Event.Reason)
			}
			assert.Equal(t, tc.done, plan.Done)
			assert.ErrorIs(t, plan.Err, tc.err)
			if tc.err == nil {
				assert.NoError(t, plan.Err)
			}
			status := plan.Status
			assert.Equal(t, tc.set.Generation, status.ObservedGeneration)
			plan.Succeeded(&status)
			assert.Equal(t, tc.replicasN, status.Replicas, "replicas")
			assert.Equal(t, tc.readyN, status.ReadyReplicas, "readyReplicas")
			if tc.action == CreateShoot {
				assert.Equal(t, tc.next, status.NextReplicaNumber)
			}
			if tc.pending == nil {
				assert.Nil(t, status.PendingReplica)
				return
			}
			require.NotNil(t, status.PendingReplica)
			assert.Equal(t, tc.pending.Name, status.PendingReplica.Name)
			assert.Equal(t, tc.pending.Reason, status.PendingReplica.Reason)
			assert.Equal(t, tc.pending.Retries, status.PendingReplica.Retries)
			old := tc.set.Status.PendingReplica
			unchanged := old != nil && old.Name == tc.pending.Name && old.Reason == tc.pending.Reason && assert.ObjectsAreEqual(old.Retries, tc.pending.Retries)
			if unchanged {
				assert.Equal(t, earlier, status.PendingReplica.Since, "since stays while nothing changes")
			} else {
				assert.Equal(t, metav1.NewTime(now), status.PendingReplica.Since)
			}
		})
	}
}

// A reconcile that read the set after another's claim for a new replica, but its replicas
// before that one's create, asks for a retry instead of starting the next replica; once the
// claim is CreateInFlight old, the set goes on as Gardener's would (the next ordinal).
func TestDecideCreateInFlight(t *testing.T) {
	claimed := func(ago time.Duration, reason seedmanagementv1alpha1.PendingReplicaReason, retries *int32) *seedmanagementv1alpha1.ManagedSeedSet {
		s := set(2, &seedmanagementv1alpha1.PendingReplica{Name: "set-1", Reason: reason, Since: metav1.NewTime(now.Add(-ago)), Retries: retries})
		s.Status.NextReplicaNumber = 2
		return s
	}
	replicas := func() []*Replica { return []*Replica{ready(0)} }

	plan := Decide(claimed(time.Second, seedmanagementv1alpha1.ShootReconcilingReason, nil), replicas(), 3, now)
	assert.ErrorIs(t, plan.Err, ErrCreateInFlight)
	assert.Equal(t, NoAction, plan.Action.Type)
	assert.Nil(t, plan.Event)

	plan = Decide(claimed(CreateInFlight, seedmanagementv1alpha1.ShootReconcilingReason, nil), replicas(), 3, now)
	require.NoError(t, plan.Err)
	assert.Equal(t, CreateShoot, plan.Action.Type)
	assert.Equal(t, int32(2), plan.Action.Ordinal, "Gardener's next replica, once the claim is old")

	// A retry's claim is of a Shoot that existed; the Shoot's being there is no question.
	plan = Decide(claimed(time.Second, seedmanagementv1alpha1.ShootReconcilingReason, ptrTo(int32(1))), replicas(), 3, now)
	require.NoError(t, plan.Err)
	assert.Equal(t, CreateShoot, plan.Action.Type)

	// Nor is any other reason a claim for creation.
	plan = Decide(claimed(time.Second, seedmanagementv1alpha1.SeedNotReadyReason, nil), replicas(), 3, now)
	require.NoError(t, plan.Err)
	assert.Equal(t, CreateShoot, plan.Action.Type)

	// The claimed replica listed: it is driven as the pending one.
	plan = Decide(claimed(time.Second, seedmanagementv1alpha1.ShootReconcilingReason, nil), append(replicas(), replicaIn(1, StatusShootReconciling, false, ShootProgressing)), 3, now)
	require.NoError(t, plan.Err)
	assert.Equal(t, EventWaitingForShootReconciled, plan.Event.Reason)
}

// A failed action leaves the pending replica and counters as they were: Succeeded is applied
// only after the write.
func TestDecideStatusBeforeTheAction(t *testing.T) {
	plan := Decide(set(2, nil), []*Replica{ready(0)}, 3, now)
	require.Equal(t, CreateShoot, plan.Action.Type)
	assert.Nil(t, plan.Status.PendingReplica)
	assert.Equal(t, int32(1), plan.Status.Replicas)
	assert.Zero(t, plan.Status.NextReplicaNumber)
}
