package function

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// One holder per key at a time; other keys are not held up; a waiter whose context ends gives
// up; no entry outlives its last holder.
func TestKeyLocks(t *testing.T) {
	var l keyLocks
	var running, most atomic.Int32
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			release, err := l.lock(context.Background(), "a")
			require.NoError(t, err)
			n := running.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(time.Millisecond)
			running.Add(-1)
			release()
		}()
	}
	wg.Wait()
	assert.Equal(t, int32(1), most.Load(), "one holder of a key at a time")

	release, err := l.lock(context.Background(), "a")
	require.NoError(t, err)
	other, err := l.lock(context.Background(), "b")
	require.NoError(t, err, "another key is free")
	other()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = l.lock(ctx, "a")
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	release()
	assert.Empty(t, l.held)
}
