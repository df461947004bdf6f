package function

import (
	"context"
	"sync"
	"sync/atomic"
)

// keyLocks lets one reconcile of a key run at a time in the process, as Gardener's work queue
// never hands one key to two workers: a duplicated event, a sweep beside an event, or a retry
// of the Broker while the first delivery still runs wait for the running reconcile instead of
// racing it. It does not reach across replicas (two pods of a function are two processes), so
// the writer's preconditions stay what makes concurrent reconciles safe; this removes most of
// their overlaps at no API cost. Entries exist only while a key is held or waited for.
//
// Like the work queue, which holds a key once however many events add it, the events that wait
// for a key share one reconcile: a waiter whose turn comes after a live reconcile of the key
// began after it arrived, and succeeded, is served by that reconcile (heldKey.served). Its event
// was sent after its change was stored, and a live read after its arrival sees that change.
// The events of a key that arrive while one of its reconciles runs (a ManagedResource's objects
// created at once, each an event for the health checks) cost one more reconcile, not one each.
type keyLocks struct {
	mu   sync.Mutex
	held map[string]*keyLock
	// order numbers arrivals and reconciles' starts, across keys, in the order they happen.
	order atomic.Uint64
}

// keyLock is one held key: waiters take their turn through the buffered channel.
type keyLock struct {
	turn    chan struct{}
	waiters int
	// served is the start (in keyLocks.order) of the latest live reconcile of the key that
	// succeeded while the entry existed.
	served uint64
}

// heldKey is a key held by one reconcile.
type heldKey struct {
	locks   *keyLocks
	key     string
	lock    *keyLock
	arrived uint64
	began   uint64
}

// lock waits until key is free and holds it; it gives up when ctx ends (the caller then answers
// as for any transient failure). The holder releases it.
func (l *keyLocks) lock(ctx context.Context, key string) (*heldKey, error) {
	arrived := l.order.Add(1)
	l.mu.Lock()
	if l.held == nil {
		l.held = map[string]*keyLock{}
	}
	k, ok := l.held[key]
	if !ok {
		k = &keyLock{turn: make(chan struct{}, 1)}
		k.turn <- struct{}{}
		l.held[key] = k
	}
	k.waiters++
	l.mu.Unlock()
	select {
	case <-k.turn:
		return &heldKey{locks: l, key: key, lock: k, arrived: arrived}, nil
	case <-ctx.Done():
		l.leave(key, k)
		return nil, ctx.Err()
	}
}

// servedSinceArrival says that a live reconcile of the key that began after this holder arrived
// has succeeded: what made the holder come is converged.
func (h *heldKey) servedSinceArrival() bool {
	h.locks.mu.Lock()
	defer h.locks.mu.Unlock()
	return h.lock.served > h.arrived
}

// started marks the beginning of the holder's reconcile (before its first read).
func (h *heldKey) started() { h.began = h.locks.order.Add(1) }

// succeeded records that the holder's reconcile, which read live from its start, succeeded.
func (h *heldKey) succeeded() {
	h.locks.mu.Lock()
	defer h.locks.mu.Unlock()
	h.lock.served = max(h.lock.served, h.began)
}

// release lets the next waiter take the key.
func (h *heldKey) release() {
	h.lock.turn <- struct{}{}
	h.locks.leave(h.key, h.lock)
}

// leave drops one waiter (or the holder); the last one removes the key.
func (l *keyLocks) leave(key string, k *keyLock) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k.waiters--
	if k.waiters == 0 {
		delete(l.held, key)
	}
}
