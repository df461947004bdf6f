package hibernation

import (
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"
)

func utc(year int, month time.Month, day, hour, minute int) time.Time {
	return time.Date(year, month, day, hour, minute, 0, 0, time.UTC)
}

func schedule(start, end, location string) gardencorev1beta1.HibernationSchedule {
	s := gardencorev1beta1.HibernationSchedule{}
	if start != "" {
		s.Start = ptr.To(start)
	}
	if end != "" {
		s.End = ptr.To(end)
	}
	if location != "" {
		s.Location = ptr.To(location)
	}
	return s
}

func mustParse(t *testing.T, schedules ...gardencorev1beta1.HibernationSchedule) []Schedule {
	t.Helper()
	parsed, err := Parse(schedules)
	require.NoError(t, err)
	return parsed
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name       string
		schedules  []gardencorev1beta1.HibernationSchedule
		operations []Operation
		invalid    bool
	}{
		{name: "none"},
		{name: "start only", schedules: []gardencorev1beta1.HibernationSchedule{schedule("0 20 * * *", "", "")}, operations: []Operation{Hibernate}},
		{name: "end only", schedules: []gardencorev1beta1.HibernationSchedule{schedule("", "0 8 * * *", "")}, operations: []Operation{WakeUp}},
		{name: "start and end of two schedules", schedules: []gardencorev1beta1.HibernationSchedule{
			schedule("0 20 * * 1-5", "0 8 * * 1-5", "Europe/Berlin"), schedule("0 22 * * 0,6", "0 10 * * 0,6", ""),
		}, operations: []Operation{Hibernate, WakeUp, Hibernate, WakeUp}},
		{name: "descriptor", schedules: []gardencorev1beta1.HibernationSchedule{schedule("@daily", "", "")}, operations: []Operation{Hibernate}},
		{name: "invalid start", schedules: []gardencorev1beta1.HibernationSchedule{schedule("not-a-cron", "", "")}, invalid: true},
		{name: "invalid end", schedules: []gardencorev1beta1.HibernationSchedule{schedule("0 20 * * *", "61 8 * * *", "")}, invalid: true},
		{name: "seconds field", schedules: []gardencorev1beta1.HibernationSchedule{schedule("0 0 20 * * *", "", "")}, invalid: true},
		{name: "time zone in the expression", schedules: []gardencorev1beta1.HibernationSchedule{schedule("CRON_TZ=Europe/Berlin 0 20 * * *", "", "")}, invalid: true},
		{name: "time zone without a schedule", schedules: []gardencorev1beta1.HibernationSchedule{schedule("TZ=Europe/Berlin", "", "")}, invalid: true},
		{name: "unknown location", schedules: []gardencorev1beta1.HibernationSchedule{schedule("0 20 * * *", "", "Moon/Crater")}, invalid: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parsed, err := Parse(tc.schedules)
			if tc.invalid {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			var operations []Operation
			for _, s := range parsed {
				operations = append(operations, s.Operation)
			}
			assert.Equal(t, tc.operations, operations)
		})
	}
}

// The boundaries of schedules in Europe/Berlin around 2026's daylight-saving changes (spring
// forward on 29 March at 02:00 CET, fall back on 25 October at 03:00 CEST), in UTC.
func TestNextInLocationAcrossDaylightSaving(t *testing.T) {
	for _, tc := range []struct {
		name string
		cron string
		from time.Time
		want []time.Time
	}{{
		name: "20:00 is 19:00 UTC in winter, 18:00 UTC in summer",
		cron: "0 20 * * *", from: utc(2026, time.March, 27, 12, 0),
		want: []time.Time{utc(2026, time.March, 27, 19, 0), utc(2026, time.March, 28, 19, 0), utc(2026, time.March, 29, 18, 0), utc(2026, time.March, 30, 18, 0)},
	}, {
		name: "a wall-clock time that does not exist on the spring-forward day is skipped that day",
		cron: "30 2 * * *", from: utc(2026, time.March, 27, 12, 0),
		want: []time.Time{utc(2026, time.March, 28, 1, 30), utc(2026, time.March, 30, 0, 30)},
	}, {
		name: "the hour after the spring-forward gap keeps its place",
		cron: "0 3 * * *", from: utc(2026, time.March, 28, 12, 0),
		want: []time.Time{utc(2026, time.March, 29, 1, 0), utc(2026, time.March, 30, 1, 0)},
	}, {
		name: "hourly boundaries stay an hour apart across spring forward",
		cron: "0 * * * *", from: utc(2026, time.March, 28, 23, 30),
		want: []time.Time{utc(2026, time.March, 29, 0, 0), utc(2026, time.March, 29, 1, 0), utc(2026, time.March, 29, 2, 0)},
	}, {
		name: "a wall-clock time that occurs twice on the fall-back day is a boundary twice",
		cron: "30 2 * * *", from: utc(2026, time.October, 24, 12, 0),
		want: []time.Time{utc(2026, time.October, 25, 0, 30), utc(2026, time.October, 25, 1, 30), utc(2026, time.October, 26, 1, 30)},
	}, {
		name: "the hour after the repeated hour occurs once",
		cron: "0 3 * * *", from: utc(2026, time.October, 24, 12, 0),
		want: []time.Time{utc(2026, time.October, 25, 2, 0), utc(2026, time.October, 26, 2, 0)},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustParse(t, schedule(tc.cron, "", "Europe/Berlin"))[0]
			var got []time.Time
			for next := s.Next(tc.from); len(got) < len(tc.want); next = s.Next(next) {
				got = append(got, next)
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestPrevious(t *testing.T) {
	s := mustParse(t, schedule("0 20 * * *", "", ""))[0]
	last, ok := s.Previous(utc(2026, time.May, 1, 12, 0), utc(2026, time.May, 3, 12, 0))
	assert.True(t, ok)
	assert.Equal(t, utc(2026, time.May, 2, 20, 0), last)

	last, ok = s.Previous(utc(2026, time.May, 1, 12, 0), utc(2026, time.May, 1, 20, 0))
	assert.True(t, ok, "the end of the interval belongs to it")
	assert.Equal(t, utc(2026, time.May, 1, 20, 0), last)

	_, ok = s.Previous(utc(2026, time.May, 1, 20, 0), utc(2026, time.May, 2, 19, 59))
	assert.False(t, ok, "the start of the interval does not belong to it")
}

func TestDue(t *testing.T) {
	weekdays := schedule("0 20 * * 1-5", "0 8 * * 1-5", "")
	// Monday 4 May 2026.
	created := utc(2026, time.April, 1, 0, 0)
	for _, tc := range []struct {
		name        string
		schedules   []gardencorev1beta1.HibernationSchedule
		created     time.Time
		lastTrigger *time.Time
		deadline    time.Duration
		now         time.Time
		want        Operation
		due         bool
	}{{
		name: "no boundary since the Shoot was created", schedules: []gardencorev1beta1.HibernationSchedule{weekdays},
		created: utc(2026, time.May, 4, 9, 0), deadline: 2 * time.Hour, now: utc(2026, time.May, 4, 19, 59),
	}, {
		name: "the start passed: hibernate", schedules: []gardencorev1beta1.HibernationSchedule{weekdays},
		created: created, lastTrigger: ptr.To(utc(2026, time.May, 4, 8, 0)), deadline: 2 * time.Hour, now: utc(2026, time.May, 4, 20, 0),
		want: Hibernate, due: true,
	}, {
		name: "a tick repeated after the trigger finds nothing", schedules: []gardencorev1beta1.HibernationSchedule{weekdays},
		created: created, lastTrigger: ptr.To(utc(2026, time.May, 4, 20, 0)), deadline: 2 * time.Hour, now: utc(2026, time.May, 4, 20, 0),
	}, {
		name: "a later tick before the next boundary finds nothing", schedules: []gardencorev1beta1.HibernationSchedule{weekdays},
		created: created, lastTrigger: ptr.To(utc(2026, time.May, 4, 20, 0)), deadline: 2 * time.Hour, now: utc(2026, time.May, 5, 7, 59),
	}, {
		name: "a late tick within the deadline still acts", schedules: []gardencorev1beta1.HibernationSchedule{weekdays},
		created: created, lastTrigger: ptr.To(utc(2026, time.May, 4, 8, 0)), deadline: 2 * time.Hour, now: utc(2026, time.May, 4, 21, 59),
		want: Hibernate, due: true,
	}, {
		name: "a boundary older than the deadline is not acted on", schedules: []gardencorev1beta1.HibernationSchedule{weekdays},
		created: created, lastTrigger: ptr.To(utc(2026, time.May, 4, 8, 0)), deadline: 2 * time.Hour, now: utc(2026, time.May, 4, 22, 1),
	}, {
		name: "without a deadline a boundary is acted on however late", schedules: []gardencorev1beta1.HibernationSchedule{weekdays},
		created: created, lastTrigger: ptr.To(utc(2026, time.May, 4, 8, 0)), now: utc(2026, time.May, 5, 7, 0),
		want: Hibernate, due: true,
	}, {
		name: "coalesced ticks act once, on the most recent boundary", schedules: []gardencorev1beta1.HibernationSchedule{weekdays},
		created: created, lastTrigger: ptr.To(utc(2026, time.May, 4, 8, 0)), now: utc(2026, time.May, 5, 8, 30),
		want: WakeUp, due: true,
	}, {
		name: "never more than seven days back", schedules: []gardencorev1beta1.HibernationSchedule{schedule("0 20 1 * *", "", "")},
		created: utc(2026, time.January, 1, 0, 0), now: utc(2026, time.May, 11, 19, 0),
	}, {
		name: "within seven days a Shoot that never hibernated acts", schedules: []gardencorev1beta1.HibernationSchedule{schedule("0 20 1 * *", "", "")},
		created: utc(2026, time.January, 1, 0, 0), now: utc(2026, time.May, 7, 20, 1),
		want: Hibernate, due: true,
	}, {
		name: "the end of a schedule in Berlin wakes up at 07:00 UTC in summer", schedules: []gardencorev1beta1.HibernationSchedule{schedule("0 20 * * *", "0 9 * * *", "Europe/Berlin")},
		created: created, lastTrigger: ptr.To(utc(2026, time.May, 4, 18, 0)), deadline: 2 * time.Hour, now: utc(2026, time.May, 5, 7, 0),
		want: WakeUp, due: true,
	}, {
		name: "the end of a schedule in Berlin is not due at 07:00 UTC in winter", schedules: []gardencorev1beta1.HibernationSchedule{schedule("0 20 * * *", "0 9 * * *", "Europe/Berlin")},
		created: created, lastTrigger: ptr.To(utc(2026, time.January, 12, 19, 0)), deadline: 2 * time.Hour, now: utc(2026, time.January, 13, 7, 59),
	}, {
		name: "the most recent boundary of several schedules wins", schedules: []gardencorev1beta1.HibernationSchedule{
			schedule("0 18 * * *", "", "America/New_York"), schedule("", "0 23 * * *", "UTC"),
		},
		// 18:00 in New York is 22:00 UTC in May; the wake-up at 23:00 UTC is later.
		created: created, lastTrigger: ptr.To(utc(2026, time.May, 4, 12, 0)), now: utc(2026, time.May, 4, 23, 5),
		want: WakeUp, due: true,
	}, {
		name: "a tie goes to the boundary listed first", schedules: []gardencorev1beta1.HibernationSchedule{schedule("0 20 * * *", "0 20 * * *", "")},
		created: created, lastTrigger: ptr.To(utc(2026, time.May, 4, 12, 0)), deadline: 2 * time.Hour, now: utc(2026, time.May, 4, 20, 0),
		want: Hibernate, due: true,
	}, {
		name: "fall back: the repeated 02:30 in Berlin is a second boundary", schedules: []gardencorev1beta1.HibernationSchedule{schedule("30 2 * * *", "", "Europe/Berlin")},
		created: created, lastTrigger: ptr.To(utc(2026, time.October, 25, 0, 30)), deadline: 2 * time.Hour, now: utc(2026, time.October, 25, 1, 30),
		want: Hibernate, due: true,
	}, {
		name: "spring forward: no 02:30 in Berlin, nothing due that night", schedules: []gardencorev1beta1.HibernationSchedule{schedule("30 2 * * *", "", "Europe/Berlin")},
		created: created, lastTrigger: ptr.To(utc(2026, time.March, 28, 1, 30)), deadline: 2 * time.Hour, now: utc(2026, time.March, 29, 3, 0),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			op, due := Due(mustParse(t, tc.schedules...), tc.created, tc.lastTrigger, tc.deadline, tc.now)
			assert.Equal(t, tc.due, due)
			if tc.due {
				assert.Equal(t, tc.want, op)
			}
		})
	}
}

// Ticks every minute, some late, repeated or lost, over a schedule due every minute or two:
// every boundary is acted on at most once, and a Shoot ends in the state of the latest one.
func TestDueNeverTriggersTwicePerBoundary(t *testing.T) {
	schedules := mustParse(t, schedule("*/2 * * * *", "1-59/2 * * * *", ""))
	start := utc(2026, time.May, 4, 12, 0)
	var lastTrigger *time.Time
	triggers := map[time.Time]Operation{}
	// Ticks in seconds after start: on time, late, twice in the same second, and a gap of
	// three minutes (lost ticks).
	for _, offset := range []int{0, 0, 61, 61, 125, 180, 185, 420, 421, 480} {
		now := start.Add(time.Duration(offset) * time.Second)
		op, due := Due(schedules, start.Add(-time.Hour), lastTrigger, 2*time.Hour, now)
		if !due {
			continue
		}
		boundary := now.Truncate(time.Minute)
		_, seen := triggers[boundary]
		require.False(t, seen, "boundary %s acted on twice", boundary)
		triggers[boundary] = op
		lastTrigger = &now
	}
	assert.Equal(t, map[time.Time]Operation{
		start:                      Hibernate,
		start.Add(time.Minute):     WakeUp,
		start.Add(2 * time.Minute): Hibernate,
		start.Add(3 * time.Minute): WakeUp,
		start.Add(7 * time.Minute): WakeUp, // the lost ticks of minutes 4 to 6 coalesce into the latest boundary
		start.Add(8 * time.Minute): Hibernate,
	}, triggers)
}

func TestFailedAndUpToDate(t *testing.T) {
	shoot := &gardencorev1beta1.Shoot{}
	shoot.Generation = 3
	assert.False(t, FailedAndUpToDate(shoot), "no last operation")
	shoot.Status.LastOperation = &gardencorev1beta1.LastOperation{State: gardencorev1beta1.LastOperationStateSucceeded}
	shoot.Status.ObservedGeneration = 3
	assert.False(t, FailedAndUpToDate(shoot), "succeeded")
	shoot.Status.LastOperation.State = gardencorev1beta1.LastOperationStateFailed
	assert.True(t, FailedAndUpToDate(shoot), "failed and observed")
	shoot.Generation = 4
	assert.False(t, FailedAndUpToDate(shoot), "failed, but its spec changed since")
}
