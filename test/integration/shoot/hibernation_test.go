package shoot_test

import (
	"context"
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/shoot"
	"github.com/gardener-knative/gardener-knative/pkg/controller/shoot/hibernation"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
)

// everyOtherMinute hibernates at even minutes and wakes up at odd ones.
var everyOtherMinute = gardencorev1beta1.HibernationSchedule{Start: ptr.To("*/2 * * * *"), End: ptr.To("1-59/2 * * * *")}

// removedAtEnd deletes the Shoot when the test ends: the sweeps of later tests in the package
// look at every Shoot, and one that is due every other minute would keep them busy.
func removedAtEnd(t testing.TB, s *gardencorev1beta1.Shoot) *gardencorev1beta1.Shoot {
	t.Helper()
	t.Cleanup(func() { _ = client.IgnoreNotFound(env.Client.Delete(context.Background(), s.DeepCopy())) })
	return s
}

func withSchedules(schedules ...gardencorev1beta1.HibernationSchedule) func(*gardencorev1beta1.Shoot) {
	return func(s *gardencorev1beta1.Shoot) {
		s.Spec.Hibernation = &gardencorev1beta1.Hibernation{Schedules: schedules}
	}
}

// hibernated is the Shoot's spec.hibernation.enabled (nil when unset) and its last trigger.
func hibernated(t testing.TB, s *gardencorev1beta1.Shoot) (*bool, *time.Time) {
	t.Helper()
	s = fresh(t, s)
	var trigger *time.Time
	if s.Status.LastHibernationTriggerTime != nil {
		trigger = &s.Status.LastHibernationTriggerTime.Time
	}
	return s.Spec.Hibernation.Enabled, trigger
}

// events are the Events recorded about the Shoot, by reason, with their counts.
func events(t testing.TB, s *gardencorev1beta1.Shoot) map[string]int32 {
	t.Helper()
	list := &corev1.EventList{}
	require.NoError(t, env.Client.List(context.Background(), list, client.InNamespace(s.Namespace)))
	counts := map[string]int32{}
	for _, e := range list.Items {
		if e.InvolvedObject.Name == s.Name {
			counts[e.Reason+": "+e.Message] += e.Count
		}
	}
	return counts
}

// nextEvenMinute is the first even minute at least a minute after t: a boundary the Shoots of a
// test created now have not passed yet.
func nextEvenMinute(t time.Time) time.Time {
	next := t.Truncate(time.Minute).Add(2 * time.Minute)
	if next.Minute()%2 == 1 {
		next = next.Add(time.Minute)
	}
	return next
}

func TestHibernationFollowsTheSchedule(t *testing.T) {
	now := time.Now()
	start := nextEvenMinute(now)
	f := newFixture(t, functiontest.AsFunction(), functiontest.At(now))
	s := removedAtEnd(t, f.shootWithSpec(t, "sleepy", withSchedules(everyOtherMinute)))

	f.Sweep(hibernation.Name)
	enabled, trigger := hibernated(t, s)
	assert.Nil(t, enabled, "no boundary passed since the Shoot was created")
	assert.Nil(t, trigger)

	f.Clock.SetTime(start.Add(3 * time.Second)) // a tick a little late
	f.Sweep(hibernation.Name)
	enabled, trigger = hibernated(t, s)
	assert.Equal(t, ptr.To(true), enabled)
	require.NotNil(t, trigger)
	assert.Equal(t, start.Add(3*time.Second).UTC(), trigger.UTC())
	assert.Equal(t, map[string]int32{"Hibernated: Hibernating cluster due to schedule": 1}, events(t, s))

	// The same tick again, and a later one before the next boundary: nothing to do.
	writes := f.Measure(func() {
		f.Sweep(hibernation.Name)
		f.Clock.SetTime(start.Add(59 * time.Second))
		f.Sweep(hibernation.Name)
	})
	assert.Zero(t, writes["patch"]+writes["create"], "no double trigger: %v", writes)

	f.Clock.SetTime(start.Add(time.Minute))
	f.Sweep(hibernation.Name)
	enabled, _ = hibernated(t, s)
	assert.Equal(t, ptr.To(false), enabled, "woken up at the odd minute")

	// Lost ticks: four boundaries pass, the next tick acts once, on the latest (a wake-up).
	f.Clock.SetTime(start.Add(5*time.Minute + 10*time.Second))
	f.Sweep(hibernation.Name)
	enabled, trigger = hibernated(t, s)
	assert.Equal(t, ptr.To(false), enabled)
	assert.Equal(t, start.Add(5*time.Minute+10*time.Second).UTC(), trigger.UTC())
	assert.Equal(t, map[string]int32{
		"Hibernated: Hibernating cluster due to schedule": 1,
		"WokenUp: Waking up cluster due to schedule":      2,
	}, events(t, s))
}

func TestHibernationSkipsFailedAndDeletingShoots(t *testing.T) {
	start := nextEvenMinute(time.Now())
	f := newFixture(t, functiontest.AsFunction(), functiontest.At(start))
	failed := removedAtEnd(t, f.shootWithSpec(t, "failed", withSchedules(everyOtherMinute)))
	failed = writeShootStatus(t, failed, func(s *gardencorev1beta1.ShootStatus) {
		s.LastOperation = lastOperation(gardencorev1beta1.LastOperationTypeReconcile, gardencorev1beta1.LastOperationStateFailed)
	})
	deleting := f.shootWithSpec(t, "deleting", func(s *gardencorev1beta1.Shoot) {
		withSchedules(everyOtherMinute)(s)
		s.Finalizers = []string{"test.gardener.cloud/keep"}
	})
	require.NoError(t, env.Client.Delete(context.Background(), deleting))
	t.Cleanup(func() {
		deleting = fresh(t, deleting)
		deleting.Finalizers = nil
		require.NoError(t, env.Client.Update(context.Background(), deleting))
	})

	f.Clock.SetTime(start.Add(2 * time.Minute))
	f.Sweep(hibernation.Name)
	for _, s := range []*gardencorev1beta1.Shoot{failed, deleting} {
		enabled, trigger := hibernated(t, s)
		assert.Nil(t, enabled, s.Name)
		assert.Nil(t, trigger, s.Name)
	}

	// A changed spec is no longer the one that failed: the schedule applies again.
	failed = fresh(t, failed)
	failed.Spec.Hibernation.Schedules = append(failed.Spec.Hibernation.Schedules, gardencorev1beta1.HibernationSchedule{End: ptr.To("0 0 1 1 *")})
	require.NoError(t, env.Client.Update(context.Background(), failed))
	f.Sweep(hibernation.Name)
	enabled, _ := hibernated(t, failed)
	assert.Equal(t, ptr.To(true), enabled)
}

func TestHibernationTriggerDeadline(t *testing.T) {
	created := time.Now()
	// A daily boundary three hours after the Shoot's creation, looked at five hours after it:
	// later than Gardener's default deadline of two hours.
	boundary := created.Add(3 * time.Hour).UTC()
	daily := gardencorev1beta1.HibernationSchedule{Start: ptr.To(boundary.Format("4 15 * * *"))}
	late := created.Add(5*time.Hour + time.Minute)

	f := newFixture(t, functiontest.AsFunction(), functiontest.At(late))
	s := removedAtEnd(t, f.shootWithSpec(t, "missed", withSchedules(daily)))
	f.Sweep(hibernation.Name)
	enabled, _ := hibernated(t, s)
	assert.Nil(t, enabled, "the boundary is older than the deadline")

	cfg, err := function.LoadConfig(shoot.Function, function.ComponentConfigs{})
	require.NoError(t, err)
	cfg.(*shoot.Config).TriggerDeadline = 0
	g := functiontest.New(t, env, shoot.Function, functiontest.AsFunction(), functiontest.WithConfig(cfg), functiontest.At(late))
	g.Sweep(hibernation.Name)
	enabled, _ = hibernated(t, s)
	assert.Equal(t, ptr.To(true), enabled, "without a deadline any boundary within seven days is acted on")
}

func TestHibernationIgnoresInvalidSchedules(t *testing.T) {
	start := nextEvenMinute(time.Now())
	f := newFixture(t, functiontest.AsFunction(), functiontest.At(start))
	s := removedAtEnd(t, f.shootWithSpec(t, "invalid", withSchedules(gardencorev1beta1.HibernationSchedule{Start: ptr.To("every day")})))
	f.Clock.SetTime(start.Add(10 * time.Minute))
	writes := f.Measure(func() { f.Sweep(hibernation.Name) })
	assert.Zero(t, writes["patch"])
	enabled, _ := hibernated(t, s)
	assert.Nil(t, enabled)
}
