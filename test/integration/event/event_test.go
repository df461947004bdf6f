package event_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/event"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
)

// The sweep, run as the function's own ServiceAccount, deletes exactly the non-Shoot Events
// whose last occurrence is at least the TTL ago, and a second sweep has nothing left to write.
func TestSweepDeletesExpiredNonShootEvents(t *testing.T) {
	f := newFixture(t, time.Hour, functiontest.AsFunction())
	ctx := context.Background()

	oldPod := f.legacyEvent(t, "old-pod", pod, 2*time.Hour)
	oldSeed := f.legacyEvent(t, "old-seed", seed, 61*time.Minute)
	freshPod := f.legacyEvent(t, "fresh-pod", pod, 30*time.Minute)
	ancientShoot := f.legacyEvent(t, "ancient-shoot", shoot, 48*time.Hour)

	// A series that began long ago but recurred recently is not expired: its last observed time
	// counts (as in Gardener's events.k8s.io/v1 view), not its first occurrence.
	recurring := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "recurring", Namespace: f.ns},
		InvolvedObject: corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Name: "p", Namespace: f.ns},
		Reason:         "Test", Message: "test", Type: corev1.EventTypeNormal,
		EventTime:           metav1.NewMicroTime(now.Add(-3 * time.Hour)),
		Series:              &corev1.EventSeries{Count: 5, LastObservedTime: metav1.NewMicroTime(now.Add(-10 * time.Minute))},
		ReportingController: "test", ReportingInstance: "test", Action: "Test",
	}
	require.NoError(t, env.Client.Create(ctx, recurring))

	requests := f.Measure(func() { f.Sweep(event.TTLSweep) })
	assert.False(t, exists(t, oldPod))
	assert.False(t, exists(t, oldSeed))
	assert.True(t, exists(t, freshPod))
	assert.True(t, exists(t, ancientShoot), "Shoot events are never deleted")
	assert.True(t, exists(t, recurring))
	assert.Equal(t, 2, requests["delete"])

	requests = f.Measure(func() { f.Sweep(event.TTLSweep) })
	assert.Zero(t, requests["delete"], "a sweep with nothing expired deletes nothing")
	assert.Equal(t, map[string]int{"list": requests["list"]}, requests, "a sweep only lists")

	// Time passes: the fresh Event expires, the recurring one too.
	f.Clock.Step(time.Hour)
	f.Sweep(event.TTLSweep)
	assert.False(t, exists(t, freshPod))
	assert.False(t, exists(t, recurring))
	assert.True(t, exists(t, ancientShoot))
}

// Without configuration (controllers.event unset) the controller is off, as in Gardener: a tick
// is acknowledged without a single request.
func TestUnconfiguredSweepDeletesNothing(t *testing.T) {
	f := newFixture(t, 0)
	old := f.legacyEvent(t, "old-pod", pod, 100*time.Hour)
	requests := f.Measure(func() { f.Sweep(event.TTLSweep) })
	assert.True(t, exists(t, old))
	assert.Empty(t, requests, "not even a LIST")
}

// An Event that recurs between the sweep's LIST and its delete is not deleted: the delete is
// conditional on the resourceVersion read, so it fails with a conflict (on which the runtime
// decides again from live state).
func TestRecurredEventIsNotDeleted(t *testing.T) {
	f := newFixture(t, time.Hour)
	ctx := context.Background()
	stale := f.legacyEvent(t, "recurs", pod, 2*time.Hour)
	recurred := stale.DeepCopy()
	recurred.Count = 2
	recurred.LastTimestamp = metav1.NewTime(now)
	require.NoError(t, env.Client.Update(ctx, recurred))

	r := &event.Reconciler{Writer: function.NewWriter(env.Client), Clock: f.Clock, TTL: time.Hour, Log: slog.New(slog.DiscardHandler)}
	err := r.Reconcile(ctx, function.Request{Key: client.ObjectKeyFromObject(stale), Reader: staleReader{stale}, Trigger: function.BySweep})
	assert.True(t, apierrors.IsConflict(err), "want a conflict, got %v", err)
	assert.True(t, exists(t, stale))
}

// staleReader answers every Get with the object as it was read before it changed.
type staleReader struct{ obj *corev1.Event }

func (s staleReader) Get(_ context.Context, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	s.obj.DeepCopyInto(obj.(*corev1.Event))
	return nil
}

func (s staleReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("not listed")
}
