// Package event deletes the garden's Events that are not about Shoots once they are older than
// a time-to-live, so that Shoot Events can be kept longer (kube-apiserver's --event-ttl) than the
// rest (GCM's Event controller). It is off unless configured, as in Gardener.
package event

import (
	"context"
	"log/slog"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/function"
)

// IsShootEvent says whether event is about a Shoot (kind Shoot of core.gardener.cloud, any
// version), as Gardener decides: those are the Events this controller never deletes.
func IsShootEvent(event *corev1.Event) bool {
	gv, err := schema.ParseGroupVersion(event.InvolvedObject.APIVersion)
	if err != nil || gv.Group != gardencorev1beta1.GroupName {
		return false
	}
	return event.InvolvedObject.Kind == "Shoot"
}

// LastOccurrence is when event last happened, read as Gardener reads the events.k8s.io/v1 view
// of it: the series' last observed time for a series, else the event time of a single
// occurrence, else the legacy lastTimestamp of Events reported through the core/v1 API.
func LastOccurrence(event *corev1.Event) time.Time {
	if event.Series != nil && !event.Series.LastObservedTime.IsZero() {
		return event.Series.LastObservedTime.Time
	}
	if !event.EventTime.IsZero() {
		return event.EventTime.Time
	}
	return event.LastTimestamp.Time
}

// Expired says whether event must be deleted at now: it is not about a Shoot and its last
// occurrence is ttl or more ago (Gardener deletes once the remaining time is not positive).
func Expired(now time.Time, event *corev1.Event, ttl time.Duration) bool {
	if IsShootEvent(event) {
		return false
	}
	return !LastOccurrence(event).Add(ttl).After(now)
}

// Reconciler deletes the Events Expired condemns.
type Reconciler struct {
	Writer function.Writer
	Clock  clock.PassiveClock
	// TTL is ttlNonShootEvents; zero means the controller is not configured and deletes nothing.
	TTL time.Duration
	Log *slog.Logger
}

var _ function.Handler = &Reconciler{}

// Reconcile reads the Event (from the sweep's page) and deletes it if it expired. The delete is
// conditional on the UID and resourceVersion read: an Event that recurred since (count and
// lastTimestamp updated) turns into a conflict, and the runtime decides again from live state.
func (r *Reconciler) Reconcile(ctx context.Context, req function.Request) error {
	if r.TTL <= 0 {
		return nil
	}
	event := &corev1.Event{}
	if err := req.Reader.Get(ctx, req.Key, event); err != nil {
		return client.IgnoreNotFound(err)
	}
	if event.DeletionTimestamp != nil || !Expired(r.Clock.Now(), event, r.TTL) {
		return nil
	}
	r.Log.Debug("deleting expired event", "event", req.Key, "involvedObject", event.InvolvedObject.Kind+"/"+event.InvolvedObject.Name, "lastOccurrence", LastOccurrence(event))
	return client.IgnoreNotFound(r.Writer.Delete(ctx, event))
}
