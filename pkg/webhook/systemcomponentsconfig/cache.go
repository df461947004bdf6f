package systemcomponentsconfig

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// ttlCache holds one value for ttl after loading it: every Pod creation needs the taints of
// the system-component Nodes, and a LIST per Pod would cost the API server more than the
// webhook saves. Concurrent callers of an expired cache share one load; a failed load is not
// cached, so the next caller retries. It holds a single value, so its memory is bounded by
// that value.
type ttlCache[T any] struct {
	clock clock.PassiveClock
	ttl   time.Duration
	// load fetches the value; it runs detached from any caller's cancellation (other callers
	// may be waiting for it), bounded by loadTimeout.
	load        func(context.Context) (T, error)
	loadTimeout time.Duration

	mu       sync.Mutex
	value    T
	loadedAt time.Time
	loaded   bool
	inflight *loadCall[T]
}

type loadCall[T any] struct {
	done  chan struct{}
	value T
	err   error
}

func newTTLCache[T any](c clock.PassiveClock, ttl, loadTimeout time.Duration, load func(context.Context) (T, error)) *ttlCache[T] {
	return &ttlCache[T]{clock: c, ttl: ttl, load: load, loadTimeout: loadTimeout}
}

// Get returns the cached value while it is younger than ttl, else waits for a fresh one (or
// for ctx to end).
func (c *ttlCache[T]) Get(ctx context.Context) (T, error) {
	c.mu.Lock()
	if c.loaded && c.clock.Since(c.loadedAt) < c.ttl {
		v := c.value
		c.mu.Unlock()
		return v, nil
	}
	call := c.inflight
	if call == nil {
		call = &loadCall[T]{done: make(chan struct{})}
		c.inflight = call
		go c.fill(context.WithoutCancel(ctx), call)
	}
	c.mu.Unlock()

	select {
	case <-call.done:
		return call.value, call.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

func (c *ttlCache[T]) fill(ctx context.Context, call *loadCall[T]) {
	ctx, cancel := context.WithTimeout(ctx, c.loadTimeout)
	defer cancel()
	// The age counts from the start of the load: the value reflects the cluster as of then.
	started := c.clock.Now()
	call.value, call.err = c.load(ctx)

	c.mu.Lock()
	defer c.mu.Unlock()
	if call.err == nil {
		c.value, c.loadedAt, c.loaded = call.value, started, true
	}
	c.inflight = nil
	close(call.done)
}
