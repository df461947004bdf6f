package function

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gardener-knative/gardener-knative/pkg/scheme"
)

// Reconciles that meet the same situation at once (a sweep's) record the same Event: every
// occurrence is counted on it, none is lost to a conflict.
func TestConcurrentRepeatsOfAnEventAreAllCounted(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(scheme.Gardener).Build()
	recorder := NewEventRecorder(c, "test-controller", testclock.NewFakePassiveClock(time.Unix(1e9, 0)), slog.New(slog.NewTextHandler(io.Discard, nil)))
	about := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cm", UID: "uid-1"}}
	const repeats = 40
	var wg sync.WaitGroup
	for range repeats {
		wg.Go(func() {
			recorder.Event(context.Background(), about, corev1.EventTypeWarning, "Blocked", "still referenced")
		})
	}
	wg.Wait()
	events := &corev1.EventList{}
	require.NoError(t, c.List(context.Background(), events))
	require.Len(t, events.Items, 1, "a repeat is counted on the first Event")
	assert.Equal(t, int32(repeats), events.Items[0].Count)
}
