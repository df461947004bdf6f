package event

import (
	"testing"
	"time"

	cmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/controllermanager/v1alpha1"
	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestIsShootEvent(t *testing.T) {
	for _, tc := range []struct {
		name       string
		apiVersion string
		kind       string
		want       bool
	}{
		{"shoot of core.gardener.cloud/v1beta1", "core.gardener.cloud/v1beta1", "Shoot", true},
		{"shoot of another version of the group", "core.gardener.cloud/v1", "Shoot", true},
		{"seed of core.gardener.cloud", "core.gardener.cloud/v1beta1", "Seed", false},
		{"a Shoot kind of another group", "example.com/v1", "Shoot", false},
		{"a Shoot kind of the core group", "v1", "Shoot", false},
		{"a pod", "v1", "Pod", false},
		{"an unparsable apiVersion", "a/b/c", "Shoot", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := &corev1.Event{InvolvedObject: corev1.ObjectReference{APIVersion: tc.apiVersion, Kind: tc.kind}}
			assert.Equal(t, tc.want, IsShootEvent(ev))
		})
	}
}

func TestExpired(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ttl := time.Hour
	legacy := func(last time.Time) *corev1.Event {
		return &corev1.Event{InvolvedObject: corev1.ObjectReference{APIVersion: "v1", Kind: "Pod"}, LastTimestamp: metav1.NewTime(last)}
	}
	for _, tc := range []struct {
		name  string
		event *corev1.Event
		want  bool
	}{
		{"legacy event younger than the ttl", legacy(now.Add(-59 * time.Minute)), false},
		{"legacy event exactly ttl old", legacy(now.Add(-time.Hour)), true},
		{"legacy event older than the ttl", legacy(now.Add(-2 * time.Hour)), true},
		{"single occurrence: the event time counts, not lastTimestamp", func() *corev1.Event {
			ev := legacy(now.Add(-2 * time.Hour))
			ev.EventTime = metav1.NewMicroTime(now.Add(-time.Minute))
			return ev
		}(), false},
		{"series: its last observed time counts, not the event time", func() *corev1.Event {
			ev := legacy(now.Add(-2 * time.Hour))
			ev.EventTime = metav1.NewMicroTime(now.Add(-2 * time.Hour))
			ev.Series = &corev1.EventSeries{Count: 3, LastObservedTime: metav1.NewMicroTime(now.Add(-time.Minute))}
			return ev
		}(), false},
		{"series observed long ago", func() *corev1.Event {
			ev := legacy(now)
			ev.Series = &corev1.EventSeries{Count: 3, LastObservedTime: metav1.NewMicroTime(now.Add(-3 * time.Hour))}
			return ev
		}(), true},
		{"a Shoot's event never expires", func() *corev1.Event {
			ev := legacy(now.Add(-100 * time.Hour))
			ev.InvolvedObject = corev1.ObjectReference{APIVersion: "core.gardener.cloud/v1beta1", Kind: "Shoot"}
			return ev
		}(), false},
		{"an event without any timestamp is expired", &corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Pod"}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Expired(now, tc.event, ttl))
		})
	}
}

func TestConfigFromControllerManager(t *testing.T) {
	cm := &cmv1alpha1.ControllerManagerConfiguration{}
	off := &Config{}
	off.FromControllerManager(cm)
	assert.Zero(t, off.TTLNonShootEvents, "off unless controllers.event is set")

	cm.Controllers.Event = &cmv1alpha1.EventControllerConfiguration{}
	defaulted := &Config{}
	defaulted.FromControllerManager(cm)
	assert.Equal(t, time.Hour, defaulted.TTLNonShootEvents)

	cm.Controllers.Event.TTLNonShootEvents = &metav1.Duration{Duration: 3 * time.Hour}
	configured := &Config{}
	configured.FromControllerManager(cm)
	assert.Equal(t, 3*time.Hour, configured.TTLNonShootEvents)
}
