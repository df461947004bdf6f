package systemcomponentsconfig

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	testclock "k8s.io/utils/clock/testing"
)

func counting(value *atomic.Int64, loads *atomic.Int64) func(context.Context) (int64, error) {
	return func(context.Context) (int64, error) {
		loads.Add(1)
		return value.Load(), nil
	}
}

func TestCacheServesWithinTTLAndReloadsAfter(t *testing.T) {
	clk := testclock.NewFakePassiveClock(time.Unix(0, 0))
	var value, loads atomic.Int64
	value.Store(1)
	c := newTTLCache(clk, 5*time.Second, time.Second, counting(&value, &loads))
	ctx := context.Background()

	v, err := c.Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1), v)

	value.Store(2)
	clk.SetTime(clk.Now().Add(5*time.Second - time.Nanosecond))
	v, err = c.Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1), v, "stale for up to the TTL")
	assert.Equal(t, int64(1), loads.Load())

	clk.SetTime(clk.Now().Add(time.Nanosecond))
	v, err = c.Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(2), v, "reloaded once the TTL has passed")
	assert.Equal(t, int64(2), loads.Load())
}

func TestCacheWithZeroTTLAlwaysLoads(t *testing.T) {
	clk := testclock.NewFakePassiveClock(time.Unix(0, 0))
	var value, loads atomic.Int64
	c := newTTLCache(clk, 0, time.Second, counting(&value, &loads))
	for range 3 {
		_, err := c.Get(context.Background())
		require.NoError(t, err)
	}
	assert.Equal(t, int64(3), loads.Load())
}

func TestCacheDoesNotKeepErrors(t *testing.T) {
	clk := testclock.NewFakePassiveClock(time.Unix(0, 0))
	fail := true
	c := newTTLCache(clk, time.Minute, time.Second, func(context.Context) (string, error) {
		if fail {
			return "", errors.New("boom")
		}
		return "ok", nil
	})
	_, err := c.Get(context.Background())
	require.EqualError(t, err, "boom")
	fail = false
	v, err := c.Get(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "ok", v)
}

// Concurrent callers of an empty cache share one load.
func TestCacheSharesOneLoad(t *testing.T) {
	clk := testclock.NewFakePassiveClock(time.Unix(0, 0))
	var loads atomic.Int64
	release := make(chan struct{})
	c := newTTLCache(clk, time.Minute, time.Second, func(context.Context) (int, error) {
		loads.Add(1)
		<-release
		return 42, nil
	})
	var wg sync.WaitGroup
	results := make([]int, 10)
	for i := range results {
		wg.Go(func() {
			v, err := c.Get(context.Background())
			assert.NoError(t, err)
			results[i] = v
		})
	}
	require.Eventually(t, func() bool { return loads.Load() == 1 }, 5*time.Second, time.Millisecond)
	close(release)
	wg.Wait()
	assert.Equal(t, int64(1), loads.Load())
	for _, v := range results {
		assert.Equal(t, 42, v)
	}
}

// A caller whose request ends stops waiting; the load goes on for the others and fills the
// cache.
func TestCacheCallerCancellationDoesNotAbortTheLoad(t *testing.T) {
	clk := testclock.NewFakePassiveClock(time.Unix(0, 0))
	release := make(chan struct{})
	var loadErr atomic.Value
	c := newTTLCache(clk, time.Minute, time.Second, func(ctx context.Context) (int, error) {
		<-release
		if err := ctx.Err(); err != nil {
			loadErr.Store(err)
		}
		return 7, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.Get(ctx)
	require.ErrorIs(t, err, context.Canceled)

	close(release)
	v, err := c.Get(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 7, v)
	assert.Nil(t, loadErr.Load(), "the load ran with a live context")
}

func TestCacheLoadIsBounded(t *testing.T) {
	clk := testclock.NewFakePassiveClock(time.Unix(0, 0))
	c := newTTLCache(clk, time.Minute, 10*time.Millisecond, func(ctx context.Context) (int, error) {
		<-ctx.Done()
		return 0, ctx.Err()
	})
	_, err := c.Get(context.Background())
	require.ErrorIs(t, err, context.DeadlineExceeded)
}
