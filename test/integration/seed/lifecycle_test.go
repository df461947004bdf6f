package seed_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	seedmanagementv1alpha1 "github.com/gardener/gardener/pkg/apis/seedmanagement/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/seed/lifecycle"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

// newShoot creates a Shoot in ns scheduled to seedName (spec and status), with a healthy
// APIServerAvailable condition as its gardenlet reported it.
func newShoot(t testing.TB, ns, name, seedName string) *gardencorev1beta1.Shoot {
	t.Helper()
	shoot, err := createShoot(ns, name, seedName)
	require.NoError(t, err)
	return shoot
}

// createShoot is newShoot for goroutines, which must not fail the test themselves.
func createShoot(ns, name, seedName string) (*gardencorev1beta1.Shoot, error) {
	ctx := context.Background()
	shoot := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	shoot.Spec.SeedName = ptr.To(seedName)
	shoot.Spec.Provider.Workers = []gardencorev1beta1.Worker{{Name: "worker"}}
	if err := env.Client.Create(ctx, shoot); err != nil {
		return nil, err
	}
	shoot.Status.SeedName = ptr.To(seedName)
	shoot.Status.Conditions = []gardencorev1beta1.Condition{{Type: gardencorev1beta1.ShootAPIServerAvailable, Status: gardencorev1beta1.ConditionTrue,
		Reason: "HealthzRequestSucceeded", Message: "API server /healthz endpoint responded with success status code.",
		LastTransitionTime: metav1.NewTime(start), LastUpdateTime: metav1.NewTime(start)}}
	return shoot, env.Client.Status().Update(ctx, shoot)
}

func getShoot(t testing.TB, shoot *gardencorev1beta1.Shoot) *gardencorev1beta1.Shoot {
	t.Helper()
	got := &gardencorev1beta1.Shoot{}
	require.NoError(t, env.Client.Get(context.Background(), client.ObjectKeyFromObject(shoot), got))
	return got
}

// TestGardenletStopsRenewingItsLease follows a gardenlet that renews its real Lease, then stops:
// tick by tick on the fake clock, GardenletReady turns Unknown after the monitor period, its
// ManagedSeed is told to reconcile (the client certificate expired), and the conditions and
// constraints of the seed's Shoots turn Unknown after the shoot monitor period.
func TestGardenletStopsRenewingItsLease(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	s := newSeed(t, gardenletReady(start))
	s.Status.ClientCertificateExpirationTimestamp = ptr.To(metav1.NewTime(start.Add(30 * time.Second)))
	require.NoError(t, env.Client.Status().Update(ctx, s))
	other := newSeed(t, gardenletReady(start))
	renewLease(t, s.Name, start)
	renewLease(t, other.Name, start)
	ensureNamespace(t, "garden")
	managedSeed := &seedmanagementv1alpha1.ManagedSeed{ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: "garden"}}
	managedSeed.Spec.Shoot = &seedmanagementv1alpha1.Shoot{Name: s.Name}
	require.NoError(t, env.Client.Create(ctx, managedSeed))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), managedSeed) })
	ns := env.Namespace(t)
	onSeed := []*gardencorev1beta1.Shoot{newShoot(t, ns, "a", s.Name), newShoot(t, ns, "b", s.Name)}
	elsewhere := newShoot(t, ns, "elsewhere", other.Name)

	tick := func() { h.Sweep(lifecycle.ReconcilerName) }
	gardenletReadyOf := func(name string) *gardencorev1beta1.Condition {
		return condition(t, name, gardencorev1beta1.GardenletReady)
	}

	// The other gardenlet keeps renewing; this one renews once more at 10 s, then falls silent.
	for now := 10 * time.Second; now <= 40*time.Second; now += 10 * time.Second {
		h.Clock.SetTime(start.Add(now))
		renewLease(t, other.Name, h.Clock.Now())
		if now == 10*time.Second {
			renewLease(t, s.Name, h.Clock.Now())
		}
		tick()
		assert.Equal(t, gardencorev1beta1.ConditionTrue, gardenletReadyOf(s.Name).Status, "at %s the Lease is %s old", now, now-10*time.Second)
	}

	h.Clock.SetTime(start.Add(50 * time.Second))
	renewLease(t, other.Name, h.Clock.Now())
	tick()
	c := gardenletReadyOf(s.Name)
	assert.Equal(t, gardencorev1beta1.ConditionUnknown, c.Status, "40 s after the last renewal")
	assert.Equal(t, "StatusUnknown", c.Reason)
	assert.Equal(t, "Gardenlet stopped posting status updates.", c.Message)
	assert.Equal(t, h.Clock.Now(), c.LastTransitionTime.UTC())
	assert.Equal(t, gardencorev1beta1.ConditionTrue, gardenletReadyOf(other.Name).Status, "a renewing gardenlet stays ready")
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(managedSeed), managedSeed))
	assert.Equal(t, "reconcile", managedSeed.Annotations["gardener.cloud/operation"], "an expired client certificate makes the ManagedSeed reconcile")
	for _, shoot := range onSeed {
		assert.Equal(t, gardencorev1beta1.ConditionTrue, getShoot(t, shoot).Status.Conditions[0].Status, "shoots wait for the shoot monitor period")
	}

	unknownSince := h.Clock.Now()
	h.Clock.SetTime(unknownSince.Add(200*time.Second - time.Second))
	renewLease(t, other.Name, h.Clock.Now())
	tick()
	for _, shoot := range onSeed {
		assert.Equal(t, gardencorev1beta1.ConditionTrue, getShoot(t, shoot).Status.Conditions[0].Status)
	}

	h.Clock.SetTime(unknownSince.Add(200 * time.Second))
	renewLease(t, other.Name, h.Clock.Now())
	tick()
	for _, shoot := range onSeed {
		got := getShoot(t, shoot)
		require.Len(t, got.Status.Conditions, 5, "every condition gardenlet maintains")
		for _, c := range append(got.Status.Conditions, got.Status.Constraints...) {
			assert.Equal(t, gardencorev1beta1.ConditionUnknown, c.Status, "%s of %s", c.Type, shoot.Name)
			assert.Equal(t, "StatusUnknown", c.Reason)
			assert.Equal(t, "Gardenlet stopped sending heartbeats.", c.Message)
		}
		assert.Len(t, got.Status.Constraints, 2)
	}
	assert.Equal(t, gardencorev1beta1.ConditionTrue, getShoot(t, elsewhere).Status.Conditions[0].Status, "shoots of other seeds stay")

	t.Run("the next tick writes nothing", func(t *testing.T) {
		h.Clock.Step(10 * time.Second)
		renewLease(t, other.Name, h.Clock.Now())
		counts := h.Measure(tick)
		assert.Equal(t, map[string]int{"list": 3, "get": 2}, counts, "Seeds, Leases, the silent seed's Shoots, its Lease read live (overdue is confirmed), and its ManagedSeed")
	})
}

// TestHealthyTickCost: a tick over 50 seeds whose gardenlets renew their Leases, with 500
// Shoots, costs one LIST of Seeds and one of Leases, and writes nothing.
func TestHealthyTickCost(t *testing.T) {
	h := newHarness(t)
	ns := env.Namespace(t)
	for i := range 50 {
		s := newSeed(t, gardenletReady(start))
		renewLease(t, s.Name, start)
		for j := range 10 {
			newShoot(t, ns, fmt.Sprintf("shoot-%d-%d", i, j), s.Name)
		}
	}
	h.Clock.Step(30 * time.Second)
	counts := h.Measure(func() { h.Sweep(lifecycle.ReconcilerName) })
	total := 0
	for _, n := range counts {
		total += n
	}
	assert.LessOrEqual(t, total, 3, "requests: %v", counts)
	assert.Equal(t, map[string]int{"list": 2}, counts, "one LIST of Seeds, one of Leases; no Shoot is read, nothing is written")
}

// TestSweepConflictReconcilesFromLiveState: when the seed changes between the sweep's LIST and
// the function's status patch, the patch conflicts (it is optimistic), and the seed is
// reconciled again from live state: the seed and its gardenlet's Lease are read anew, and the
// condition is set all the same.
func TestSweepConflictReconcilesFromLiveState(t *testing.T) {
	s := newSeed(t, gardenletReady(start))
	renewLease(t, s.Name, start)
	statusPath := "/apis/core.gardener.cloud/v1beta1/seeds/" + s.Name + "/status"
	changed := &changeBeforeFirst{method: http.MethodPatch, path: statusPath, change: func() error {
		return env.Client.Patch(context.Background(), s.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"changed":"meanwhile"}}}`)))
	}}
	h := newHarness(t, functiontest.WithRESTConfig(func(cfg *rest.Config) { cfg.Wrap(changed.wrap) }))
	h.Clock.SetTime(start.Add(50 * time.Second))

	counts := h.Measure(func() { h.Sweep(lifecycle.ReconcilerName) })

	require.NoError(t, changed.err)
	require.True(t, changed.done, "the seed changed before the function's patch")
	assert.Equal(t, gardencorev1beta1.ConditionUnknown, condition(t, s.Name, gardencorev1beta1.GardenletReady).Status, "set after the conflict")
	assert.Equal(t, "meanwhile", getSeed(t, s.Name).Labels["changed"], "the other writer's change stays")
	assert.Equal(t, map[string]int{"list": 2, "patch": 2, "get": 3}, counts, "the sweep's two LISTs, the live GET confirming the overdue Lease, the patch that conflicted, the live GETs of the seed and its Lease, the patch that took")
}

// changeBeforeFirst makes a change, through change, just before the first request of method to
// path passes its transport: another writer, first.
type changeBeforeFirst struct {
	method, path string
	change       func() error
	once         sync.Once
	done         bool
	err          error
}

func (c *changeBeforeFirst) wrap(next http.RoundTripper) http.RoundTripper {
	return testenv.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
		if req.Method == c.method && req.URL.Path == c.path {
			c.once.Do(func() { c.done, c.err = true, c.change() })
		}
		return next.RoundTrip(req)
	})
}
