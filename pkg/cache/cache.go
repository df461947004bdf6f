// Package cache is the one read cache of the webhooks: values read from an API server are
// reused for a short time, in a bounded number of entries, so that a burst of admission
// requests costs the API server a read per key and TTL instead of one per request.
//
//   - Short-lived: an entry expires TTL after its read started, so a webhook acts on state at
//     most TTL old (each webhook documents its TTL and what the staleness means).
//   - Bounded: at most Size entries; the least recently used goes first
//     (apimachinery's LRUExpireCache).
//   - Concurrent misses of a key share one read (golang.org/x/sync/singleflight); the read runs
//     detached from the first caller's cancellation, bounded by LoadTimeout, so one caller
//     giving up never fails the others.
//   - Failed reads are not kept: the next request reads again.
//   - Scoped by tenant: every key is qualified with tenant.From(ctx), so a request for one
//     control plane never sees what was read for another.
package cache

import (
	"context"
	"fmt"
	"time"

	"github.com/gardener-knative/gardener-knative/pkg/tenant"

	"golang.org/x/sync/singleflight"
	utilcache "k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/utils/clock"
)

// DefaultLoadTimeout bounds one read, as the kube-apiserver bounds a webhook call (10s).
const DefaultLoadTimeout = 10 * time.Second

// Options configure a Cache.
type Options[V any] struct {
	// TTL is how long a value is reused, counted from the start of its read. 0 disables the
	// cache: every Get reads.
	TTL time.Duration
	// Size bounds the number of entries (over all tenants); at least 1.
	Size int
	// Clock tells the time; nil is the real clock.
	Clock clock.PassiveClock
	// LoadTimeout bounds one read; 0 is DefaultLoadTimeout.
	LoadTimeout time.Duration
	// TTLOf, when set, says how long a value read is reused instead of TTL (0: not at all).
	// A value not kept is still handed to the callers that waited for the read (e.g. a Machine
	// without a Node yet, which will get one soon; an unknown tenant, remembered for less long
	// than a known one).
	TTLOf func(V) time.Duration
}

// Cache holds values of type V by tenant and key. Values are shared between requests: callers
// must not modify them.
type Cache[V any] struct {
	opts    Options[V]
	entries *utilcache.LRUExpireCache
	reads   singleflight.Group
}

// entryKey is a key of the LRU: the tenant is a separate field, so no choice of key can reach
// another tenant's entry.
type entryKey struct {
	tenant tenant.Name
	key    string
}

// New returns an empty cache. It fails on a negative TTL or a Size below 1: the callers pass
// configured values, which must be checked before serving.
func New[V any](opts Options[V]) (*Cache[V], error) {
	if opts.TTL < 0 {
		return nil, fmt.Errorf("cache TTL %s is negative", opts.TTL)
	}
	if opts.Size < 1 {
		return nil, fmt.Errorf("cache size %d is below 1", opts.Size)
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.LoadTimeout <= 0 {
		opts.LoadTimeout = DefaultLoadTimeout
	}
	return &Cache[V]{opts: opts, entries: utilcache.NewLRUExpireCacheWithClock(opts.Size, opts.Clock)}, nil
}

// Get returns the value of key for ctx's tenant: the cached one while it is younger than the
// TTL, else the result of load (shared with concurrent callers of the same tenant and key).
// load gets a context that carries ctx's values (the tenant among them) but not its
// cancellation; Get itself returns when ctx ends.
func (c *Cache[V]) Get(ctx context.Context, key string, load func(context.Context) (V, error)) (V, error) {
	if c.opts.TTL == 0 {
		return load(ctx)
	}
	k := entryKey{tenant: tenant.From(ctx), key: key}
	if v, ok := c.entries.Get(k); ok {
		return v.(V), nil
	}
	// A tenant is a namespace name and cannot contain NUL: the flight key is unambiguous.
	flight := c.reads.DoChan(string(k.tenant)+"\x00"+key, func() (any, error) {
		// A read that finished between our miss and this flight has filled the entry.
		if v, ok := c.entries.Get(k); ok {
			return v, nil
		}
		loadCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.opts.LoadTimeout)
		defer cancel()
		// The value shows the cluster as of the start of its read: its age counts from then.
		started := c.opts.Clock.Now()
		v, err := load(loadCtx)
		if err != nil {
			return v, err
		}
		ttl := c.opts.TTL
		if c.opts.TTLOf != nil {
			ttl = c.opts.TTLOf(v)
		}
		if remaining := ttl - c.opts.Clock.Since(started); remaining > 0 {
			c.entries.Add(k, v, remaining)
		}
		return v, nil
	})
	select {
	case r := <-flight:
		v, _ := r.Val.(V)
		return v, r.Err
	case <-ctx.Done():
		var zero V
		return zero, ctx.Err()
	}
}

// Len is the number of entries that have not expired.
func (c *Cache[V]) Len() int { return len(c.entries.Keys()) }

// Forget drops every entry of tenant t (e.g. when the tenant's target cluster changed).
func (c *Cache[V]) Forget(t tenant.Name) {
	c.entries.RemoveAll(func(k any) bool { return k.(entryKey).tenant == t })
}
