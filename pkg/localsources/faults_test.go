package localsources

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
)

// sink records the IDs of the events it receives, in order.
type sink struct {
	mu  sync.Mutex
	ids []string
}

func (s *sink) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	event, err := binding.ToEvent(req.Context(), cehttp.NewMessageFromHttpRequest(req))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.ids = append(s.ids, event.ID())
	s.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
}

func (s *sink) received() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.ids...)
}

func send(t *testing.T, h http.Handler, id int) int {
	t.Helper()
	event := cloudevents.NewEvent()
	event.SetID(strconv.Itoa(id))
	event.SetType("dev.knative.apiserver.resource.update")
	event.SetSource("test")
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, "/", nil)
	require.NoError(t, err)
	require.NoError(t, cehttp.WriteRequest(req.Context(), binding.ToMessage(&event), req))
	answer := httptest.NewRecorder()
	h.ServeHTTP(answer, req)
	return answer.Code
}

func TestFaultRelayDropsAShareAndTellsTheSenderAllWasAccepted(t *testing.T) {
	s := &sink{}
	relay := NewFaultRelay(s, Faults{Drop: 0.3}, 1)
	for i := range 1000 {
		require.Equal(t, http.StatusAccepted, send(t, relay, i))
	}
	relay.Wait()
	stats := relay.Stats()
	assert.EqualValues(t, 1000, stats.Received)
	assert.InDelta(t, 300, stats.Dropped, 50)
	assert.Len(t, s.received(), 1000-int(stats.Dropped))
}

func TestFaultRelayDuplicatesUpToItsMaximum(t *testing.T) {
	s := &sink{}
	relay := NewFaultRelay(s, Faults{MaxDuplicates: 3}, 1)
	for i := range 200 {
		send(t, relay, i)
	}
	relay.Wait()
	copies := map[string]int{}
	for _, id := range s.received() {
		copies[id]++
	}
	assert.Len(t, copies, 200, "every event arrives")
	seen := map[int]bool{}
	for _, n := range copies {
		assert.LessOrEqual(t, n, 4)
		seen[n] = true
	}
	assert.Equal(t, map[int]bool{1: true, 2: true, 3: true, 4: true}, seen, "once, and with one to three duplicates")
	assert.EqualValues(t, len(s.received())-200, relay.Stats().Duplicates)
}

func TestFaultRelayReordersWithinItsWindow(t *testing.T) {
	s := &sink{}
	relay := NewFaultRelay(s, Faults{Reorder: 200 * time.Millisecond}, 1)
	for i := range 50 {
		send(t, relay, i)
	}
	relay.Wait()
	got := s.received()
	require.Len(t, got, 50)
	inOrder := true
	for i := range got {
		if got[i] != strconv.Itoa(i) {
			inOrder = false
		}
	}
	assert.False(t, inOrder, "50 events held up to 200 ms each arrive out of order")
}

func TestFaultRelayHealDeliversWhatItHeldAtOnceAndThenPassesEverything(t *testing.T) {
	s := &sink{}
	relay := NewFaultRelay(s, Faults{Delay: time.Hour, Drop: 0.5}, 1)
	for i := range 20 {
		send(t, relay, i)
	}
	held := 20 - relay.Stats().Dropped
	require.Empty(t, s.received(), "held for up to an hour")
	relay.Heal()
	relay.Wait()
	assert.Len(t, s.received(), int(held), "what was held arrives on healing; what was dropped stays lost")
	for i := 100; i < 150; i++ {
		send(t, relay, i)
	}
	relay.Wait()
	assert.Len(t, s.received(), int(held)+50, "healed: nothing dropped or held")
}

func TestFaultRelayRefusesWhatIsNoCloudEvent(t *testing.T) {
	relay := NewFaultRelay(&sink{}, Faults{}, 1)
	answer := httptest.NewRecorder()
	relay.ServeHTTP(answer, httptest.NewRequest(http.MethodPost, "/", nil))
	assert.Equal(t, http.StatusBadRequest, answer.Code)
}

// Faults are injected in front of the in-process Broker: sources that send to a Broker of their
// own (Options.BrokerURL) refuse them rather than run without them unnoticed.
func TestSourcesSendingToABrokerOfTheirOwnRefuseFaults(t *testing.T) {
	_, err := Start(context.Background(), nil, Options{Config: &rest.Config{Host: "http://127.0.0.1:1"}, BrokerURL: "http://127.0.0.1:2", Faults: Faults{Drop: 0.5}})
	require.ErrorContains(t, err, "faults are injected in front of the in-process Broker")
}
