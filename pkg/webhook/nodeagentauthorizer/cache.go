package nodeagentauthorizer

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// ttlCache remembers values for a bounded time and number of keys. When full, it drops the
// entries that expired and, if still full, everything: a burst of new keys costs re-reads,
// never unbounded memory.
type ttlCache[V any] struct {
	mu      sync.Mutex
	clock   clock.PassiveClock
	ttl     time.Duration
	size    int
	entries map[string]entry[V]
}

type entry[V any] struct {
	value   V
	expires time.Time
}

func newTTLCache[V any](clk clock.PassiveClock, ttl time.Duration, size int) *ttlCache[V] {
	return &ttlCache[V]{clock: clk, ttl: ttl, size: size, entries: map[string]entry[V]{}}
}

func (c *ttlCache[V]) get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || !c.clock.Now().Before(e.expires) {
		var zero V
		return zero, false
	}
	return e.value, true
}

func (c *ttlCache[V]) put(key string, value V) {
	if c.ttl <= 0 || c.size <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	if len(c.entries) >= c.size {
		for k, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= c.size {
			c.entries = map[string]entry[V]{}
		}
	}
	c.entries[key] = entry[V]{value: value, expires: now.Add(c.ttl)}
}
