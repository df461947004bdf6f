package function

import (
	"context"
	"sync"
)

// keyLocks lets one reconcile of a key run at a time in the process, as Gardener's work queue
// never hands one key to two workers: a duplicated event, a sweep beside an event, or a retry
// of the Broker while the first delivery still runs wait for the running reconcile instead of
// racing it. It does not reach across replicas (two pods of a function are two processes), so
// the writer's preconditions stay what makes concurrent reconciles safe; this removes most of
// their overlaps at no API cost. Entries exist only while a key is held or waited for.
type keyLocks struct {
	mu   sync.Mutex
	held map[string]*keyLock
}

// keyLock is one held key: waiters take their turn through the buffered channel.
type keyLock struct {
	turn    chan struct{}
	waiters int
}

// lock waits until key is free and holds it; it gives up when ctx ends (the caller then answers
// as for any transient failure). The returned function releases it.
func (l *keyLocks) lock(ctx context.Context, key string) (func(), error) {
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
		return func() { l.unlock(key, k) }, nil
	case <-ctx.Done():
		l.leave(key, k)
		return nil, ctx.Err()
	}
}

func (l *keyLocks) unlock(key string, k *keyLock) {
	k.turn <- struct{}{}
	l.leave(key, k)
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
