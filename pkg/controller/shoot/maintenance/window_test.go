package maintenance

import (
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testclock "k8s.io/utils/clock/testing"
)

func at(day, hour, minute int) time.Time {
	return time.Date(2026, time.May, day, hour, minute, 0, 0, time.UTC)
}

// windowShoot is a Shoot with a maintenance window, whose start point is at the window's
// begin (a UID that hashes to offset 0 would be luck; the tests pick the point explicitly).
func windowShoot(begin, end string) *gardencorev1beta1.Shoot {
	s := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{UID: "shoot-uid"}}
	if begin != "" {
		s.Spec.Maintenance = &gardencorev1beta1.Maintenance{TimeWindow: &gardencorev1beta1.MaintenanceTimeWindow{Begin: begin, End: end}}
	}
	return s
}

func maintainedAt(s *gardencorev1beta1.Shoot, t time.Time) *gardencorev1beta1.Shoot {
	s = s.DeepCopy()
	metav1.SetMetaDataAnnotation(&s.ObjectMeta, MaintainedAtAnnotation, t.Format(time.RFC3339))
	return s
}

func TestEffectiveWindow(t *testing.T) {
	w := EffectiveWindow(windowShoot("220000+0000", "230000+0000"))
	assert.Equal(t, "begin=22:00:00, end=22:45:00", w.String(), "the window ends 15 minutes early")
	w = EffectiveWindow(windowShoot("220000+0100", "230000+0100"))
	assert.Equal(t, "begin=21:00:00, end=21:45:00", w.String(), "in UTC")
	w = EffectiveWindow(windowShoot("230000+0000", "010000+0000"))
	assert.Equal(t, "begin=23:00:00, end=00:45:00", w.String(), "wrapping midnight")
	w = EffectiveWindow(windowShoot("", ""))
	assert.Equal(t, "begin=00:00:00, end=23:59:59", w.String(), "no window: the whole day")
	w = EffectiveWindow(windowShoot("garbage", "230000+0000"))
	assert.Equal(t, "begin=00:00:00, end=23:59:59", w.String(), "an invalid window: the whole day")
}

func TestStartOffset(t *testing.T) {
	shoot := windowShoot("220000+0000", "230000+0000")
	w := EffectiveWindow(shoot)
	offsets := map[time.Duration]bool{}
	for i := range 50 {
		shoot.UID = types.UID(string(rune('a'+i%26)) + string(rune('a'+i/26)))
		offset := startOffset(shoot, w)
		assert.GreaterOrEqual(t, offset, time.Duration(0))
		assert.Less(t, offset, w.Duration()/2, "in the first half of the window")
		assert.Equal(t, offset, startOffset(shoot, w), "the same for the same Shoot")
		offsets[offset] = true
	}
	assert.Greater(t, len(offsets), 25, "spread over the window")
}

func TestDue(t *testing.T) {
	daily := windowShoot("220000+0000", "230000+0000")
	start := at(4, 22, 0).Add(startOffset(daily, EffectiveWindow(daily)))
	wrapping := windowShoot("230000+0000", "010000+0000")
	wrapStart := at(4, 23, 0).Add(startOffset(wrapping, EffectiveWindow(wrapping)))
	always := windowShoot("", "")
	alwaysStart := at(4, 0, 0).Add(startOffset(always, EffectiveWindow(always)))
	withTriggered := func(s *gardencorev1beta1.Shoot, t time.Time) *gardencorev1beta1.Shoot {
		s = s.DeepCopy()
		s.Status.LastMaintenance = &gardencorev1beta1.LastMaintenance{TriggeredTime: metav1.Time{Time: t}}
		return s
	}
	maintainNow := daily.DeepCopy()
	maintainNow.Annotations = map[string]string{v1beta1constants.GardenerOperation: "reconcile;maintain"}

	for _, tc := range []struct {
		name  string
		shoot *gardencorev1beta1.Shoot
		now   time.Time
		due   bool
	}{
		{name: "before the window", shoot: daily, now: at(4, 21, 59)},
		{name: "in the window, before the Shoot's start point", shoot: daily, now: start.Add(-time.Second)},
		{name: "at the Shoot's start point", shoot: daily, now: start, due: true},
		{name: "late in the window, never maintained", shoot: daily, now: at(4, 22, 44), due: true},
		{name: "in the last 15 minutes of the window", shoot: daily, now: at(4, 22, 46)},
		{name: "after the window", shoot: daily, now: at(4, 23, 30)},
		{name: "maintained in this window", shoot: maintainedAt(daily, start), now: start.Add(time.Minute)},
		{name: "maintained in yesterday's window", shoot: maintainedAt(daily, start.AddDate(0, 0, -1)), now: start, due: true},
		{name: "maintained by Gardener in this window", shoot: withTriggered(daily, at(4, 22, 1)), now: at(4, 22, 44)},
		{name: "maintenance requested outside the window", shoot: maintainNow, now: at(4, 12, 0), due: true},
		{name: "maintenance requested again right after a maintenance", shoot: maintainedAt(maintainNow, at(4, 22, 30)), now: at(4, 22, 31), due: true},

		{name: "wrapping: before midnight", shoot: wrapping, now: wrapStart, due: true},
		{name: "wrapping: after midnight, never maintained", shoot: wrapping, now: at(5, 0, 30), due: true},
		{name: "wrapping: after midnight, maintained before midnight", shoot: maintainedAt(wrapping, at(4, 23, 40)), now: at(5, 0, 30)},
		{name: "wrapping: after midnight, maintained in the previous occurrence", shoot: maintainedAt(wrapping, at(3, 23, 40)), now: at(5, 0, 30), due: true},
		{name: "wrapping: after the effective end", shoot: wrapping, now: at(5, 0, 46)},
		{name: "wrapping: before the begin", shoot: wrapping, now: at(4, 22, 59)},

		{name: "no window: due once a day", shoot: always, now: alwaysStart, due: true},
		{name: "no window: maintained today", shoot: maintainedAt(always, alwaysStart), now: at(4, 23, 0)},
		{name: "no window: maintained yesterday", shoot: maintainedAt(always, at(3, 23, 30)), now: alwaysStart, due: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.due, Due(tc.shoot, tc.now))
		})
	}
}

// Ticks every minute over three days (some lost) maintain a Shoot exactly once per occurrence
// of its window, also when the window wraps midnight, and always within the window.
func TestDueOncePerWindowOccurrence(t *testing.T) {
	for _, window := range [][2]string{{"220000+0000", "230000+0000"}, {"233000+0000", "013000+0000"}, {"100000+0200", "110000+0200"}} {
		t.Run(window[0]+"-"+window[1], func(t *testing.T) {
			shoot := windowShoot(window[0], window[1])
			w := EffectiveWindow(shoot)
			clock := testclock.NewFakePassiveClock(at(4, 0, 0))
			var maintenances []time.Time
			for ; clock.Now().Before(at(7, 0, 0)); clock.SetTime(clock.Now().Add(time.Minute)) {
				if clock.Now().Minute()%7 == 3 {
					continue // a lost tick
				}
				if Due(shoot, clock.Now()) {
					require.True(t, w.Contains(clock.Now()), "maintained outside the window at %s", clock.Now())
					maintenances = append(maintenances, clock.Now())
					shoot = maintainedAt(shoot, clock.Now())
				}
			}
			require.Len(t, maintenances, 3, "once per day: %v", maintenances)
			for i := 1; i < len(maintenances); i++ {
				assert.InDelta(t, 24*time.Hour, maintenances[i].Sub(maintenances[i-1]), float64(2*time.Minute))
			}
		})
	}
}

func TestLastMaintained(t *testing.T) {
	s := windowShoot("", "")
	assert.True(t, LastMaintained(s).IsZero())
	s = maintainedAt(s, at(4, 10, 0))
	assert.Equal(t, at(4, 10, 0), LastMaintained(s))
	s.Status.LastMaintenance = &gardencorev1beta1.LastMaintenance{TriggeredTime: metav1.Time{Time: at(4, 11, 0)}}
	assert.Equal(t, at(4, 11, 0), LastMaintained(s), "the later of both")
	s.Annotations[MaintainedAtAnnotation] = "yesterday"
	assert.Equal(t, at(4, 11, 0), LastMaintained(s), "an unreadable annotation is ignored")
}

// A maintenance whose status was written (Processing) but whose changes did not land (the
// annotation written with them is older) is not done: the next tick in the window tries again,
// as Gardener retries a failed maintenance.
func TestInterruptedMaintenanceIsDueAgain(t *testing.T) {
	s := maintainedAt(windowShoot("100000+0000", "110000+0000"), at(3, 10, 5))
	s.Status.LastMaintenance = &gardencorev1beta1.LastMaintenance{TriggeredTime: metav1.Time{Time: at(4, 10, 20)}, State: gardencorev1beta1.LastOperationStateProcessing}
	assert.Equal(t, at(3, 10, 5), LastMaintained(s), "interrupted: yesterday's maintenance is the last that landed")
	assert.True(t, Due(s, at(4, 10, 21)))

	s = maintainedAt(s, at(4, 10, 20))
	assert.Equal(t, at(4, 10, 20), LastMaintained(s), "its changes landed; only the final status write is missing")
	assert.False(t, Due(s, at(4, 10, 21)))

	s.Annotations[MaintainedAtAnnotation] = at(3, 10, 5).Format(time.RFC3339)
	s.Status.LastMaintenance.State = gardencorev1beta1.LastOperationStateSucceeded
	assert.Equal(t, at(4, 10, 20), LastMaintained(s), "done by Gardener, which writes no annotation")
	assert.False(t, Due(s, at(4, 10, 21)))
}

// A maintenance whose changes landed but whose final status write did not (a conflict with
// another writer, or the process ended) is to be ended; nothing else is.
func TestLandedUnfinished(t *testing.T) {
	triggered := metav1.Time{Time: at(4, 10, 20).Add(400 * time.Millisecond)}
	processing := func(s *gardencorev1beta1.Shoot) *gardencorev1beta1.Shoot {
		s.Status.LastMaintenance = &gardencorev1beta1.LastMaintenance{TriggeredTime: triggered, State: gardencorev1beta1.LastOperationStateProcessing}
		return s
	}
	assert.True(t, LandedUnfinished(processing(maintainedAt(windowShoot("", ""), at(4, 10, 20)))), "the annotation has the trigger's second")
	assert.True(t, LandedUnfinished(processing(maintainedAt(windowShoot("", ""), at(4, 10, 21)))))
	assert.False(t, LandedUnfinished(processing(maintainedAt(windowShoot("", ""), at(4, 10, 19)))), "its changes did not land: due again, not ended")
	assert.False(t, LandedUnfinished(processing(windowShoot("", ""))), "maintained by Gardener, which writes no annotation: its own to end")

	done := processing(maintainedAt(windowShoot("", ""), at(4, 10, 20)))
	for _, state := range []gardencorev1beta1.LastOperationState{gardencorev1beta1.LastOperationStateSucceeded, gardencorev1beta1.LastOperationStateFailed} {
		done.Status.LastMaintenance.State = state
		assert.False(t, LandedUnfinished(done), state)
	}
	assert.False(t, LandedUnfinished(maintainedAt(windowShoot("", ""), at(4, 10, 20))), "never reported")
}
