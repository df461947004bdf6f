package function

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Sweep runs the named sweep: one paginated LIST of each related kind, held for the reconciles'
// reads, then the primary kind streamed page by page, every key of a page reconciled against
// the snapshot, a bounded number at a time.
//
// Only one run per sweep name is in progress at a time; a tick that arrives meanwhile is
// acknowledged and coalesced (the running sweep sees everything it would have). A key that
// fails is counted and logged, and the next tick retries it; the sweep as a whole fails (503,
// so the sender retries) only when a LIST failed, because then it could not look at everything.
func (s *Server) Sweep(ctx context.Context, name string) (err error) {
	sweep, ok := s.fn.Sweep(name)
	if !ok {
		return unprocessable("function %s has no sweep %q", s.fn.Name, name)
	}
	if sweep.Off != nil && sweep.Off(s.config) {
		return &acknowledged{outcome: "off", err: fmt.Errorf("sweep %s is off by configuration", name)}
	}
	lock := s.running[name]
	if !lock.TryLock() {
		s.metrics.coalesced.WithLabelValues(name).Inc()
		return &acknowledged{outcome: "coalesced", err: fmt.Errorf("sweep %s is running; this tick is coalesced into it", name)}
	}
	defer lock.Unlock()

	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, s.opts.SweepTimeout)
	defer cancel()
	r, _ := s.fn.Reconciler(sweep.Reconciler)
	snap := &snapshot{live: s.live[clusterOrSource(r.Cluster)], scheme: s.live[Source].Scheme(), related: map[schema.GroupKind]*listed{}}
	for _, l := range sweep.Related {
		held := newListed(l, 0)
		if err := listPages(ctx, s.live[clusterOrSource(l.Cluster)], snap.scheme, l, s.opts.ListPageSize, func(items []client.Object) error {
			for _, item := range items {
				held.add(item)
			}
			return nil
		}); err != nil {
			s.metrics.sweeps.WithLabelValues(name, "list-failed").Observe(time.Since(start).Seconds())
			return fmt.Errorf("sweep %s: %w", name, err)
		}
		snap.related[l.Kind.GroupKind()] = held
	}

	var (
		objects, failed int
		mu              sync.Mutex
	)
	err = listPages(ctx, s.live[clusterOrSource(sweep.Primary.Cluster)], snap.scheme, sweep.Primary, s.opts.ListPageSize, func(items []client.Object) error {
		page := newListed(sweep.Primary, len(items))
		for _, item := range items {
			page.add(item)
		}
		snap.primary = page
		var wg sync.WaitGroup
		slots := make(chan struct{}, max(1, s.opts.SweepConcurrency))
		for _, key := range page.order {
			slots <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-slots; wg.Done() }()
				err := s.reconcile(ctx, r, Request{Key: key, Reader: snap, Trigger: BySweep, Sweep: name})
				mu.Lock()
				defer mu.Unlock()
				objects++
				switch {
				case err == nil:
				case apierrors.IsNotFound(err) && isTerminalFor(err, r, key):
					// Deleted since the list was read: nothing to converge.
				case isTerminalFor(err, r, key):
					failed++
					s.metrics.keyFailures.WithLabelValues(name, "terminal").Inc()
					s.log.Warn("sweep: key failed terminally", "sweep", name, "object", key, "error", err)
				default:
					failed++
					s.metrics.keyFailures.WithLabelValues(name, "transient").Inc()
					s.log.Warn("sweep: key failed, the next tick retries it", "sweep", name, "object", key, "error", err)
				}
			}()
		}
		wg.Wait()
		return ctx.Err()
	})
	duration := time.Since(start)
	s.metrics.swept.WithLabelValues(name).Set(float64(objects))
	if err != nil {
		s.metrics.sweeps.WithLabelValues(name, "list-failed").Observe(duration.Seconds())
		return fmt.Errorf("sweep %s: %w", name, err)
	}
	s.metrics.sweeps.WithLabelValues(name, "done").Observe(duration.Seconds())
	s.log.Info("sweep done", "sweep", name, "objects", objects, "failed", failed, "duration", duration)
	return nil
}
