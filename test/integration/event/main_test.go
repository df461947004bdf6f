// Package event_test serves the event function in-process (functiontest) against one real
// kube-apiserver and etcd and ticks its sweep as its PingSource would.
package event_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/event"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

// now is the fake clock's start; Events are dated relative to it.
var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type fixture struct {
	*functiontest.Harness
	ns string
}

func newFixture(t testing.TB, ttl time.Duration, options ...functiontest.Option) *fixture {
	t.Helper()
	options = append([]functiontest.Option{functiontest.WithConfig(&event.Config{TTLNonShootEvents: ttl}), functiontest.At(now)}, options...)
	return &fixture{Harness: functiontest.New(t, env, event.Function, options...), ns: env.Namespace(t)}
}

// involved names what an Event is about.
type involved struct{ apiVersion, kind string }

var (
	pod   = involved{"v1", "Pod"}
	seed  = involved{"core.gardener.cloud/v1beta1", "Seed"}
	shoot = involved{"core.gardener.cloud/v1beta1", "Shoot"}
)

// legacyEvent creates an Event as the core/v1 API reports it (lastTimestamp only), last seen age
// before the clock's start.
func (f *fixture) legacyEvent(t testing.TB, name string, about involved, age time.Duration) *corev1.Event {
	t.Helper()
	last := metav1.NewTime(now.Add(-age))
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: f.ns},
		InvolvedObject: corev1.ObjectReference{APIVersion: about.apiVersion, Kind: about.kind, Name: "x", Namespace: f.ns},
		Reason:         "Test", Message: "test", Type: corev1.EventTypeNormal,
		FirstTimestamp: last, LastTimestamp: last, Count: 1,
		Source: corev1.EventSource{Component: "test"},
	}
	require.NoError(t, env.Client.Create(context.Background(), ev))
	return ev
}

func exists(t testing.TB, ev *corev1.Event) bool {
	t.Helper()
	err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(ev), &corev1.Event{})
	if apierrors.IsNotFound(err) {
		return false
	}
	require.NoError(t, err)
	return true
}
