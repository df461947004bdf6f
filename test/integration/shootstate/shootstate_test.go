package shootstate_test

import (
	"context"
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/gardener-knative/gardener-knative/pkg/controller/shootstate"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

func fresh[T client.Object](t testing.TB, obj T) T {
	t.Helper()
	require.NoError(t, env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj))
	return obj
}

// operate is gardenlet reporting the Shoot's last operation.
func operate(t testing.TB, s *gardencorev1beta1.Shoot, opType gardencorev1beta1.LastOperationType, state gardencorev1beta1.LastOperationState) *gardencorev1beta1.Shoot {
	t.Helper()
	s = fresh(t, s)
	s.Status.LastOperation = &gardencorev1beta1.LastOperation{Type: opType, State: state, LastUpdateTime: metav1.Now()}
	require.NoError(t, env.Client.Status().Update(context.Background(), s))
	return s
}

// shootAndState creates a Shoot whose last operation is a succeeded Reconcile and, as gardenlet
// does when a migration starts, its ShootState.
func shootAndState(t testing.TB, ns, name string) (*gardencorev1beta1.Shoot, *gardencorev1beta1.ShootState) {
	t.Helper()
	s := testenv.WorkerlessShoot(ns, name)
	require.NoError(t, env.Client.Create(context.Background(), s))
	s = operate(t, s, gardencorev1beta1.LastOperationTypeReconcile, gardencorev1beta1.LastOperationStateSucceeded)
	state := &gardencorev1beta1.ShootState{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	require.NoError(t, env.Client.Create(context.Background(), state))
	return s, state
}

func finalized(t testing.TB, state *gardencorev1beta1.ShootState) bool {
	t.Helper()
	return controllerutil.ContainsFinalizer(fresh(t, state), shootstate.Finalizer)
}

func TestFinalizerDuringMigrateAndRestore(t *testing.T) {
	h := functiontest.New(t, env, shootstate.Function, functiontest.AsFunction())
	s, state := shootAndState(t, env.ProjectNamespace(t), "migrating")
	h.Send("add", state)
	assert.False(t, finalized(t, state), "a Reconcile operation: no finalizer")

	s = operate(t, s, gardencorev1beta1.LastOperationTypeMigrate, gardencorev1beta1.LastOperationStateProcessing)
	assert.Equal(t, map[string]int{"get": 2, "patch": 1}, h.Measure(func() { h.Send("update", s) }), "the ShootState's metadata, the Shoot, the finalizer")
	assert.True(t, finalized(t, state), "Migrate")
	assert.Equal(t, map[string]int{"get": 2}, h.Measure(func() { h.Send("update", s) }), "nothing to change")

	s = operate(t, s, gardencorev1beta1.LastOperationTypeRestore, gardencorev1beta1.LastOperationStateProcessing)
	h.Send("update", s)
	assert.True(t, finalized(t, state), "an unfinished Restore")

	s = operate(t, s, gardencorev1beta1.LastOperationTypeRestore, gardencorev1beta1.LastOperationStateSucceeded)
	h.Send("update", s)
	assert.False(t, finalized(t, state), "the Restore succeeded")

	// The state can go now.
	require.NoError(t, testenv.DeleteConfirmed(context.Background(), env.Client, state))
}

// A restore that fails and becomes a Reconcile looks like any Reconcile update of any Shoot: the
// event is filtered and the sweep removes the finalizer.
func TestSweepRemovesTheFinalizerAfterARestoreBecameAReconcile(t *testing.T) {
	h := functiontest.New(t, env, shootstate.Function, functiontest.AsFunction())
	s, state := shootAndState(t, env.ProjectNamespace(t), "restored")
	s = operate(t, s, gardencorev1beta1.LastOperationTypeRestore, gardencorev1beta1.LastOperationStateFailed)
	h.Sweep(shootstate.Name)
	assert.True(t, finalized(t, state), "a failed Restore keeps it")

	s = operate(t, s, gardencorev1beta1.LastOperationTypeReconcile, gardencorev1beta1.LastOperationStateProcessing)
	assert.Empty(t, h.Measure(func() { h.Send("update", s) }), "filtered")
	assert.True(t, finalized(t, state))
	h.Sweep(shootstate.Name)
	assert.False(t, finalized(t, state))

	counts := h.Measure(func() { h.Sweep(shootstate.Name) })
	assert.Equal(t, 1, counts["list"], "one LIST of the ShootStates' metadata")
	assert.NotContains(t, counts, "patch", "a sweep with nothing changed writes nothing")
	assert.Equal(t, countShootStates(t), counts["get"], "a GET of each ShootState's Shoot")
}

func countShootStates(t testing.TB) int {
	t.Helper()
	list := &gardencorev1beta1.ShootStateList{}
	require.NoError(t, env.Client.List(context.Background(), list))
	return len(list.Items)
}

// A ShootState whose Shoot does not exist or was never reconciled is left as it is; the event is
// acknowledged (Gardener retries it with backoff; here the Shoot's events and the sweep come back).
func TestShootStateWithoutAShootToDecideFrom(t *testing.T) {
	h := functiontest.New(t, env, shootstate.Function, functiontest.AsFunction())
	ns := env.ProjectNamespace(t)
	orphan := &gardencorev1beta1.ShootState{ObjectMeta: metav1.ObjectMeta{Name: "orphan", Namespace: ns}}
	require.NoError(t, env.Client.Create(context.Background(), orphan))
	h.Send("add", orphan)
	assert.False(t, finalized(t, orphan))

	unreconciled := testenv.WorkerlessShoot(ns, "unreconciled")
	require.NoError(t, env.Client.Create(context.Background(), unreconciled))
	state := &gardencorev1beta1.ShootState{ObjectMeta: metav1.ObjectMeta{Name: "unreconciled", Namespace: ns}}
	require.NoError(t, env.Client.Create(context.Background(), state))
	h.Send("add", state)
	assert.False(t, finalized(t, state))

	// A Shoot event for a Shoot without a ShootState costs one GET.
	s := operate(t, unreconciled, gardencorev1beta1.LastOperationTypeMigrate, gardencorev1beta1.LastOperationStateProcessing)
	require.NoError(t, testenv.DeleteConfirmed(context.Background(), env.Client, state))
	assert.Equal(t, map[string]int{"get": 1}, h.Measure(func() { h.Send("update", s) }))
}
