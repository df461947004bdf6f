package cache_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gardener-knative/gardener-knative/pkg/tenant"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	testclock "k8s.io/utils/clock/testing"

	"github.com/gardener-knative/gardener-knative/pkg/cache"
)

// counting is a load function that counts its calls and answers value.
type counting struct {
	calls atomic.Int32
	value string
}

func (c *counting) load(context.Context) (string, error) {
	c.calls.Add(1)
	return c.value, nil
}

func newCache(t *testing.T, opts cache.Options[string]) *cache.Cache[string] {
	t.Helper()
	c, err := cache.New(opts)
	require.NoError(t, err)
	return c
}

func TestEntriesExpireTTLAfterTheirRead(t *testing.T) {
	clk := testclock.NewFakeClock(time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC))
	c := newCache(t, cache.Options[string]{TTL: 5 * time.Second, Size: 10, Clock: clk})
	ctx := context.Background()
	src := &counting{value: "v1"}

	v, err := c.Get(ctx, "k", src.load)
	require.NoError(t, err)
	assert.Equal(t, "v1", v)

	src.value = "v2"
	clk.Step(5 * time.Second)
	v, err = c.Get(ctx, "k", src.load)
	require.NoError(t, err)
	assert.Equal(t, "v1", v, "reused up to the TTL")
	assert.EqualValues(t, 1, src.calls.Load())

	clk.Step(time.Nanosecond)
	v, err = c.Get(ctx, "k", src.load)
	require.NoError(t, err)
	assert.Equal(t, "v2", v, "read again after the TTL")
	assert.EqualValues(t, 2, src.calls.Load())
}

func TestTheAgeCountsFromTheStartOfTheRead(t *testing.T) {
	clk := testclock.NewFakeClock(time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC))
	c := newCache(t, cache.Options[string]{TTL: 5 * time.Second, Size: 10, Clock: clk})
	ctx := context.Background()
	slowRead := func(context.Context) (string, error) {
		clk.Step(3 * time.Second) // the API server took 3s to answer
		return "slow", nil
	}
	_, err := c.Get(ctx, "k", slowRead)
	require.NoError(t, err)

	clk.Step(2*time.Second + time.Nanosecond)
	src := &counting{value: "fresh"}
	v, err := c.Get(ctx, "k", src.load)
	require.NoError(t, err)
	assert.Equal(t, "fresh", v, "5s after the read started, the value is stale")

	tooSlow := newCache(t, cache.Options[string]{TTL: 2 * time.Second, Size: 10, Clock: clk})
	_, err = tooSlow.Get(ctx, "k", slowRead)
	require.NoError(t, err)
	assert.Zero(t, tooSlow.Len(), "a read that took longer than the TTL is not kept")
}

func TestSizeBoundsEntriesLeastRecentlyUsedFirst(t *testing.T) {
	c := newCache(t, cache.Options[string]{TTL: time.Hour, Size: 2})
	ctx := context.Background()
	src := &counting{value: "v"}
	for _, k := range []string{"a", "b"} {
		_, err := c.Get(ctx, k, src.load)
		require.NoError(t, err)
	}
	_, err := c.Get(ctx, "a", src.load) // a is now the most recently used
	require.NoError(t, err)
	_, err = c.Get(ctx, "c", src.load) // evicts b
	require.NoError(t, err)
	assert.Equal(t, 2, c.Len())
	assert.EqualValues(t, 3, src.calls.Load())

	_, err = c.Get(ctx, "a", src.load)
	require.NoError(t, err)
	assert.EqualValues(t, 3, src.calls.Load(), "a stayed")
	_, err = c.Get(ctx, "b", src.load)
	require.NoError(t, err)
	assert.EqualValues(t, 4, src.calls.Load(), "b was evicted")
}

func TestConcurrentMissesShareOneRead(t *testing.T) {
	c := newCache(t, cache.Options[string]{TTL: time.Hour, Size: 10})
	release := make(chan struct{})
	var calls atomic.Int32
	load := func(context.Context) (string, error) {
		calls.Add(1)
		<-release
		return "shared", nil
	}
	const callers = 20
	var started, done sync.WaitGroup
	results := make([]string, callers)
	for i := range callers {
		started.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			started.Done()
			v, err := c.Get(context.Background(), "k", load)
			assert.NoError(t, err)
			results[i] = v
		}()
	}
	started.Wait()
	// Every caller is in Get (or about to be): wait until the one read is underway, then
	// until no further read starts while it is held.
	require.Eventually(t, func() bool { return calls.Load() == 1 }, 10*time.Second, time.Millisecond)
	close(release)
	done.Wait()
	for _, r := range results {
		assert.Equal(t, "shared", r)
	}
	// Callers that arrived after the read finished found the entry.
	assert.EqualValues(t, 1, calls.Load())
}

func TestACallerGivingUpDoesNotFailTheOthers(t *testing.T) {
	c := newCache(t, cache.Options[string]{TTL: time.Hour, Size: 10})
	release := make(chan struct{})
	loadStarted := make(chan struct{})
	load := func(ctx context.Context) (string, error) {
		close(loadStarted)
		<-release
		return "v", ctx.Err()
	}
	first, cancel := context.WithCancel(context.Background())
	firstErr := make(chan error, 1)
	go func() {
		_, err := c.Get(first, "k", load)
		firstErr <- err
	}()
	<-loadStarted
	second := make(chan string, 1)
	go func() {
		v, err := c.Get(context.Background(), "k", func(context.Context) (string, error) { return "", errors.New("second read") })
		assert.NoError(t, err)
		second <- v
	}()
	cancel()
	assert.ErrorIs(t, <-firstErr, context.Canceled)
	close(release)
	assert.Equal(t, "v", <-second, "the read went on for the callers still waiting")
}

func TestFailedReadsAreNotKept(t *testing.T) {
	c := newCache(t, cache.Options[string]{TTL: time.Hour, Size: 10})
	ctx := context.Background()
	_, err := c.Get(ctx, "k", func(context.Context) (string, error) { return "", errors.New("API server unavailable") })
	require.Error(t, err)
	src := &counting{value: "v"}
	v, err := c.Get(ctx, "k", src.load)
	require.NoError(t, err)
	assert.Equal(t, "v", v)
}

func TestKeepDecidesWhatIsReused(t *testing.T) {
	c := newCache(t, cache.Options[string]{TTL: time.Hour, Size: 10, TTLOf: func(v string) time.Duration {
		if v == "" {
			return 0
		}
		return time.Hour
	}})
	ctx := context.Background()
	empty := &counting{value: ""}
	for range 2 {
		v, err := c.Get(ctx, "k", empty.load)
		require.NoError(t, err)
		assert.Empty(t, v)
	}
	assert.EqualValues(t, 2, empty.calls.Load(), "an unkept value is read again")
}

func TestTenantsNeverShareEntries(t *testing.T) {
	c := newCache(t, cache.Options[string]{TTL: time.Hour, Size: 10})
	tenantA := tenant.With(context.Background(), "shoot--a--one")
	tenantB := tenant.With(context.Background(), "shoot--b--two")
	single := context.Background()

	for _, tc := range []struct {
		ctx   context.Context
		value string
	}{{tenantA, "a"}, {tenantB, "b"}, {single, "seed"}} {
		v, err := c.Get(tc.ctx, "namespace/kube-system", func(ctx context.Context) (string, error) {
			// The read sees the caller's tenant, to read that tenant's cluster.
			assert.Equal(t, tenant.From(tc.ctx), tenant.From(ctx))
			return tc.value, nil
		})
		require.NoError(t, err)
		assert.Equal(t, tc.value, v)
	}
	for _, tc := range []struct {
		ctx  context.Context
		want string
	}{{tenantA, "a"}, {tenantB, "b"}, {single, "seed"}} {
		v, err := c.Get(tc.ctx, "namespace/kube-system", func(context.Context) (string, error) {
			return "", fmt.Errorf("tenant %q read again", tenant.From(tc.ctx))
		})
		require.NoError(t, err)
		assert.Equal(t, tc.want, v)
	}

	c.Forget("shoot--a--one")
	src := &counting{value: "a2"}
	v, err := c.Get(tenantA, "namespace/kube-system", src.load)
	require.NoError(t, err)
	assert.Equal(t, "a2", v, "forgotten")
	v, err = c.Get(tenantB, "namespace/kube-system", src.load)
	require.NoError(t, err)
	assert.Equal(t, "b", v, "another tenant's entry stays")
}

func TestConcurrentMissesOfDifferentTenantsReadSeparately(t *testing.T) {
	c := newCache(t, cache.Options[string]{TTL: time.Hour, Size: 10})
	release := make(chan struct{})
	var reads sync.WaitGroup
	reads.Add(2)
	load := func(ctx context.Context) (string, error) {
		reads.Done()
		<-release
		return string(tenant.From(ctx)), nil
	}
	results := make(chan string, 2)
	for _, name := range []tenant.Name{"shoot--a--one", "shoot--b--two"} {
		go func() {
			v, err := c.Get(tenant.With(context.Background(), name), "k", load)
			assert.NoError(t, err)
			results <- string(name) + "=" + v
		}()
	}
	reads.Wait() // both reads started: they were not merged into one
	close(release)
	assert.ElementsMatch(t, []string{"shoot--a--one=shoot--a--one", "shoot--b--two=shoot--b--two"}, []string{<-results, <-results})
}

func TestZeroTTLReadsEveryTime(t *testing.T) {
	c := newCache(t, cache.Options[string]{TTL: 0, Size: 1})
	src := &counting{value: "v"}
	for range 3 {
		_, err := c.Get(context.Background(), "k", src.load)
		require.NoError(t, err)
	}
	assert.EqualValues(t, 3, src.calls.Load())
}

func TestNewRejectsBadOptions(t *testing.T) {
	_, err := cache.New(cache.Options[string]{TTL: -time.Second, Size: 1})
	assert.Error(t, err)
	_, err = cache.New(cache.Options[string]{TTL: time.Second, Size: 0})
	assert.Error(t, err)
}

func BenchmarkCacheHit(b *testing.B) {
	c, err := cache.New(cache.Options[string]{TTL: time.Hour, Size: 1000})
	require.NoError(b, err)
	ctx := tenant.With(context.Background(), "shoot--a--one")
	load := func(context.Context) (string, error) { return "v", nil }
	_, _ = c.Get(ctx, "k", load)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Get(ctx, "k", load); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A read is bounded by LoadTimeout even when no caller gives up: one hanging API call must
// not hold every later caller of the key.
func TestReadsAreBounded(t *testing.T) {
	c := newCache(t, cache.Options[string]{TTL: time.Hour, Size: 10, LoadTimeout: 10 * time.Millisecond})
	_, err := c.Get(context.Background(), "k", func(ctx context.Context) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	})
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	src := &counting{value: "v"}
	v, err := c.Get(context.Background(), "k", src.load)
	require.NoError(t, err)
	assert.Equal(t, "v", v, "the timed-out read was not kept")
}
