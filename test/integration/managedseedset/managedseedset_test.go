package managedseedset_test

import (
	"context"
	"log/slog"
	"net/http"
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	seedmanagementv1alpha1 "github.com/gardener/gardener/pkg/apis/seedmanagement/v1alpha1"
	seedmanagementconstants "github.com/gardener/gardener/pkg/apis/seedmanagement/v1alpha1/constants"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/managedseedset"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
)

func pending(t *testing.T, name string) *seedmanagementv1alpha1.PendingReplica {
	t.Helper()
	return getSet(t, name).Status.PendingReplica
}

// A set scales out one replica at a time, each driven by the events of its Shoot, ManagedSeed
// and Seed through Shoot created → reconciled → ManagedSeed → registered → Seed ready → Shoot
// healthy; the function runs with exactly its RBAC.
func TestScaleOutOneReplicaAtATime(t *testing.T) {
	f := newFixture(t)
	set := newSet(t, "scale-out", 2)
	labels := map[string]string{"app": set.Name}

	f.Send("add", set)
	got := getSet(t, set.Name)
	assert.Contains(t, got.Finalizers, managedseedset.Finalizer)
	shoot := getShoot(t, "scale-out-0")
	assert.Equal(t, "replica-name.seeds.example.com", *set.Spec.ShootTemplate.Spec.DNS.Domain)
	assert.Equal(t, "scale-out-0.seeds.example.com", *shoot.Spec.DNS.Domain, "the placeholder is replaced by the replica's name")
	assert.Equal(t, labels, shoot.Labels)
	ref := metav1.GetControllerOf(shoot)
	require.NotNil(t, ref)
	assert.Equal(t, set.Name, ref.Name)
	assert.Equal(t, int32(1), got.Status.Replicas)
	assert.Equal(t, int32(1), got.Status.NextReplicaNumber)
	assert.Equal(t, got.Generation, got.Status.ObservedGeneration)
	require.NotNil(t, got.Status.PendingReplica)
	assert.Equal(t, seedmanagementv1alpha1.ShootReconcilingReason, got.Status.PendingReplica.Reason)
	assert.Contains(t, events(t, set), managedseedset.EventCreatingShoot)

	// The set's own status update passes no event on; the Shoot still reconciling is not news.
	requests := f.Measure(func() {
		f.Send("update", got)
		f.Send("update", shoot)
	})
	assert.Zero(t, requests["list"]+requests["create"]+requests["patch"], "nothing reconciled: %v", requests)

	// A source in Reference mode sends the Shoot's kind and name only: the mapper reads it.
	code, body := f.Post(f.ReferenceEvent("update", shootReconciled(t, "scale-out-0")))
	require.Equal(t, http.StatusOK, code, body)
	ms := getManagedSeed(t, "scale-out-0")
	assert.Equal(t, "scale-out-0", ms.Spec.Shoot.Name)
	assert.Equal(t, labels, ms.Labels)
	assert.Equal(t, seedmanagementv1alpha1.ManagedSeedPreparingReason, pending(t, set.Name).Reason)

	f.Send("update", managedSeedRegistered(t, "scale-out-0"))
	assert.Equal(t, seedmanagementv1alpha1.SeedNotReadyReason, pending(t, set.Name).Reason, "the Seed has not registered yet")

	code, body = f.Post(f.ReferenceEvent("add", readySeed(t, "scale-out-0", labels)))
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, seedmanagementv1alpha1.ShootNotHealthyReason, pending(t, set.Name).Reason)

	f.Send("update", shootHealth(t, "scale-out-0", "healthy"))
	got = getSet(t, set.Name)
	assert.Equal(t, int32(2), got.Status.Replicas)
	assert.Equal(t, int32(1), got.Status.ReadyReplicas)
	assert.Equal(t, int32(2), got.Status.NextReplicaNumber)
	assert.Equal(t, "scale-out-1", got.Status.PendingReplica.Name)
	assert.True(t, exists(t, getShoot(t, "scale-out-1")))

	// A sweep meeting a set that waits for its pending replica writes nothing new.
	f.Sweep(managedseedset.ResyncSweep)
	requests = f.Measure(func() { f.Sweep(managedseedset.ResyncSweep) })
	assert.Equal(t, map[string]int{"list": 4, "create": 1, "get": 1, "patch": 1}, requests,
		"the set and its replicas listed, nothing written but the repeated Waiting Event, counted on the first")
	assert.Equal(t, got.Status, getSet(t, set.Name).Status)
}

// Scale-in deletes the lowest-priority deletable replica (the least advanced first; its
// ManagedSeed before its Shoot), never one that is protected or has Shoots on its Seed, and a
// set with nothing left to delete reports a terminal error and a Warning.
func TestScaleInByPriorityAndProtection(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	set := newSet(t, "scale-in", 3)
	labels := map[string]string{"app": set.Name}

	// Three replicas: 0 and 1 complete, 2 still reconciling.
	f.Send("add", set)
	for _, name := range []string{"scale-in-0", "scale-in-1"} {
		f.Send("update", shootReconciled(t, name))
		f.Send("update", managedSeedRegistered(t, name))
		f.Send("add", readySeed(t, name, labels))
		f.Send("update", shootHealth(t, name, "healthy"))
	}
	require.Equal(t, "scale-in-2", pending(t, set.Name).Name)
	require.Equal(t, int32(2), getSet(t, set.Name).Status.ReadyReplicas)

	// Scale to 2: the reconciling replica goes first (its Shoot, as it has no ManagedSeed). Its
	// finalizer (gardenlet's, played here) keeps it visible once deleted.
	shoot2 := getShoot(t, "scale-in-2")
	shoot2.Finalizers = []string{"test.gardener.cloud/keep"}
	require.NoError(t, env.Client.Update(ctx, shoot2))
	got := getSet(t, set.Name)
	got.Spec.Replicas = ptr.To(int32(2))
	require.NoError(t, env.Client.Update(ctx, got))
	f.Send("update", getSet(t, set.Name))
	shoot2 = getShoot(t, "scale-in-2")
	assert.NotNil(t, shoot2.DeletionTimestamp, "the least advanced replica is deleted")
	assert.Equal(t, "true", shoot2.Annotations["confirmation.gardener.cloud/deletion"], "its deletion was confirmed")
	assert.Equal(t, seedmanagementv1alpha1.ShootDeletingReason, pending(t, set.Name).Reason)
	shoot2.Finalizers = nil
	require.NoError(t, env.Client.Update(ctx, shoot2))
	f.Send("delete", shoot2)
	assert.Equal(t, int32(2), getSet(t, set.Name).Status.Replicas)

	// Scale to 1 with replica 0 protected: replica 1 goes, its ManagedSeed first.
	shoot0 := getShoot(t, "scale-in-0")
	metav1.SetMetaDataAnnotation(&shoot0.ObjectMeta, seedmanagementconstants.AnnotationProtectFromDeletion, "true")
	require.NoError(t, env.Client.Update(ctx, shoot0))
	got = getSet(t, set.Name)
	got.Spec.Replicas = ptr.To(int32(1))
	require.NoError(t, env.Client.Update(ctx, got))
	f.Send("update", getSet(t, set.Name))
	assert.False(t, exists(t, getManagedSeedKey("scale-in-1")), "the ManagedSeed of the unprotected replica is deleted")
	assert.True(t, exists(t, getManagedSeedKey("scale-in-0")))
	assert.Equal(t, seedmanagementv1alpha1.ManagedSeedDeletingReason, pending(t, set.Name).Reason)
	// The awaited ManagedSeed deletion leads to the Shoot's.
	f.Sweep(managedseedset.ResyncSweep)
	assert.False(t, exists(t, getShootKey("scale-in-1")))
	f.Sweep(managedseedset.ResyncSweep)
	got = getSet(t, set.Name)
	assert.Equal(t, int32(1), got.Status.Replicas)
	assert.Nil(t, got.Status.PendingReplica, "nothing left to do")

	// Scale to 0: replica 0 is protected, so nothing is deletable.
	got.Spec.Replicas = ptr.To(int32(0))
	require.NoError(t, env.Client.Update(ctx, got))
	f.Send("update", getSet(t, set.Name))
	assert.True(t, exists(t, getShootKey("scale-in-0")))
	assert.Contains(t, events(t, set), "ReconcileError")

	// Unprotected but with a Shoot scheduled on its Seed: still not deletable.
	shoot0 = getShoot(t, "scale-in-0")
	delete(shoot0.Annotations, seedmanagementconstants.AnnotationProtectFromDeletion)
	require.NoError(t, env.Client.Update(ctx, shoot0))
	tenant := newTenantShoot(t, "scale-in-tenant", "scale-in-0")
	f.Sweep(managedseedset.ResyncSweep)
	assert.True(t, exists(t, getManagedSeedKey("scale-in-0")))

	// Once the Shoot has left, the sweep deletes the replica.
	require.NoError(t, env.Client.Delete(ctx, tenant))
	f.Sweep(managedseedset.ResyncSweep)
	assert.False(t, exists(t, getManagedSeedKey("scale-in-0")))
}

// A set being deleted deletes its replicas one by one and then lets go of its finalizer.
func TestDeletionRemovesReplicasThenFinalizer(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	set := newSet(t, "deleted", 1)
	labels := map[string]string{"app": set.Name}
	f.Send("add", set)
	f.Send("update", shootReconciled(t, "deleted-0"))
	f.Send("update", managedSeedRegistered(t, "deleted-0"))
	f.Send("add", readySeed(t, "deleted-0", labels))
	f.Send("update", shootHealth(t, "deleted-0", "healthy"))
	require.Equal(t, int32(1), getSet(t, set.Name).Status.ReadyReplicas)

	// With everything ready, a sweep writes nothing.
	requests := f.Measure(func() { f.Sweep(managedseedset.ResyncSweep) })
	assert.Zero(t, requests["create"]+requests["patch"]+requests["delete"]+requests["update"], "a sweep with nothing changed writes nothing: %v", requests)

	// Each step is taken on the event of the one before, as the watches deliver them: the set's
	// deletion, then the deletion of its pending replica's ManagedSeed, then of its Shoot.
	managedSeed, shoot := getManagedSeed(t, "deleted-0"), getShoot(t, "deleted-0")
	require.NoError(t, env.Client.Delete(ctx, getSet(t, set.Name)))
	f.Send("update", getSet(t, set.Name))
	assert.False(t, exists(t, getManagedSeedKey("deleted-0")))
	f.Send("delete", managedSeed)
	assert.False(t, exists(t, getShootKey("deleted-0")))
	f.Send("delete", shoot)
	assert.False(t, exists(t, set), "the finalizer is gone with the last replica")
}

// A failed replica Shoot is retried up to maxShootRetries, then given up on.
func TestFailedShootIsRetriedThenGivenUp(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, functiontest.WithConfig(&managedseedset.Config{MaxShootRetries: 1}))
	set := newSet(t, "retried", 1)
	f.Send("add", set)

	fail := func() {
		shoot := getShoot(t, "retried-0")
		shoot.Status.ObservedGeneration = shoot.Generation
		shoot.Status.LastOperation = &gardencorev1beta1.LastOperation{Type: gardencorev1beta1.LastOperationTypeCreate, State: gardencorev1beta1.LastOperationStateFailed, LastUpdateTime: metav1.Now()}
		require.NoError(t, env.Client.Status().Update(ctx, shoot))
		f.Send("update", getShoot(t, "retried-0"))
	}
	fail()
	shoot := getShoot(t, "retried-0")
	assert.Equal(t, "retry", shoot.Annotations["gardener.cloud/operation"])
	p := pending(t, set.Name)
	assert.Equal(t, seedmanagementv1alpha1.ShootReconcilingReason, p.Reason)
	assert.Equal(t, ptr.To(int32(1)), p.Retries)

	// gardenlet takes the operation annotation away and fails again.
	delete(shoot.Annotations, "gardener.cloud/operation")
	require.NoError(t, env.Client.Update(ctx, shoot))
	fail()
	assert.NotContains(t, getShoot(t, "retried-0").Annotations, "gardener.cloud/operation")
	p = pending(t, set.Name)
	assert.Equal(t, seedmanagementv1alpha1.ShootReconcileFailedReason, p.Reason)
	assert.Contains(t, events(t, set), managedseedset.EventNotRetryingShootReconciliation)
}

// staleSet reads the set as it was at one moment, everything else live: a reconcile that read
// the set before another's status write and the replicas after its create.
type staleSet struct {
	client.Reader
	set *seedmanagementv1alpha1.ManagedSeedSet
}

func (s staleSet) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if set, ok := obj.(*seedmanagementv1alpha1.ManagedSeedSet); ok && key == client.ObjectKeyFromObject(s.set) {
		s.set.DeepCopyInto(set)
		return nil
	}
	return s.Reader.Get(ctx, key, obj, opts...)
}

// Two reconciles of one set at once (an event's and a sweep's, or two replicas'): the one that
// read the set before the other's status write, but its replicas after the other's create, takes
// the new replica for a postponed one. It must not start a second replica while the first is
// pending: its decision's status is written before the action, conditional on the version it
// read, so it meets a conflict and does nothing.
func TestConcurrentReconcilesStartOneReplica(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	set := newSet(t, "concurrent", 2)
	set.Finalizers = append(set.Finalizers, managedseedset.Finalizer)
	require.NoError(t, env.Client.Update(ctx, set))
	read := getSet(t, set.Name) // the other reconcile's read, before anything was done
	f.Send("add", read)
	require.True(t, exists(t, getShootKey("concurrent-0")))
	require.Equal(t, "concurrent-0", pending(t, set.Name).Name)

	log := slog.New(slog.DiscardHandler)
	r := &managedseedset.Reconciler{
		Writer: function.NewWriter(env.Client), Events: function.NewEventRecorder(env.Client, "test", clock.RealClock{}, log),
		Clock: clock.RealClock{}, MaxShootRetries: 3, Log: log,
	}
	err := r.Reconcile(ctx, function.Request{Key: client.ObjectKeyFromObject(read), Reader: staleSet{Reader: env.Client, set: read}, Trigger: function.BySweep})
	assert.True(t, apierrors.IsConflict(err), "the set changed since it was read: %v", err)
	assert.False(t, exists(t, getShootKey("concurrent-1")), "no second replica while the first is pending")
	got := getSet(t, set.Name)
	assert.Equal(t, "concurrent-0", got.Status.PendingReplica.Name)
	assert.Equal(t, int32(1), got.Status.NextReplicaNumber)
}

// The other interleaving: a reconcile that read the set after another's claim for the first
// replica, but listed the replicas before that one's create, finds the pending replica missing.
// It must neither start the next replica nor acknowledge the event: it asks for a retry, and
// the retry, with the Shoot there, waits for it.
func TestReconcileBetweenClaimAndCreateRetries(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	set := newSet(t, "claimed", 2)
	f.Send("add", set)
	require.Equal(t, "claimed-0", pending(t, set.Name).Name)

	// The function's clock, which dated the claim: the retry comes within CreateInFlight of it,
	// however slow the machine.
	log := slog.New(slog.DiscardHandler)
	r := &managedseedset.Reconciler{
		Writer: function.NewWriter(env.Client), Events: function.NewEventRecorder(env.Client, "test", f.Clock, log),
		Clock: f.Clock, MaxShootRetries: 3, Log: log,
	}
	before := getSet(t, set.Name)
	err := r.Reconcile(ctx, function.Request{Key: client.ObjectKeyFromObject(set), Reader: withoutShoots{env.Client}, Trigger: function.BySweep})
	require.ErrorIs(t, err, managedseedset.ErrCreateInFlight)
	assert.False(t, exists(t, getShootKey("claimed-1")), "no second replica while the first is being created")
	assert.Equal(t, before.ResourceVersion, getSet(t, set.Name).ResourceVersion, "nothing written")

	require.NoError(t, r.Reconcile(ctx, function.Request{Key: client.ObjectKeyFromObject(set), Reader: env.Client, Trigger: function.BySweep}))
	assert.Equal(t, "claimed-0", pending(t, set.Name).Name)
	assert.False(t, exists(t, getShootKey("claimed-1")))
}

// withoutShoots lists no Shoots, everything else live: a list made before a create.
type withoutShoots struct{ client.Reader }

func (r withoutShoots) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*gardencorev1beta1.ShootList); ok {
		return nil
	}
	return r.Reader.List(ctx, list, opts...)
}
