package managedseedset

import (
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	seedmanagementv1alpha1 "github.com/gardener/gardener/pkg/apis/seedmanagement/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func TestFunctionIsValid(t *testing.T) {
	require.NoError(t, Function.Validate())
}

func eventOf(t *testing.T, obj runtime.Object, created bool) function.Event {
	t.Helper()
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	require.NoError(t, err)
	return function.Event{Created: created, Object: &unstructured.Unstructured{Object: content}}
}

func TestSetPredicate(t *testing.T) {
	observed := set(1, nil)
	observed.Status.ObservedGeneration = observed.Generation
	changed := observed.DeepCopy()
	changed.Generation++
	deleting := observed.DeepCopy()
	deleting.DeletionTimestamp = &earlier

	assert.True(t, SetPredicate(eventOf(t, observed, true)), "creation")
	assert.False(t, SetPredicate(eventOf(t, observed, false)), "a status update of an observed spec")
	assert.True(t, SetPredicate(eventOf(t, changed, false)), "a spec not observed yet")
	assert.True(t, SetPredicate(eventOf(t, deleting, false)), "deletion")
	ev := eventOf(t, observed, false)
	ev.Deleted = true
	assert.False(t, SetPredicate(ev), "the set is gone")
}

func TestControlledBySet(t *testing.T) {
	owned := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: "set-0", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "seedmanagement.gardener.cloud/v1alpha1", Kind: "ManagedSeedSet", Name: "set", Controller: ptr.To(true)},
	}}}
	notController := owned.DeepCopy()
	notController.OwnerReferences[0].Controller = nil
	otherKind := owned.DeepCopy()
	otherKind.OwnerReferences[0].Kind = "ManagedSeed"
	assert.True(t, ControlledBySet(eventOf(t, owned, false)))
	assert.False(t, ControlledBySet(eventOf(t, notController, false)))
	assert.False(t, ControlledBySet(eventOf(t, otherKind, false)))
	assert.False(t, ControlledBySet(eventOf(t, &gardencorev1beta1.Shoot{}, false)))
}

func TestShootEventMatters(t *testing.T) {
	withCounts := func(s *seedmanagementv1alpha1.ManagedSeedSet, replicas, ready int32) *seedmanagementv1alpha1.ManagedSeedSet {
		s.Status.Replicas, s.Status.ReadyReplicas = replicas, ready
		return s
	}
	reconciling := replicaIn(1, StatusShootReconciling, false, ShootProgressing).Shoot
	reconciled := replicaIn(1, StatusShootReconciled, false, ShootProgressing).Shoot
	deleteFailed := replicaIn(1, StatusShootDeleteFailed, false, ShootProgressing).Shoot
	healthy := ready(1).Shoot
	unhealthy := replicaIn(1, StatusManagedSeedRegistered, true, ShootUnhealthy).Shoot
	deleting := replicaIn(1, StatusShootDeleting, false, ShootProgressing).Shoot
	pending := func(reason seedmanagementv1alpha1.PendingReplicaReason) *seedmanagementv1alpha1.ManagedSeedSet {
		return withCounts(set(2, pendingFor("set-1", reason, nil)), 2, 1)
	}
	for _, tc := range []struct {
		name    string
		set     *seedmanagementv1alpha1.ManagedSeedSet
		shoot   *gardencorev1beta1.Shoot
		deleted bool
		want    bool
	}{
		{"pending shoot still reconciling", pending(seedmanagementv1alpha1.ShootReconcilingReason), reconciling, false, false},
		{"pending shoot reconciled", pending(seedmanagementv1alpha1.ShootReconcilingReason), reconciled, false, true},
		{"pending shoot's deletion failed", pending(seedmanagementv1alpha1.ShootDeletingReason), deleteFailed, false, true},
		{"pending shoot deleted", pending(seedmanagementv1alpha1.ShootDeletingReason), deleting, true, true},
		{"pending shoot healthy again", pending(seedmanagementv1alpha1.ShootNotHealthyReason), healthy, false, true},
		{"another shoot deleted", pending(seedmanagementv1alpha1.ShootReconcilingReason), withName(reconciled, "set-0"), true, false},
		{"a shoot of a fully ready set turns unhealthy", withCounts(set(2, nil), 2, 2), unhealthy, false, true},
		{"a healthy shoot of a fully ready set", withCounts(set(2, nil), 2, 2), healthy, false, false},
		{"a healthy shoot of a set with replicas not ready", withCounts(set(2, nil), 2, 1), healthy, false, true},
		{"an unhealthy shoot of a set with replicas not ready", withCounts(set(2, nil), 2, 1), unhealthy, false, false},
		{"a shoot being deleted", withCounts(set(2, nil), 2, 1), deleting, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, ShootEventMatters(tc.set, tc.shoot, tc.deleted))
		})
	}
}

func TestManagedSeedAndSeedEventMatters(t *testing.T) {
	preparing := set(1, pendingFor("set-0", seedmanagementv1alpha1.ManagedSeedPreparingReason, nil))
	preparing.Status.Replicas = 1
	assert.False(t, ManagedSeedEventMatters(preparing, replicaIn(0, StatusManagedSeedPreparing, false, ShootHealthy).ManagedSeed, false))
	assert.True(t, ManagedSeedEventMatters(preparing, ready(0).ManagedSeed, false), "registered")
	deletingSet := set(0, pendingFor("set-0", seedmanagementv1alpha1.ManagedSeedDeletingReason, nil))
	assert.True(t, ManagedSeedEventMatters(deletingSet, replicaIn(0, StatusManagedSeedDeleting, false, ShootHealthy).ManagedSeed, true), "the awaited deletion")
	assert.False(t, ManagedSeedEventMatters(preparing, ready(3).ManagedSeed, true), "the deletion of a replica the set does not wait for")

	seedNotReady := set(1, pendingFor("set-0", seedmanagementv1alpha1.SeedNotReadyReason, nil))
	seedNotReady.Status.Replicas = 1
	assert.True(t, SeedEventMatters(seedNotReady, ready(0).Seed), "the pending replica's seed is ready")
	assert.False(t, SeedEventMatters(seedNotReady, replicaIn(0, StatusManagedSeedRegistered, false, ShootHealthy).Seed))
	allReady := set(1, nil)
	allReady.Status.Replicas, allReady.Status.ReadyReplicas = 1, 1
	assert.False(t, SeedEventMatters(allReady, ready(0).Seed))
	assert.True(t, SeedEventMatters(allReady, replicaIn(0, StatusManagedSeedRegistered, false, ShootHealthy).Seed), "a ready replica's seed is no longer ready")
}

func withName(s *gardencorev1beta1.Shoot, name string) *gardencorev1beta1.Shoot {
	s = s.DeepCopy()
	s.Name = name
	return s
}
