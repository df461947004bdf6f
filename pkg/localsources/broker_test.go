package localsources

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	eventingduckv1 "knative.dev/eventing/pkg/apis/duck/v1"
	eventingv1 "knative.dev/eventing/pkg/apis/eventing/v1"
	duckv1 "knative.dev/pkg/apis/duck/v1"
	"knative.dev/pkg/ptr"
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
