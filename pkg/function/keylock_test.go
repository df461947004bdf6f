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
			held, err := l.lock(context.Background(), "a")
			require.NoError(t, err)
			n := running.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(time.Millisecond)
			running.Add(-1)
			held.release()
		}()
	}
	wg.Wait()
	assert.Equal(t, int32(1), most.Load(), "one holder of a key at a time")

	held, err := l.lock(context.Background(), "a")
	require.NoError(t, err)
	other, err := l.lock(context.Background(), "b")
	require.NoError(t, err, "another key is free")
	other.release()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = l.lock(ctx, "a")
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	held.release()
	assert.Empty(t, l.held)
}

// A waiter is served by a reconcile that began after it arrived and succeeded; not by one that
// began before it arrived, nor by one that failed.
func TestKeyLocksServeWaitersByALaterReconcile(t *testing.T) {
	var l keyLocks
	ctx := context.Background()
	waiters := make(chan *heldKey)
	arrive := func() {
		before := l.waiting("a")
		go func() {
			h, err := l.lock(ctx, "a")
			assert.NoError(t, err)
			waiters <- h
		}()
		require.Eventually(t, func() bool { return l.waiting("a") == before+1 }, time.Second, time.Millisecond)
	}
	running, err := l.lock(ctx, "a")
	require.NoError(t, err)
	running.started()
	arrive()
	arrive()
	running.succeeded()
	running.release()
	first := <-waiters
	assert.False(t, first.servedSinceArrival(), "the reconcile that ran began before it arrived")
	first.started()
	first.succeeded()
	first.release()
	second := <-waiters
	assert.True(t, second.servedSinceArrival(), "the first waiter's reconcile began after the second arrived")

	arrive()
	second.started()
	second.release() // failed: not succeeded
	third := <-waiters
	assert.False(t, third.servedSinceArrival(), "a failed reconcile serves nobody")
	third.release()
	assert.Empty(t, l.held)
}

// waiting is how many reconciles hold or wait for key.
func (l *keyLocks) waiting(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if k, ok := l.held[key]; ok {
		return k.waiters
	}
	return 0
}
