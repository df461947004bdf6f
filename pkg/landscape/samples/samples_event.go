package samples

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// eventSamples creates Events in garden-event that show the event function (switched on in the
// landscape with EVENT_TTL_NON_SHOOT_EVENTS=1h): "pod-old", about a Pod and last seen two hours
// ago, is deleted by the first sweep; "pod-fresh" (ten minutes old) lives on until it is an
// hour old; "shoot-old", about a Shoot and two days old, is never deleted.
func eventSamples(ctx context.Context, c client.Client) error {
	const ns = "garden-event"
	if err := client.IgnoreAlreadyExists(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})); err != nil {
		return err
	}
	now := time.Now()
	for _, sample := range []struct {
		name, apiVersion, kind string
		age                    time.Duration
	}{
		{"pod-old", "v1", "Pod", 2 * time.Hour},
		{"pod-fresh", "v1", "Pod", 10 * time.Minute},
		{"shoot-old", "core.gardener.cloud/v1beta1", "Shoot", 48 * time.Hour},
	} {
		last := metav1.NewTime(now.Add(-sample.age))
		ev := &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: sample.name, Namespace: ns},
			InvolvedObject: corev1.ObjectReference{APIVersion: sample.apiVersion, Kind: sample.kind, Name: "sample", Namespace: ns},
			Reason:         "Sample", Message: "a sample event", Type: corev1.EventTypeNormal,
			FirstTimestamp: last, LastTimestamp: last, Count: 1,
			Source: corev1.EventSource{Component: "landscape"},
		}
		if err := c.Create(ctx, ev); err != nil {
			return err
		}
	}
	return nil
}
