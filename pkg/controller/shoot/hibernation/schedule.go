package hibernation

import (
	"fmt"
	"strings"
	"time"
	// The schedules name IANA locations; the function's image must not depend on the base
	// image's zoneinfo to load them.
	_ "time/tzdata"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/robfig/cron/v3"
	"k8s.io/utils/ptr"
)

// Operation is what a schedule's boundary does to a Shoot.
type Operation int

const (
	// Hibernate is a schedule's start: the Shoot goes to sleep.
	Hibernate Operation = iota
	// WakeUp is a schedule's end: the Shoot wakes up.
	WakeUp
)

func (o Operation) String() string {
	if o == Hibernate {
		return "hibernate"
	}
	return "wake up"
}

// Schedule is one boundary of a hibernation schedule: its start or its end, as a cron schedule
// evaluated in the schedule's location.
type Schedule struct {
	cron      cron.Schedule
	location  *time.Location
	Operation Operation
}

// Parse parses the Shoot's hibernation schedules into their boundaries, in order: each
// schedule's start (if any), then its end (if any). A schedule without a location is in UTC.
// The cron syntax is the standard five fields or a descriptor (@daily, @every 1h, ...), as
// Gardener parses it; a TZ= or CRON_TZ= prefix is refused, as Gardener's parser (robfig/cron
// v1) refuses it: the location field is where a schedule's time zone is given.
func Parse(schedules []gardencorev1beta1.HibernationSchedule) ([]Schedule, error) {
	var parsed []Schedule
	for _, s := range schedules {
		location, err := time.LoadLocation(ptr.Deref(s.Location, time.UTC.String()))
		if err != nil {
			return nil, err
		}
		for _, boundary := range []struct {
			spec      *string
			operation Operation
		}{{s.Start, Hibernate}, {s.End, WakeUp}} {
			if boundary.spec == nil {
				continue
			}
			c, err := parseCron(*boundary.spec)
			if err != nil {
				return nil, err
			}
			parsed = append(parsed, Schedule{cron: c, location: location, Operation: boundary.operation})
		}
	}
	return parsed, nil
}

func parseCron(spec string) (cron.Schedule, error) {
	if strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ=") {
		return nil, fmt.Errorf("invalid cron expression %q: a time zone is given by the schedule's location, not in the expression", spec)
	}
	return cron.ParseStandard(spec)
}

// Next is the schedule's first time strictly after t.
func (s Schedule) Next(t time.Time) time.Time {
	return s.cron.Next(t.In(s.location)).UTC()
}

// Previous is the schedule's last time in (from, to], if it has one.
func (s Schedule) Previous(from, to time.Time) (time.Time, bool) {
	var last time.Time
	found := false
	for t := s.Next(from); !t.IsZero() && !t.After(to); t = s.Next(t) {
		last, found = t, true
	}
	return last, found
}

// Gardener looks back at most seven days for a boundary, so that a Shoot created long ago that
// never hibernated is judged by its recent schedule only.
const lookBack = 7 * 24 * time.Hour

// Due is the operation the Shoot's schedules ask for at now, if any: the operation of the most
// recent boundary after the Shoot's last hibernation trigger (its creation, if it never had
// one), not older than triggerDeadline (no limit if zero) and at most seven days ago. On a tie
// the boundary listed first wins.
//
// It is stateless: after a trigger, status.lastHibernationTriggerTime moves to now, so a
// repeated, late or coalesced tick finds no boundary it has not acted on, and a tick that
// comes after several boundaries acts once, on the latest.
func Due(schedules []Schedule, created time.Time, lastTrigger *time.Time, triggerDeadline time.Duration, now time.Time) (Operation, bool) {
	earliest := created
	if lastTrigger != nil {
		earliest = *lastTrigger
	}
	if deadline := now.Add(-triggerDeadline); triggerDeadline > 0 && deadline.After(earliest) {
		earliest = deadline
	}
	if oldest := now.Add(-lookBack); earliest.Before(oldest) {
		earliest = oldest
	}
	var (
		mostRecent time.Time
		operation  Operation
		found      bool
	)
	for _, s := range schedules {
		t, ok := s.Previous(earliest, now)
		if ok && (!found || t.After(mostRecent)) {
			mostRecent, operation, found = t, s.Operation, true
		}
	}
	return operation, found
}
