package function

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/clients"
)

// tenantSweepConcurrency bounds how many tenants a per-seed sweep works on at once: each holds
// its own snapshot.
const tenantSweepConcurrency = 4

// Sweep runs the named sweep: one paginated LIST of each related kind, held for the reconciles'
// reads, then the primary kind streamed page by page, every key of a page reconciled against
// the snapshot, a bounded number at a time.
//
// Per seed, a sweep that lists a Target kind runs once per tenant (the seed's Clusters, one
// metadata-only LIST): its Source lists of namespaced kinds are confined to the tenant's
// namespace and its Target lists read the tenant's cluster, so it costs a constant number of
// LISTs per tenant and kind. Other sweeps run once, each key for the tenant of its namespace.
//
// Only one run per sweep name is in progress at a time. A tick that arrives meanwhile cannot be
// answered by the running sweep, whose LISTs may be older than the tick: it waits for the next
// run, which starts as soon as the running one ends and serves every tick that arrived in
// between (coalesced). So every tick is answered by a sweep that began after it.
//
// A run belongs to no tick: it has SweepTimeout of its own from its start, and goes on when the
// requests of the ticks it serves end. A tick waits for its run's answer at most SweepTimeout
// from its arrival, so that no request outlasts the timeout (nor Knative's revision timeout);
// a sender that gives up earlier (its own bound counts from when it sent, time queued in front
// of the function included) only stops waiting. So a sweep that takes longer than what its tick
// had left still finishes, and the tick's retry joins the next run. A run whose ticks all
// stopped waiting before it started does not run. A key that fails is counted and logged, and
// the next tick retries it; the sweep as a whole fails (503, so the sender retries) only when a
// LIST failed, because then it could not look at everything.
func (s *Server) Sweep(ctx context.Context, name string) error {
	sweep, ok := s.fn.Sweep(name)
	if !ok {
		return unprocessable("function %s has no sweep %q", s.fn.Name, name)
	}
	if sweep.Off != nil && sweep.Off(s.config) {
		return &acknowledged{outcome: "off", err: fmt.Errorf("sweep %s is off by configuration", name)}
	}
	// The run keeps the values of the context it starts from, but not its end.
	detached := context.WithoutCancel(ctx)
	ctx, cancel := context.WithTimeout(ctx, s.opts.SweepTimeout)
	defer cancel()
	coalesced, err := s.runs[name].do(ctx, func(ticks int) error {
		ctx, cancel := context.WithTimeout(detached, s.opts.SweepTimeout)
		defer cancel()
		return s.sweep(ctx, sweep, ticks)
	})
	if errors.Is(err, errStoppedWaiting) {
		return fmt.Errorf("sweep %s: %w", name, err)
	}
	if !coalesced {
		return err
	}
	s.metrics.coalesced.WithLabelValues(name).Inc()
	if err != nil {
		return err
	}
	return &acknowledged{outcome: "coalesced", err: fmt.Errorf("sweep %s was running; this tick was served by the next run", name)}
}

// errStoppedWaiting is a tick's answer when its time ran out before its run's answer came.
var errStoppedWaiting = errors.New("the tick's time ran out before the sweep run serving it ended")

// sweepRuns runs one sweep name's runs one at a time, each tick that arrives during a run
// joining the next.
type sweepRuns struct {
	mu      sync.Mutex
	running bool
	// next is the run that starts when the running one ends, shared by the ticks waiting for it.
	next *sweepRun
}

type sweepRun struct {
	sweep func(ticks int) error
	done  chan struct{}
	// ticks joined the run; waiting of them still wait for its answer. Both are final once it
	// has started: no tick joins a run that has.
	ticks, waiting int
	err            error
}

// do joins a tick to a run, the one it starts now if none is in progress (coalesced false),
// else the next one, and waits for that run's error or for ctx to end, whichever comes first
// (errStoppedWaiting, wrapping ctx's error). sweep is how to run it, if this tick starts the
// run; it is told how many ticks its run serves. Runs do not end with ctx.
func (r *sweepRuns) do(ctx context.Context, sweep func(ticks int) error) (coalesced bool, err error) {
	r.mu.Lock()
	coalesced = r.running
	run := r.next
	if !coalesced || run == nil {
		run = &sweepRun{sweep: sweep, done: make(chan struct{})}
	}
	run.ticks++
	run.waiting++
	if coalesced {
		r.next = run
	} else {
		r.running = true
		go r.execute(run, run.ticks)
	}
	r.mu.Unlock()
	select {
	case <-run.done:
		return coalesced, run.err
	case <-ctx.Done():
		r.mu.Lock()
		run.waiting--
		r.mu.Unlock()
		return coalesced, fmt.Errorf("%w: %w", errStoppedWaiting, ctx.Err())
	}
}

// execute runs run, then hands over to the next run.
func (r *sweepRuns) execute(run *sweepRun, ticks int) {
	defer r.handOver()
	defer close(run.done)
	// Not in a request's goroutine: a panic is the run's answer, not the process's end.
	_, run.err = safely(func() (struct{}, error) { return struct{}{}, run.sweep(ticks) })
}

// handOver ends a run: the next one starts at once if a tick still waits for it; if none does,
// it is dropped (whoever retries those ticks joins a run that begins after them).
func (r *sweepRuns) handOver() {
	r.mu.Lock()
	defer r.mu.Unlock()
	next := r.next
	r.next = nil
	if next == nil || next.waiting == 0 {
		r.running = false
		return
	}
	go r.execute(next, next.ticks)
}

// sweep is one run of a sweep, serving ticks ticks, within ctx's deadline.
func (s *Server) sweep(ctx context.Context, sweep Sweep, ticks int) (err error) {
	name := sweep.Name
	start := time.Now()
	if s.releaseMemory != nil {
		defer s.releaseMemory()
	}
	var result sweepResult
	if s.targets != nil && s.targets.mode == PerSeed && runsPerTenant(sweep) {
		result, err = s.sweepTenants(ctx, sweep)
	} else {
		result, err = s.sweepOnce(ctx, sweep, "")
	}
	duration := time.Since(start)
	s.metrics.swept.WithLabelValues(name).Set(float64(result.objects))
	if err != nil {
		s.metrics.sweeps.WithLabelValues(name, "list-failed").Observe(duration.Seconds())
		return fmt.Errorf("sweep %s: %w", name, err)
	}
	s.metrics.sweeps.WithLabelValues(name, "done").Observe(duration.Seconds())
	s.log.Info("sweep done", "sweep", name, "objects", result.objects, "failed", result.failed, "tenants", result.tenants, "ticks", ticks, "duration", duration)
	return nil
}

type sweepResult struct{ objects, failed, tenants int }

func (r *sweepResult) add(o sweepResult) {
	r.objects += o.objects
	r.failed += o.failed
	r.tenants += o.tenants
}

// runsPerTenant tells a sweep that runs once per tenant per seed: one that lists a Target kind,
// or its primary kind per tenant.
func runsPerTenant(sweep Sweep) bool {
	if sweep.Primary.PerTenant {
		return true
	}
	for _, l := range append([]List{sweep.Primary}, sweep.Related...) {
		if clusterOrSource(l.Cluster) == Target {
			return true
		}
	}
	return false
}

// sweepTenants runs the sweep once per tenant of the seed, a few tenants at a time. A tenant
// that cannot be reached is counted and skipped (the next tick tries it again); a failed LIST of
// one tenant fails the sweep after every tenant had its turn.
func (s *Server) sweepTenants(ctx context.Context, sweep Sweep) (sweepResult, error) {
	tenants, err := clients.Discover(ctx, s.live[Source], s.targets.prefix, s.opts.ListPageSize)
	if err != nil {
		return sweepResult{}, err
	}
	var (
		mu     sync.Mutex
		total  sweepResult
		failed []error
		wg     sync.WaitGroup
		slots  = make(chan struct{}, tenantSweepConcurrency)
	)
	for _, tn := range tenants {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			tctx, err := s.targets.reach(ctx, tn)
			if errors.Is(err, errNotServed) {
				return // un-enrolled since it was discovered
			}
			if err != nil {
				failure := "transient"
				if isTerminal(err) {
					failure = "terminal"
				}
				s.metrics.keyFailures.WithLabelValues(sweep.Name, failure).Inc()
				s.log.Warn("sweep: tenant skipped", "sweep", sweep.Name, "tenant", tn, "error", err)
				return
			}
			if r, _ := s.fn.Reconciler(sweep.Reconciler); !r.appliesTo(tctx) {
				return // gardenlet runs no such controller for this tenant: nothing to list
			}
			result, err := s.sweepOnce(tctx, sweep, tn)
			result.tenants = 1
			mu.Lock()
			defer mu.Unlock()
			total.add(result)
			if err != nil {
				failed = append(failed, fmt.Errorf("tenant %s: %w", tn, err))
			}
		}()
	}
	wg.Wait()
	return total, errors.Join(failed...)
}

// sweepOnce runs the sweep over one tenant (tn, with ctx already for it), or over everything
// (tn empty).
func (s *Server) sweepOnce(ctx context.Context, sweep Sweep, tn tenant.Name) (sweepResult, error) {
	r, _ := s.fn.Reconciler(sweep.Reconciler)
	snaps := map[Cluster]*snapshot{}
	snap := func(c Cluster) *snapshot {
		c = s.clusterOf(c)
		if snaps[c] == nil {
			snaps[c] = &snapshot{live: s.live[c], scheme: s.live[Source].Scheme(), related: map[schema.GroupKind]*listed{}}
		}
		return snaps[c]
	}
	for _, l := range sweep.Related {
		if l.PerTenant && tn == "" {
			continue // read live: listing it here would read every namespace
		}
		if l.OnDemand {
			snap(l.Cluster).listOnDemand(l, s.opts.ListPageSize)
			continue
		}
		l = s.forTenant(l, tn)
		held, err := listAll(ctx, s.live[s.clusterOf(l.Cluster)], s.live[Source].Scheme(), l, s.opts.ListPageSize)
		if err != nil && !(l.Optional && notServed(err)) {
			return sweepResult{}, err
		}
		snap(l.Cluster).related[l.Kind.GroupKind()] = held
	}
	reader, source := snap(r.Cluster), snap(Source)
	var target *snapshot
	if s.targets != nil {
		target = snap(Target)
	}

	var (
		result sweepResult
		mu     sync.Mutex
	)
	primary := s.forTenant(sweep.Primary, tn)
	err := listPages(ctx, s.live[s.clusterOf(primary.Cluster)], s.live[Source].Scheme(), primary, s.opts.ListPageSize, func(items []client.Object) error {
		page := newListed(primary, len(items))
		for _, item := range items {
			page.add(item)
		}
		snap(primary.Cluster).primary = page
		var wg sync.WaitGroup
		slots := make(chan struct{}, max(1, s.opts.SweepConcurrency))
		for _, key := range page.keys() {
			slots <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-slots; wg.Done() }()
				err := s.reconcileSwept(ctx, sweep.Name, r, key, tn, reader, source, target)
				mu.Lock()
				defer mu.Unlock()
				result.objects++
				switch {
				case err == nil:
				case apierrors.IsNotFound(err) && isTerminalFor(err, r, key):
					// Deleted since the list was read: nothing to converge.
				case isTerminalFor(err, r, key):
					result.failed++
					s.metrics.keyFailures.WithLabelValues(sweep.Name, "terminal").Inc()
					s.log.Warn("sweep: key failed terminally", "sweep", sweep.Name, "object", key, "error", err)
				default:
					result.failed++
					s.metrics.keyFailures.WithLabelValues(sweep.Name, "transient").Inc()
					s.log.Warn("sweep: key failed, the next tick retries it", "sweep", sweep.Name, "object", key, "error", err)
				}
			}()
		}
		wg.Wait()
		return ctx.Err()
	})
	return result, err
}

// reconcileSwept reconciles one key of a sweep against its snapshots. A sweep over one tenant
// reconciles for that tenant; a sweep over everything, for the tenant of each key.
func (s *Server) reconcileSwept(ctx context.Context, sweep string, r Reconciler, key Key, tn tenant.Name, reader, source, target *snapshot) error {
	owner, err := s.targets.tenantOf(r, key, tn)
	if err == nil && tn == "" {
		ctx, err = s.targets.reach(ctx, owner)
	}
	if errors.Is(err, errNotServed) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reconciler %s: %s: %w", r.Name, key, err)
	}
	if !r.appliesTo(ctx) {
		return nil
	}
	req := Request{Key: key, Reader: reader, Source: source, Trigger: BySweep, Sweep: sweep}
	if target != nil {
		req.Target = target
	}
	return s.reconcile(ctx, r, req)
}

// forTenant confines a Source list of a namespaced kind to the tenant's namespace.
func (s *Server) forTenant(l List, tn tenant.Name) List {
	if tn != "" && clusterOrSource(l.Cluster) == Source && l.Kind.Namespaced && l.Namespace == "" {
		l.Namespace = string(tn)
	}
	return l
}

// notServed says the cluster does not serve the kind a LIST asked for: the REST mapper does not
// know it, or it maps the kind from the scheme and kube-apiserver answers 404 for the collection
// (a LIST of a served kind in a namespace that does not exist answers an empty list).
func notServed(err error) bool {
	return meta.IsNoMatchError(err) || apierrors.IsNotFound(err)
}
