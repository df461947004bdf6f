package shoot_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/shoot"
	"github.com/gardener-knative/gardener-knative/pkg/controller/shoot/hibernation"
	"github.com/gardener-knative/gardener-knative/pkg/controller/shoot/maintenance"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

// scheduledShoot is Shoot i of a fleet on the CloudProfile profile: every Shoot has a
// maintenance window of one hour beginning at hour i%24 (UTC); every fourth has a hibernation
// schedule starting at 10:40 UTC, every fourth other one a schedule starting at 20:00.
func scheduledShoot(namespace, profile string, i int) *gardencorev1beta1.Shoot {
	s := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("shoot-%05d", i), Labels: map[string]string{"bench": "schedules"}}}
	s.Spec.CloudProfileName = ptr.To(profile)
	s.Spec.Kubernetes.Version = "1.30.1"
	s.Spec.Provider.Workers = []gardencorev1beta1.Worker{{Name: "pool", Machine: gardencorev1beta1.Machine{
		Type: "m5.large", Image: &gardencorev1beta1.ShootMachineImage{Name: "gardenlinux", Version: ptr.To("1592.2.0")},
	}}}
	begin := fmt.Sprintf("%02d0000+0000", i%24)
	end := fmt.Sprintf("%02d0000+0000", (i+1)%24)
	s.Spec.Maintenance = &gardencorev1beta1.Maintenance{
		AutoUpdate: &gardencorev1beta1.MaintenanceAutoUpdate{KubernetesVersion: true, MachineImageVersion: ptr.To(true)},
		TimeWindow: &gardencorev1beta1.MaintenanceTimeWindow{Begin: begin, End: end},
	}
	switch i % 4 {
	case 0:
		s.Spec.Hibernation = &gardencorev1beta1.Hibernation{Schedules: []gardencorev1beta1.HibernationSchedule{{Start: ptr.To("40 10 * * *"), End: ptr.To("0 6 * * *")}}}
	case 1:
		s.Spec.Hibernation = &gardencorev1beta1.Hibernation{Schedules: []gardencorev1beta1.HibernationSchedule{{Start: ptr.To("0 20 * * 1-5"), End: ptr.To("0 8 * * 1-5"), Location: ptr.To("Europe/Berlin")}}}
	}
	return s
}

// scheduleDay is a fake time on the day after tomorrow: every Shoot created now is older, and
// none has a hibernation trigger yet.
func scheduleDay(hour, minute int) time.Time {
	return time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 2).Add(time.Duration(hour)*time.Hour + time.Duration(minute)*time.Minute)
}

// createFleet creates n reconciled Shoots (scheduledShoot) in namespaces of 100, in parallel, and the
// CloudProfile they use; both are removed when the test ends.
func createFleet(tb testing.TB, n int) string {
	tb.Helper()
	ctx := context.Background()
	profile := &gardencorev1beta1.CloudProfile{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-"}, Spec: profileSpec()}
	require.NoError(tb, env.Client.Create(ctx, profile))
	namespaces := make([]string, (n+99)/100)
	for i := range namespaces {
		namespaces[i] = env.Namespace(tb)
	}
	tb.Cleanup(func() {
		_ = env.Client.Delete(ctx, profile)
		for _, ns := range namespaces {
			_ = env.Client.DeleteAllOf(ctx, &gardencorev1beta1.Shoot{}, client.InNamespace(ns))
			_ = env.Client.DeleteAllOf(ctx, &corev1.Event{}, client.InNamespace(ns))
		}
	})
	require.NoError(tb, testenv.Parallel(n, func(i int) error {
		return createReconciledShoot(ctx, scheduledShoot(namespaces[i/100], profile.Name, i))
	}))
	return profile.Name
}

// createReconciledShoot creates the Shoot and reports it reconciled, as gardenlet would.
func createReconciledShoot(ctx context.Context, s *gardencorev1beta1.Shoot) error {
	if err := env.Client.Create(ctx, s); err != nil {
		return err
	}
	s.Status.ObservedGeneration = s.Generation
	s.Status.LastOperation = lastOperation(gardencorev1beta1.LastOperationTypeReconcile, gardencorev1beta1.LastOperationStateSucceeded)
	return env.Client.Status().Update(ctx, s)
}

func writes(requests map[string]int) int {
	return requests["create"] + requests["patch"] + requests["update"] + requests["delete"]
}

// A tick at which no Shoot is due reads its pages and writes nothing: here 400 Shoots of every
// kind of schedule and window, at a time none of them is due, after a first tick that did what
// was due.
func TestScheduleTicksWithNothingDueWriteNothing(t *testing.T) {
	createFleet(t, 400)
	h := functiontest.New(t, env, shoot.Function, functiontest.AsFunction(), functiontest.At(scheduleDay(10, 40)))
	// The first tick: the 100 Shoots whose schedule starts at 10:40 hibernate (spec and
	// status), the 17 whose window began at 10:00 are maintained (status, spec, status); at
	// least, as the package's other tests may have left Shoots due as well.
	hibernating := h.Measure(func() { h.Sweep(hibernation.Name) })
	assert.GreaterOrEqual(t, hibernating["patch"], 2*100)
	maintaining := h.Measure(func() { h.Sweep(maintenance.Name) })
	assert.GreaterOrEqual(t, maintaining["patch"], 3*17)

	h.Clock.SetTime(scheduleDay(10, 41))
	for _, sweep := range []string{hibernation.Name, maintenance.Name} {
		requests := h.Measure(func() { h.Sweep(sweep) })
		assert.Zero(t, writes(requests), "%s: %v", sweep, requests)
		assert.Zero(t, requests["get"], "%s: everything is read from the sweep's lists: %v", sweep, requests)
	}
}

// BenchmarkScheduleTicks measures the hibernation and the maintenance tick over 10,000 Shoots
// (scheduledShoot) against a real kube-apiserver, through HTTP: a tick at which some are due
// (2,500 Shoots hibernate at 10:40; the 417 whose window began at 10:00 are maintained), and a
// tick a minute later at which none is (the loop). It reports wall time and requests by verb.
// Creating the fleet takes a minute or two.
func BenchmarkScheduleTicks(b *testing.B) {
	const fleet = 10000
	createFleet(b, fleet)
	h := functiontest.New(b, env, shoot.Function, functiontest.AsFunction(), functiontest.At(scheduleDay(10, 40)))

	// Reported after the loop: b.Loop resets the metrics reported before it.
	dueMetrics := map[string]float64{}
	for _, sweep := range []string{hibernation.Name, maintenance.Name} {
		start := time.Now()
		due := h.Measure(func() { h.Sweep(sweep) })
		dueMetrics[sweep+"-due-ms"] = float64(time.Since(start).Milliseconds())
		for _, verb := range []string{"list", "get", "patch", "create"} {
			dueMetrics[sweep+"-due-"+verb+"-requests"] = float64(due[verb])
		}
	}
	h.Clock.SetTime(scheduleDay(10, 41))

	h.ResetRequests()
	var hibernationTime, maintenanceTime time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		h.Sweep(hibernation.Name)
		hibernationTime += time.Since(start)
		start = time.Now()
		h.Sweep(maintenance.Name)
		maintenanceTime += time.Since(start)
	}
	b.StopTimer()
	perTick := func(verb string) float64 { return float64(h.Requests(verb)) / float64(b.N) }
	b.ReportMetric(float64(hibernationTime.Milliseconds())/float64(b.N), "hibernation-idle-ms")
	b.ReportMetric(float64(maintenanceTime.Milliseconds())/float64(b.N), "maintenance-idle-ms")
	b.ReportMetric(perTick("list"), "idle-lists/both-ticks")
	b.ReportMetric(perTick("get"), "idle-gets/both-ticks")
	b.ReportMetric(perTick("patch")+perTick("create")+perTick("update")+perTick("delete"), "idle-writes/both-ticks")
	for unit, value := range dueMetrics {
		b.ReportMetric(value, unit)
	}
}
