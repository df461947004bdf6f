package maintenance

import (
	"hash/fnv"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/gardener/gardener/pkg/apis/utils/timewindow"
)

// MaintainedAtAnnotation records on the Shoot when this function last maintained it (RFC 3339),
// written with the maintenance's own changes. Gardener remembers the next maintenance time in
// its work queue; a stateless function remembers the last one on the object, so that a Shoot is
// maintained once per window however many ticks fall into it.
const MaintainedAtAnnotation = "shoot.gardener-knative/maintained-at"

// effectiveWindowCut is how much earlier than the end of its window Gardener stops starting a
// Shoot's maintenance, so that the reconcile it triggers can still finish within the window.
const effectiveWindowCut = 15 * time.Minute

// EffectiveWindow is the window in which maintenance may start: the Shoot's
// .spec.maintenance.timeWindow ending 15 minutes early, or the whole day when it has none (or
// one that does not parse), as Gardener computes it.
func EffectiveWindow(shoot *gardencorev1beta1.Shoot) *timewindow.MaintenanceTimeWindow {
	if shoot.Spec.Maintenance == nil || shoot.Spec.Maintenance.TimeWindow == nil {
		return timewindow.AlwaysTimeWindow
	}
	w, err := timewindow.ParseMaintenanceTimeWindow(shoot.Spec.Maintenance.TimeWindow.Begin, shoot.Spec.Maintenance.TimeWindow.End)
	if err != nil {
		return timewindow.AlwaysTimeWindow
	}
	return w.WithEnd(w.End().Add(0, -int(effectiveWindowCut/time.Minute), 0))
}

// occurrenceBegin is when the occurrence of w that contains now began: today's begin, or
// yesterday's for a window that wraps midnight and now is after midnight.
func occurrenceBegin(w *timewindow.MaintenanceTimeWindow, now time.Time) time.Time {
	begin := w.AdjustedBegin(now)
	if begin.After(now) {
		begin = begin.AddDate(0, 0, -1)
	}
	return begin
}

// startOffset is when within a window occurrence the Shoot's maintenance starts: a point in the
// first half of the window derived from the Shoot's UID. Gardener starts each Shoot's
// maintenance at a random point of its window to spread the load of a fleet with the same
// window; a deterministic point spreads it alike without state, and keeps the second half of
// the window for ticks that come late.
func startOffset(shoot *gardencorev1beta1.Shoot, w *timewindow.MaintenanceTimeWindow) time.Duration {
	span := w.Duration() / 2
	if span < time.Second {
		return 0
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(shoot.UID))
	return time.Duration(h.Sum64()%uint64(span/time.Second)) * time.Second
}

// Due says whether the Shoot is to be maintained at now: it asks for it
// (gardener.cloud/operation=maintain), or now is within its effective window, past the Shoot's
// start point in this occurrence, and the Shoot has not been maintained since the occurrence
// began (by this function, or by Gardener per status.lastMaintenance.triggeredTime).
func Due(shoot *gardencorev1beta1.Shoot, now time.Time) bool {
	if HasMaintainNow(shoot.Annotations) {
		return true
	}
	w := EffectiveWindow(shoot)
	if !w.Contains(now) {
		return false
	}
	begin := occurrenceBegin(w, now)
	if now.Before(begin.Add(startOffset(shoot, w))) {
		return false
	}
	return LastMaintained(shoot).Before(begin)
}

// LastMaintained is when the Shoot was last maintained, as far as the Shoot tells: the later of
// MaintainedAtAnnotation and status.lastMaintenance.triggeredTime; zero if never. A maintenance
// still Processing whose changes did not land (the annotation, written with them, is older than
// its trigger: the spec's write failed, e.g. on a conflict) does not count: Gardener retries a
// failed maintenance for as long as the window lasts, and so is it here.
func LastMaintained(shoot *gardencorev1beta1.Shoot) time.Time {
	last := annotatedMaintenance(shoot)
	if lm := shoot.Status.LastMaintenance; lm != nil && lm.TriggeredTime.After(last) {
		if lm.State == gardencorev1beta1.LastOperationStateProcessing && last.Before(lm.TriggeredTime.Truncate(time.Second)) {
			return last
		}
		last = lm.TriggeredTime.Time
	}
	return last
}

// LandedUnfinished says the Shoot's maintenance is still Processing although its changes landed
// (the annotation written with them is not older than its trigger): only the status write that
// ends it is missing. It failed (a conflict with another writer in between: ours are optimistic,
// Gardener's final status patch is not) or the process ended before it, and the maintenance is
// not due again, so nothing else would ever end it.
func LandedUnfinished(shoot *gardencorev1beta1.Shoot) bool {
	lm := shoot.Status.LastMaintenance
	if lm == nil || lm.State != gardencorev1beta1.LastOperationStateProcessing {
		return false
	}
	at := annotatedMaintenance(shoot)
	return !at.IsZero() && !at.Before(lm.TriggeredTime.Truncate(time.Second))
}

// annotatedMaintenance is MaintainedAtAnnotation's time; zero if it is missing or unreadable.
func annotatedMaintenance(shoot *gardencorev1beta1.Shoot) time.Time {
	if value, ok := shoot.Annotations[MaintainedAtAnnotation]; ok {
		if t, err := time.Parse(time.RFC3339, value); err == nil {
			return t
		}
	}
	return time.Time{}
}
