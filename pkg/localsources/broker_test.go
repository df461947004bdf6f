package localsources

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	eventingduckv1 "knative.dev/eventing/pkg/apis/duck/v1"
	eventingv1 "knative.dev/eventing/pkg/apis/eventing/v1"
	duckv1 "knative.dev/pkg/apis/duck/v1"
	"knative.dev/pkg/ptr"

	"github.com/gardener-knative/gardener-knative/pkg/configgen"
)

// A Trigger without a delivery of its own is delivered with its Broker's, as Knative's Trigger
// reconciler chooses; its own wins where it has one.
func TestBrokerDeliversWithTheBrokersPolicyUnlessTheTriggerHasItsOwn(t *testing.T) {
	var inherits, own atomic.Int64
	failing := func(n *atomic.Int64) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) { n.Add(1); w.WriteHeader(http.StatusServiceUnavailable) }
	}
	inheritsSink, ownSink := httptest.NewServer(failing(&inherits)), httptest.NewServer(failing(&own))
	defer inheritsSink.Close()
	defer ownSink.Close()

	policy := eventingduckv1.BackoffPolicyLinear
	delivery := func(retries int32) *eventingduckv1.DeliverySpec {
		return &eventingduckv1.DeliverySpec{Retry: ptr.Int32(retries), BackoffPolicy: &policy, BackoffDelay: ptr.String("PT0.001S")}
	}
	trigger := func(subscriber string, d *eventingduckv1.DeliverySpec) *eventingv1.Trigger {
		tr := &eventingv1.Trigger{Spec: eventingv1.TriggerSpec{Subscriber: duckv1.Destination{Ref: &duckv1.KReference{Name: subscriber}}, Delivery: d}}
		tr.Name = subscriber
		return tr
	}
	spec := &eventingv1.Broker{Spec: eventingv1.BrokerSpec{Delivery: delivery(3)}}
	b, err := NewBroker(spec, []*eventingv1.Trigger{trigger("inherits", nil), trigger("own", delivery(1))},
		map[string]string{"inherits": inheritsSink.URL, "own": ownSink.URL}, zap.NewNop().Sugar())
	require.NoError(t, err)

	require.Equal(t, http.StatusAccepted, send(t, b, 1))
	b.wg.Wait()
	assert.Equal(t, int64(4), inherits.Load(), "the Broker's 3 retries after the first attempt")
	assert.Equal(t, int64(2), own.Load(), "the Trigger's own 1 retry")
	assert.Equal(t, int64(2), b.DeadLettered.Load())
}

// An attempt is bounded by the delivery's timeout where it sets one, else by the subscriber's
// own bound (the Service's timeoutSeconds, which queue-proxy enforces): Knative's dispatcher
// has none of its own, so a request waiting for a busy function's slot is not given up early.
func TestBrokerBoundsAnAttemptByTheDeliverysTimeoutElseTheSubscribers(t *testing.T) {
	release := make(chan struct{})
	var answered atomic.Int64
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
			answered.Add(1)
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	var releaseOnce sync.Once
	releaseAll := func() { releaseOnce.Do(func() { close(release) }) }
	defer releaseAll() // before the server's Close, which waits for its handlers
	trigger := func(name string, d *eventingduckv1.DeliverySpec) *eventingv1.Trigger {
		tr := &eventingv1.Trigger{Spec: eventingv1.TriggerSpec{Subscriber: duckv1.Destination{Ref: &duckv1.KReference{Name: "slow"}}, Delivery: d}}
		tr.Name = name
		return tr
	}
	b, err := NewBroker(nil, []*eventingv1.Trigger{
		trigger("bounded", &eventingduckv1.DeliverySpec{Timeout: ptr.String("PT0.1S")}),
		trigger("unbounded", nil),
	}, map[string]string{"slow": slow.URL}, zap.NewNop().Sugar())
	require.NoError(t, err)
	assert.Equal(t, configgen.FunctionTimeout, b.routes[1].timeout)

	require.Equal(t, http.StatusAccepted, send(t, b, 1))
	require.Eventually(t, func() bool { return b.DeadLettered.Load() == 1 }, 5*time.Second, 10*time.Millisecond,
		"the bounded Trigger's attempt ends after its 100 ms")
	time.Sleep(300 * time.Millisecond) // well past the bounded one's timeout
	assert.Equal(t, int64(1), b.InFlight(), "the unbounded Trigger's attempt still waits")
	releaseAll()
	b.wg.Wait()
	assert.Equal(t, int64(1), answered.Load(), "answered once released")
	assert.Equal(t, int64(1), b.DeadLettered.Load())
}
