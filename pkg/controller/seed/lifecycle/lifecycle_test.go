package lifecycle

import (
	"context"
	"log/slog"
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/scheme"
)

const (
	monitor      = 40 * time.Second
	shootMonitor = 200 * time.Second
)

var start = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func readySeed(since time.Time) *gardencorev1beta1.Seed {
	seed := &gardencorev1beta1.Seed{ObjectMeta: metav1.ObjectMeta{Name: "s"}}
	seed.Status.Conditions = []gardencorev1beta1.Condition{{Type: gardencorev1beta1.GardenletReady, Status: "True", Reason: "GardenletReady",
		Message: "ready", LastTransitionTime: metav1.NewTime(since), LastUpdateTime: metav1.NewTime(since)}}
	return seed
}

func renewedAt(t time.Time) *coordinationv1.Lease {
	return &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: t}}}
}

// TestGardenletGoesSilent walks a fake clock through a gardenlet that renews its Lease once and
// then stops, applying each decision to the seed as the reconciler would.
func TestGardenletGoesSilent(t *testing.T) {
	clk := testclock.NewFakeClock(start)
	seed := readySeed(start)
	lease := renewedAt(start)
	decide := func() Decision {
		d := Decide(clk.Now(), monitor, shootMonitor, seed, lease)
		if d.GardenletReady != nil {
			seed.Status.Conditions = []gardencorev1beta1.Condition{*d.GardenletReady}
		}
		return d
	}

	clk.Step(monitor - time.Second)
	assert.Equal(t, Decision{}, decide(), "renewed within the monitor period")

	clk.Step(time.Second)
	d := decide()
	require.NotNil(t, d.GardenletReady, "exactly at the monitor period the gardenlet is overdue")
	assert.Equal(t, gardencorev1beta1.ConditionUnknown, d.GardenletReady.Status)
	assert.Equal(t, ReasonStatusUnknown, d.GardenletReady.Reason)
	assert.Equal(t, MessageSeed, d.GardenletReady.Message)
	assert.Equal(t, clk.Now(), d.GardenletReady.LastTransitionTime.Time)
	assert.False(t, d.ShootsUnknown)
	unknownSince := clk.Now()

	clk.Step(shootMonitor - time.Second)
	d = decide()
	assert.False(t, d.ShootsUnknown, "the shoot monitor period counts from the transition to Unknown")
	assert.Equal(t, unknownSince, d.GardenletReady.LastTransitionTime.Time, "an Unknown condition stays as it is")

	clk.Step(time.Second)
	assert.True(t, decide().ShootsUnknown)

	lease = renewedAt(clk.Now())
	assert.Equal(t, Decision{}, decide(), "a renewed Lease ends it (gardenlet sets its condition itself)")
}

func TestDecide(t *testing.T) {
	now := start.Add(time.Hour)
	expired := metav1.NewTime(now.Add(-time.Minute))
	valid := metav1.NewTime(now.Add(time.Minute))
	for name, tc := range map[string]struct {
		seed          *gardencorev1beta1.Seed
		lease         *coordinationv1.Lease
		wantCondition bool
		wantManaged   bool
		wantShoots    bool
	}{
		"new seed without conditions is given time": {seed: &gardencorev1beta1.Seed{}, lease: nil},
		"healthy":                  {seed: readySeed(start), lease: renewedAt(now.Add(-10 * time.Second))},
		"no lease at all":          {seed: readySeed(start), lease: nil, wantCondition: true},
		"lease never renewed":      {seed: readySeed(start), lease: &coordinationv1.Lease{}, wantCondition: true},
		"overdue, cert valid":      {seed: withCert(readySeed(start), &valid), lease: renewedAt(now.Add(-time.Minute)), wantCondition: true},
		"overdue, cert expired":    {seed: withCert(readySeed(start), &expired), lease: renewedAt(now.Add(-time.Minute)), wantCondition: true, wantManaged: true},
		"healthy, cert expired":    {seed: withCert(readySeed(start), &expired), lease: renewedAt(now)},
		"unknown for long: shoots": {seed: unknownSince(now.Add(-shootMonitor)), lease: renewedAt(start), wantCondition: true, wantShoots: true},
	} {
		t.Run(name, func(t *testing.T) {
			d := Decide(now, monitor, shootMonitor, tc.seed, tc.lease)
			assert.Equal(t, tc.wantCondition, d.GardenletReady != nil)
			assert.Equal(t, tc.wantManaged, d.ReconcileManagedSeed)
			assert.Equal(t, tc.wantShoots, d.ShootsUnknown)
		})
	}
}

func withCert(seed *gardencorev1beta1.Seed, expiry *metav1.Time) *gardencorev1beta1.Seed {
	seed.Status.ClientCertificateExpirationTimestamp = expiry
	return seed
}

func unknownSince(t time.Time) *gardencorev1beta1.Seed {
	seed := readySeed(t)
	seed.Status.Conditions[0].Status, seed.Status.Conditions[0].Reason, seed.Status.Conditions[0].Message = "Unknown", ReasonStatusUnknown, MessageSeed
	return seed
}

func TestSetShootStatusUnknown(t *testing.T) {
	now := start.Add(time.Hour)
	shoot := &gardencorev1beta1.Shoot{}
	shoot.Spec.Provider.Workers = []gardencorev1beta1.Worker{{Name: "w"}}
	shoot.Status.Conditions = []gardencorev1beta1.Condition{
		{Type: gardencorev1beta1.ShootAPIServerAvailable, Status: "True", Reason: "OK", Message: "ok", LastTransitionTime: metav1.NewTime(start), LastUpdateTime: metav1.NewTime(start)},
		{Type: "SomethingElse", Status: "True", Reason: "OK", Message: "ok"},
	}
	SetShootStatusUnknown(now, shoot)

	var types []gardencorev1beta1.ConditionType
	for _, c := range shoot.Status.Conditions {
		types = append(types, c.Type)
		if c.Type == "SomethingElse" {
			assert.Equal(t, gardencorev1beta1.ConditionTrue, c.Status, "conditions gardenlet does not maintain stay")
			continue
		}
		assert.Equal(t, gardencorev1beta1.ConditionUnknown, c.Status, c.Type)
		assert.Equal(t, ReasonStatusUnknown, c.Reason)
		assert.Equal(t, MessageShoot, c.Message)
		assert.Equal(t, now, c.LastTransitionTime.Time)
	}
	assert.Equal(t, []gardencorev1beta1.ConditionType{gardencorev1beta1.ShootAPIServerAvailable, "SomethingElse", gardencorev1beta1.ShootControlPlaneHealthy,
		gardencorev1beta1.ShootObservabilityComponentsHealthy, gardencorev1beta1.ShootEveryNodeReady, gardencorev1beta1.ShootSystemComponentsHealthy}, types)
	require.Len(t, shoot.Status.Constraints, 2)
	assert.Equal(t, gardencorev1beta1.ShootHibernationPossible, shoot.Status.Constraints[0].Type)
	assert.Equal(t, gardencorev1beta1.ShootMaintenancePreconditionsSatisfied, shoot.Status.Constraints[1].Type)

	again := shoot.DeepCopy()
	SetShootStatusUnknown(now.Add(time.Hour), again)
	assert.Equal(t, shoot, again, "a second tick changes nothing")

	workerless := &gardencorev1beta1.Shoot{}
	SetShootStatusUnknown(now, workerless)
	for _, c := range workerless.Status.Conditions {
		assert.NotEqual(t, gardencorev1beta1.ShootEveryNodeReady, c.Type, "a workerless shoot has no nodes")
	}
	assert.Len(t, workerless.Status.Conditions, 4)
}

// A sweep's Leases are listed before its Seeds: a Lease created in between is missing from the
// sweep's list. The gardenlet is confirmed overdue live before its condition is set Unknown.
func TestOverdueIsConfirmedLive(t *testing.T) {
	ctx := context.Background()
	clk := testclock.NewFakeClock(start.Add(time.Hour))
	seed := readySeed(start)
	lease := renewedAt(clk.Now())
	lease.Name, lease.Namespace = seed.Name, LeaseNamespace
	snapshot := fake.NewClientBuilder().WithScheme(scheme.Gardener).WithObjects(seed.DeepCopy()).Build()
	for _, tc := range []struct {
		name      string
		live      []client.Object
		wantReady gardencorev1beta1.ConditionStatus
	}{
		{"the Lease exists live: nothing is written", []client.Object{seed.DeepCopy(), lease.DeepCopy()}, "True"},
		{"no Lease live either: Unknown", []client.Object{seed.DeepCopy()}, gardencorev1beta1.ConditionUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			live := fake.NewClientBuilder().WithScheme(scheme.Gardener).WithObjects(tc.live...).WithStatusSubresource(&gardencorev1beta1.Seed{}).Build()
			r := &Reconciler{Live: live, Writer: function.NewWriter(live), Clock: clk, Log: slog.New(slog.DiscardHandler), MonitorPeriod: monitor, ShootMonitorPeriod: shootMonitor}
			require.NoError(t, r.Reconcile(ctx, function.Request{Key: client.ObjectKeyFromObject(seed), Reader: snapshot, Trigger: function.BySweep}))
			got := &gardencorev1beta1.Seed{}
			require.NoError(t, live.Get(ctx, client.ObjectKeyFromObject(seed), got))
			assert.Equal(t, tc.wantReady, got.Status.Conditions[0].Status)
		})
	}
}
