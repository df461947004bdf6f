package managedseedset

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	seedmanagementv1alpha1 "github.com/gardener/gardener/pkg/apis/seedmanagement/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ActionType is the one write a reconcile makes (Gardener's actuator makes at most one).
type ActionType int

// The actions.
const (
	NoAction ActionType = iota
	// CreateShoot creates the Shoot of a new replica from the set's shoot template.
	CreateShoot
	// CreateManagedSeed creates the replica's ManagedSeed from the set's template.
	CreateManagedSeed
	// DeleteShoot confirms and deletes the replica's Shoot.
	DeleteShoot
	// DeleteManagedSeed deletes the replica's ManagedSeed.
	DeleteManagedSeed
	// RetryShoot annotates the replica's Shoot with gardener.cloud/operation=retry.
	RetryShoot
)

func (a ActionType) String() string {
	return [...]string{"None", "CreateShoot", "CreateManagedSeed", "DeleteShoot", "DeleteManagedSeed", "RetryShoot"}[a]
}

// Action is what to write: on Replica, or, for CreateShoot, a new replica numbered Ordinal.
type Action struct {
	Type    ActionType
	Replica *Replica
	Ordinal int32
}

// Event is a Kubernetes Event to record on the set.
type Event struct {
	Type, Reason, Message string
}

// Gardener's Event reasons.
const (
	EventCreatingShoot                   = "CreatingShoot"
	EventDeletingShoot                   = "DeletingShoot"
	EventRetryingShootReconciliation     = "RetryingShootReconciliation"
	EventNotRetryingShootReconciliation  = "NotRetryingShootReconciliation"
	EventRetryingShootDeletion           = "RetryingShootDeletion"
	EventNotRetryingShootDeletion        = "NotRetryingShootDeletion"
	EventWaitingForShootReconciled       = "WaitingForShootReconciled"
	EventWaitingForShootDeleted          = "WaitingForShootDeleted"
	EventWaitingForShootHealthy          = "WaitingForShootHealthy"
	EventCreatingManagedSeed             = "CreatingManagedSeed"
	EventDeletingManagedSeed             = "DeletingManagedSeed"
	EventWaitingForManagedSeedRegistered = "WaitingForManagedSeedRegistered"
	EventWaitingForManagedSeedDeleted    = "WaitingForManagedSeedDeleted"
	EventWaitingForSeedReady             = "WaitingForSeedReady"
)

// ErrNoDeletableReplicas is the error of a scale-in that finds every replica protected or in use.
var ErrNoDeletableReplicas = errors.New("no deletable replicas found")

// ErrCreateInFlight is the answer of a reconcile that finds the set's pending replica freshly
// claimed for creation but its Shoot not (yet) there: another reconcile wrote the claim and may
// be creating it right now. It asks for a retry and decides nothing.
var ErrCreateInFlight = errors.New("the pending replica's Shoot is claimed but not created yet")

// CreateInFlight is how long after a claim for a new replica (status.pendingReplica.since) a
// missing Shoot of it is taken for a create in flight. The reconcile that claimed creates the
// Shoot right after; should it have died in between, the set goes on as Gardener would after
// that long (the next replica).
const CreateInFlight = time.Minute

// Plan is what one reconcile of a set does.
type Plan struct {
	// Status is the set's status to record, whether or not the action succeeds.
	Status seedmanagementv1alpha1.ManagedSeedSetStatus
	// Action is the write to make, after recording Event.
	Action Action
	Event  *Event
	// Succeeded updates Status once the action succeeded (Gardener records the pending replica
	// and the scale-out's counters only then).
	Succeeded func(*seedmanagementv1alpha1.ManagedSeedSetStatus)
	// Done says there is nothing left to do: every replica is ready and the count is reached (or,
	// for a set being deleted, none is left): its finalizer may go.
	Done bool
	// Err is a failure to report (no deletable replica when scaling in).
	Err error
}

// Classification is how Decide sees the replicas: Gardener's ready, postponed (neither ready nor
// pending) and deletable replicas, and the pending one.
type Classification struct {
	Pending                     *Replica
	Ready, Postponed, Deletable []*Replica
}

// Classify sorts replicas by ascending ordinal (in place) and classifies them against the
// set's status.pendingReplica.
func Classify(replicas []*Replica, status *seedmanagementv1alpha1.ManagedSeedSetStatus) Classification {
	sort.SliceStable(replicas, func(i, j int) bool { return replicas[i].Ordinal() < replicas[j].Ordinal() })
	var c Classification
	if status.PendingReplica != nil {
		for _, r := range replicas {
			if r.Name() == status.PendingReplica.Name {
				c.Pending = r
				break
			}
		}
	}
	for _, r := range replicas {
		if r.Ready() {
			c.Ready = append(c.Ready, r)
		} else if r != c.Pending {
			c.Postponed = append(c.Postponed, r)
		}
		if r.Deletable() {
			c.Deletable = append(c.Deletable, r)
		}
	}
	return c
}

// TargetReplicas is how many replicas the set wants: spec.replicas (Gardener's default 1), or
// none while it is being deleted.
func TargetReplicas(set *seedmanagementv1alpha1.ManagedSeedSet) int {
	if set.DeletionTimestamp != nil {
		return 0
	}
	if set.Spec.Replicas == nil {
		return 1
	}
	return int(*set.Spec.Replicas)
}

// Decide is Gardener's actuator as a pure function: from the set and its replicas (those whose
// HasScheduledShoots matters, when scaling in, filled in) it plans the status and the one
// action of this reconcile. The pending replica is driven first, and no new replica is started
// before it is ready; then the count is converged one replica at a time; then replicas that
// fell back (postponed) are driven again.
func Decide(set *seedmanagementv1alpha1.ManagedSeedSet, replicas []*Replica, maxShootRetries int, now time.Time) Plan {
	status := set.Status.DeepCopy()
	status.ObservedGeneration = set.Generation
	c := Classify(replicas, status)
	status.Replicas = int32(len(replicas))     // #nosec G115 -- one per ManagedSeed of the set, far below max int32
	status.ReadyReplicas = int32(len(c.Ready)) // #nosec G115 -- as above
	plan := Plan{Status: *status, Succeeded: func(*seedmanagementv1alpha1.ManagedSeedSetStatus) {}}

	if createInFlight(status, c.Pending, now) {
		plan.Err = ErrCreateInFlight
		return plan
	}

	count, target := len(replicas), TargetReplicas(set)
	scalingOut, scalingIn := count < target, count > target

	if c.Pending != nil {
		if step, waiting := driveReplica(&plan, c.Pending, scalingIn, maxShootRetries, now); waiting {
			return step
		}
	}

	switch {
	case scalingOut:
		ordinal := nextOrdinal(replicas, status)
		name := ReplicaName(set, ordinal)
		plan.Action = Action{Type: CreateShoot, Ordinal: ordinal}
		plan.Event = normal(EventCreatingShoot, "Creating Shoot %s/%s", set.Namespace, name)
		plan.Succeeded = func(s *seedmanagementv1alpha1.ManagedSeedSetStatus) {
			setPending(s, name, seedmanagementv1alpha1.ShootReconcilingReason, nil, now)
			s.Replicas++
			s.NextReplicaNumber = ordinal + 1
		}
		return plan

	case scalingIn:
		if len(c.Deletable) == 0 {
			plan.Err = ErrNoDeletableReplicas
			return plan
		}
		SortByDeletionPriority(c.Deletable)
		r := c.Deletable[0]
		if managedSeedExists(r.Status()) {
			plan.Action = Action{Type: DeleteManagedSeed, Replica: r}
			plan.Event = normal(EventDeletingManagedSeed, "Deleting ManagedSeed %s", r.Key())
			plan.Succeeded = pendingOnSuccess(r.Name(), seedmanagementv1alpha1.ManagedSeedDeletingReason, nil, now)
		} else {
			plan.Action = Action{Type: DeleteShoot, Replica: r}
			plan.Event = normal(EventDeletingShoot, "Deleting Shoot %s", r.Key())
			plan.Succeeded = pendingOnSuccess(r.Name(), seedmanagementv1alpha1.ShootDeletingReason, nil, now)
		}
		if r.Ready() {
			plan.Status.ReadyReplicas--
		}
		return plan
	}

	for _, r := range c.Postponed {
		if step, waiting := driveReplica(&plan, r, scalingIn, maxShootRetries, now); waiting {
			return step
		}
	}

	plan.Status.PendingReplica = nil
	plan.Done = true
	return plan
}

// createInFlight says whether the status names a pending replica claimed for creation less than
// CreateInFlight ago whose Shoot was not among the replicas. The claim is written before the
// create (Reconciler.converge), so a reconcile that read the set after another's claim and listed
// the replicas before its create would otherwise see no pending replica and start the next one;
// Gardener, one worker per set, never reads between the two.
func createInFlight(status *seedmanagementv1alpha1.ManagedSeedSetStatus, pending *Replica, now time.Time) bool {
	p := status.PendingReplica
	return p != nil && pending == nil && p.Reason == seedmanagementv1alpha1.ShootReconcilingReason && p.Retries == nil &&
		now.Sub(p.Since.Time) < CreateInFlight
}

// driveReplica plans the next step of a replica that is not complete, as Gardener's
// reconcileReplica does; waiting is false when the replica needs nothing (it is ready, or
// scale-in does not wait for what it lacks).
func driveReplica(base *Plan, r *Replica, scalingIn bool, maxShootRetries int, now time.Time) (Plan, bool) {
	plan := *base
	status := &plan.Status
	name, key := r.Name(), r.Key()
	wait := func(reason seedmanagementv1alpha1.PendingReplicaReason, event *Event) (Plan, bool) {
		setPending(status, name, reason, nil, now)
		plan.Event = event
		return plan, true
	}
	act := func(action ActionType, reason seedmanagementv1alpha1.PendingReplicaReason, retries *int32, event *Event) (Plan, bool) {
		plan.Action = Action{Type: action, Replica: r}
		plan.Event = event
		plan.Succeeded = pendingOnSuccess(name, reason, retries, now)
		return plan, true
	}

	switch s := r.Status(); {
	case s == StatusShootReconcileFailed && !scalingIn:
		retries := pendingRetries(status, name, seedmanagementv1alpha1.ShootReconcilingReason)
		if int(retries) < maxShootRetries {
			return act(RetryShoot, seedmanagementv1alpha1.ShootReconcilingReason, ptrTo(retries+1), normal(EventRetryingShootReconciliation, "Retrying Shoot %s reconciliation", key))
		}
		setPending(status, name, seedmanagementv1alpha1.ShootReconcileFailedReason, &retries, now)
		plan.Event = normal(EventNotRetryingShootReconciliation, "Not retrying Shoot %s reconciliation since max retries have been reached", key)
		return plan, true

	case s == StatusShootDeleteFailed:
		retries := pendingRetries(status, name, seedmanagementv1alpha1.ShootDeletingReason)
		if int(retries) < maxShootRetries {
			return act(RetryShoot, seedmanagementv1alpha1.ShootDeletingReason, ptrTo(retries+1), normal(EventRetryingShootDeletion, "Retrying Shoot %s deletion", key))
		}
		setPending(status, name, seedmanagementv1alpha1.ShootDeleteFailedReason, &retries, now)
		plan.Event = normal(EventNotRetryingShootDeletion, "Not retrying Shoot %s deletion since max retries have been reached", key)
		return plan, true

	case s == StatusShootReconciling && !scalingIn:
		return wait(seedmanagementv1alpha1.ShootReconcilingReason, normal(EventWaitingForShootReconciled, "Waiting for Shoot %s to be reconciled", key))

	case s == StatusShootDeleting:
		return wait(seedmanagementv1alpha1.ShootDeletingReason, normal(EventWaitingForShootDeleted, "Waiting for Shoot %s to be deleted", key))

	case s == StatusShootReconciled:
		if !scalingIn {
			return act(CreateManagedSeed, seedmanagementv1alpha1.ManagedSeedPreparingReason, nil, normal(EventCreatingManagedSeed, "Creating ManagedSeed %s", key))
		}
		return act(DeleteShoot, seedmanagementv1alpha1.ShootDeletingReason, nil, normal(EventDeletingShoot, "Deleting Shoot %s", key))

	case s == StatusManagedSeedPreparing && !scalingIn:
		return wait(seedmanagementv1alpha1.ManagedSeedPreparingReason, normal(EventWaitingForManagedSeedRegistered, "Waiting for ManagedSeed %s to be registered", key))

	case s == StatusManagedSeedDeleting:
		return wait(seedmanagementv1alpha1.ManagedSeedDeletingReason, normal(EventWaitingForManagedSeedDeleted, "Waiting for ManagedSeed %s to be deleted", key))

	case !r.SeedReady() && !scalingIn:
		// Gardener names the Seed by the replica's name alone (Seeds are cluster-scoped).
		return wait(seedmanagementv1alpha1.SeedNotReadyReason, normal(EventWaitingForSeedReady, "Waiting for Seed %s to be ready", name))

	case r.ShootHealth() != ShootHealthy && !scalingIn:
		return wait(seedmanagementv1alpha1.ShootNotHealthyReason, normal(EventWaitingForShootHealthy, "Waiting for Shoot %s to be healthy", key))
	}
	return *base, false
}

// SortByDeletionPriority sorts replicas lowest priority first, in Gardener's order: the less
// advanced status, then the Seed not ready, then the worse Shoot health, then the lower ordinal.
func SortByDeletionPriority(replicas []*Replica) {
	sort.SliceStable(replicas, func(i, j int) bool {
		a, b := replicas[i], replicas[j]
		if sa, sb := a.Status(), b.Status(); sa != sb {
			return sa < sb
		}
		if ra, rb := a.SeedReady(), b.SeedReady(); ra != rb {
			return !ra
		}
		if ha, hb := a.ShootHealth().value(), b.ShootHealth().value(); ha != hb {
			return ha < hb
		}
		return a.Ordinal() < b.Ordinal()
	})
}

// nextOrdinal is the ordinal of the next replica: past the highest existing one (replicas are
// sorted by ordinal) and never below status.nextReplicaNumber, so that a name is not reused.
func nextOrdinal(replicas []*Replica, status *seedmanagementv1alpha1.ManagedSeedSetStatus) int32 {
	if len(replicas) > 0 {
		if next := replicas[len(replicas)-1].Ordinal() + 1; next > status.NextReplicaNumber {
			return next
		}
	}
	return status.NextReplicaNumber
}

// ReplicaName is the name of the set's replica numbered ordinal.
func ReplicaName(set *seedmanagementv1alpha1.ManagedSeedSet, ordinal int32) string {
	return fmt.Sprintf("%s-%d", set.Name, ordinal)
}

func pendingRetries(status *seedmanagementv1alpha1.ManagedSeedSetStatus, name string, reason seedmanagementv1alpha1.PendingReplicaReason) int32 {
	if p := status.PendingReplica; p != nil && p.Name == name && p.Reason == reason && p.Retries != nil {
		return *p.Retries
	}
	return 0
}

// setPending records the pending replica; its since moves only when something about it changes.
func setPending(status *seedmanagementv1alpha1.ManagedSeedSetStatus, name string, reason seedmanagementv1alpha1.PendingReplicaReason, retries *int32, now time.Time) {
	if p := status.PendingReplica; p == nil || p.Name != name || p.Reason != reason || !reflect.DeepEqual(p.Retries, retries) {
		status.PendingReplica = &seedmanagementv1alpha1.PendingReplica{Name: name, Reason: reason, Since: metav1.NewTime(now), Retries: retries}
	}
}

func pendingOnSuccess(name string, reason seedmanagementv1alpha1.PendingReplicaReason, retries *int32, now time.Time) func(*seedmanagementv1alpha1.ManagedSeedSetStatus) {
	return func(s *seedmanagementv1alpha1.ManagedSeedSetStatus) { setPending(s, name, reason, retries, now) }
}

func normal(reason, format string, args ...any) *Event {
	return &Event{Type: corev1.EventTypeNormal, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// ReconcileErrorEvent is the Warning Gardener records on the set when a reconcile fails.
func ReconcileErrorEvent(err error) *Event {
	return &Event{Type: corev1.EventTypeWarning, Reason: gardencorev1beta1.EventReconcileError, Message: err.Error()}
}

func ptrTo[T any](v T) *T { return &v }
