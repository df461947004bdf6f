package localsources

import (
	"context"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
)

// Faults configure a FaultRelay: what it does to each event on its way to the Broker.
type Faults struct {
	// Drop is the share of events lost (0–1): the sender is told they were accepted.
	Drop float64
	// MaxDuplicates delivers each event 1 to 1+MaxDuplicates times.
	MaxDuplicates int
	// Reorder holds each delivery for a random time below it, so that events within the window
	// arrive in any order.
	Reorder time.Duration
	// Delay holds each delivery for a random time up to it.
	Delay time.Duration
}

// Zero tells whether the faults leave every event alone.
func (f Faults) Zero() bool { return f == Faults{} }

// FaultStats are what a FaultRelay did.
type FaultStats struct {
	// Received events, Dropped of them, Duplicates delivered in addition to the first copy, and
	// Held deliveries (reordered or delayed).
	Received, Dropped, Duplicates, Held int64
}

// FaultRelay stands in front of a Broker's ingress and drops, duplicates, reorders and delays
// the events the sources send it, as a lossy network and Knative's at-least-once delivery may.
// Its random choices come from one seeded source, so a schedule can be told by its seed (the
// timing of the goroutines still varies from run to run). Heal ends the faults.
type FaultRelay struct {
	next   http.Handler
	faults Faults

	mu      sync.Mutex
	rand    *rand.Rand
	healed  bool
	pending map[*time.Timer]cloudevents.Event
	wg      sync.WaitGroup

	received, dropped, duplicates, held atomic.Int64
}

// NewFaultRelay relays to next (a Broker) with faults, its random choices seeded by seed.
func NewFaultRelay(next http.Handler, faults Faults, seed int64) *FaultRelay {
	return &FaultRelay{next: next, faults: faults, rand: rand.New(rand.NewSource(seed)), pending: map[*time.Timer]cloudevents.Event{}}
}

// ServeHTTP accepts an event as the Broker's ingress does (202), and then relays it with the
// faults.
func (r *FaultRelay) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	event, ok := ingest(w, req)
	if !ok {
		return
	}
	r.received.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.healed || r.faults.Zero() {
		r.forwardLocked(*event, 0)
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if r.rand.Float64() < r.faults.Drop {
		r.dropped.Add(1)
		w.WriteHeader(http.StatusAccepted)
		return
	}
	copies := 1
	if r.faults.MaxDuplicates > 0 {
		copies += r.rand.Intn(r.faults.MaxDuplicates + 1)
	}
	r.duplicates.Add(int64(copies - 1))
	for range copies {
		var hold time.Duration
		if r.faults.Reorder > 0 {
			hold += time.Duration(r.rand.Int63n(int64(r.faults.Reorder)))
		}
		if r.faults.Delay > 0 {
			hold += time.Duration(r.rand.Int63n(int64(r.faults.Delay) + 1))
		}
		r.forwardLocked(*event, hold)
	}
	w.WriteHeader(http.StatusAccepted)
}

// forwardLocked hands the event to the Broker after hold; r.mu is held.
func (r *FaultRelay) forwardLocked(event cloudevents.Event, hold time.Duration) {
	if hold <= 0 {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.deliver(event)
		}()
		return
	}
	r.held.Add(1)
	r.wg.Add(1)
	var timer *time.Timer
	timer = time.AfterFunc(hold, func() {
		r.mu.Lock()
		_, still := r.pending[timer]
		delete(r.pending, timer)
		r.mu.Unlock()
		if still {
			defer r.wg.Done()
			r.deliver(event)
		}
	})
	r.pending[timer] = event
}

func (r *FaultRelay) deliver(event cloudevents.Event) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, "/", nil)
	if err != nil {
		return
	}
	if err := cehttp.WriteRequest(req.Context(), binding.ToMessage(&event), req); err != nil {
		return
	}
	r.next.ServeHTTP(httptest.NewRecorder(), req)
}

// Heal ends the faults: events held back are delivered at once, and every later event passes
// unharmed.
func (r *FaultRelay) Heal() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.healed = true
	for timer, event := range r.pending {
		if timer.Stop() {
			delete(r.pending, timer)
			go func() {
				defer r.wg.Done()
				r.deliver(event)
			}()
		}
	}
}

// Wait waits until every event relayed so far has been handed to the Broker.
func (r *FaultRelay) Wait() { r.wg.Wait() }

// Stats reports what the relay did so far.
func (r *FaultRelay) Stats() FaultStats {
	return FaultStats{Received: r.received.Load(), Dropped: r.dropped.Load(), Duplicates: r.duplicates.Load(), Held: r.held.Load()}
}
