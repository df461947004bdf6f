package function

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"runtime/debug"
	"slices"
	"strconv"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/clients"
)

// Options tune how the runtime serves events; Config fills them from the environment.
type Options struct {
	// EventTimeout is one event's budget: its mapping and every key's reconcile.
	EventTimeout time.Duration
	// SweepTimeout bounds one sweep run.
	SweepTimeout     time.Duration
	SweepConcurrency int
	ListPageSize     int64
	// ConflictRetries is how often a key whose write conflicted is reconciled again from
	// live state before it counts as failed.
	ConflictRetries int
	// ReleaseMemoryAfterSweep collects the heap and returns the free memory to the OS when a
	// sweep run ends (debug.FreeOSMemory). A sweep's lists and snapshots are a function's
	// largest heap by far, and without a collection that lowers its goal again, Go keeps the
	// pages of that peak until its next forced collection (two minutes without one), which
	// sweeps every minute never let come.
	ReleaseMemoryAfterSweep bool
	// TenantMaxInFlight bounds, per seed, the events of one tenant (the seed's own events are one
	// tenant too) handled at once in the process; a further event of that tenant is answered 429
	// with Retry-After at once (tenantshare.go). Zero: no bound (every mode but per seed has none).
	TenantMaxInFlight int
	// TenantLendBelow lends idle slots: while fewer events than this of all tenants are in
	// flight, a tenant past TenantMaxInFlight is admitted too (0: never).
	TenantLendBelow int
}

// Env is what the runtime serves a function with.
type Env struct {
	// Source and Target are uncached clients of the function's clusters; Target only for
	// functions that declare it.
	Source, Target client.Client
	Clock          clock.PassiveClock
	Log            *slog.Logger
	Registry       prometheus.Registerer
	// Config is the function's loaded configuration (see LoadConfig); nil when it has none.
	Config any
	// TargetConfig is the Target cluster's REST configuration, handed to reconcilers as
	// Deps.Target.Config (for Helm); optional.
	TargetConfig *rest.Config
	// Tenants, when set, serves the function per seed (PerSeed): the Target of each reconcile is
	// the cluster of its tenant, a namespace starting with TenantPrefix (tenant.DefaultPrefix
	// when empty). Without Tenants and Target, the Source is the Target (SeedMode).
	Tenants      *clients.Clients
	TenantPrefix string
}

// maxEventBytes bounds an event's body: etcd stores objects of at most 1.5 MiB.
const maxEventBytes = 8 << 20

// Server answers the CloudEvents of one function.
type Server struct {
	fn       *Function
	handlers map[string]Handler
	live     map[Cluster]client.Client
	opts     Options
	log      *slog.Logger
	metrics  *metrics
	// runs serialises each sweep name's runs: a tick that arrives while its sweep runs joins
	// the next run, shared by every tick that arrives meanwhile.
	runs map[string]*sweepRuns
	// config is the function's loaded Config, for the sweeps' Off.
	config any
	// targets is how the Target is reached; nil for functions without one.
	targets *targets
	// keys lets one reconcile of a key (by reconciler and tenant) run at a time.
	keys keyLocks
	// ownWrites are the versions successful reconciles wrote, whose events are their echoes.
	ownWrites *ownWrites
	// scopes narrow the Source's kinds of Function.Scopes, by the loaded Config.
	scopes scopes
	// releaseMemory runs when a sweep run ends (Options.ReleaseMemoryAfterSweep); nil for none.
	releaseMemory func()
	// share bounds each tenant's events in flight (Options.TenantMaxInFlight); nil for none.
	share *tenantShare
}

// NewServer validates fn and builds its reconcilers.
func NewServer(fn *Function, env Env, opts Options) (*Server, error) {
	if err := fn.Validate(); err != nil {
		return nil, fmt.Errorf("function %s: %w", fn.Name, err)
	}
	inScope, err := resolveScopes(fn, env.Config)
	if err != nil {
		return nil, fmt.Errorf("function %s: %w", fn.Name, err)
	}
	if opts.TenantMaxInFlight < 0 {
		return nil, fmt.Errorf("function %s: TENANT_MAX_IN_FLIGHT (%d) must not be negative", fn.Name, opts.TenantMaxInFlight)
	}
	source := scoped(env.Source, inScope)
	s := &Server{
		fn: fn, handlers: map[string]Handler{}, opts: opts, log: env.Log,
		live:      map[Cluster]client.Client{Source: source},
		scopes:    inScope,
		metrics:   newMetrics(env.Registry, fn.Name),
		runs:      map[string]*sweepRuns{},
		config:    env.Config,
		ownWrites: newOwnWrites(),
		share:     newTenantShare(opts.TenantMaxInFlight, opts.TenantLendBelow),
	}
	if opts.ReleaseMemoryAfterSweep {
		s.releaseMemory = debug.FreeOSMemory
	}
	deps := Deps{
		Source: ClusterClient{Reader: source, Writer: newWriter(source, Source), Mapper: staticMapper(env.Source), Tokens: NewTokens(env.Source)},
		Clock:  env.Clock, Config: env.Config, Registry: env.Registry,
	}
	if slices.Contains(fn.Clusters(), Target) {
		s.targets = newTargets(env)
		s.live[Target] = s.targets.client
		deps.Target = ClusterClient{Reader: s.targets.client, Writer: newWriter(s.targets.client, s.clusterOf(Target)), Mapper: s.targets.mapper, Config: env.TargetConfig, RESTConfig: s.targets.restConfig(env.TargetConfig), Tokens: NewTokens(s.targets.client)}
	}
	for _, r := range fn.Reconcilers {
		component := fn.Name + "-controller"
		if r.Name != "main" {
			component = fn.Name + "-" + r.Name + "-controller"
		}
		d := deps
		d.Log = env.Log.With("reconciler", r.Name)
		// On the cluster of the objects the reconciler reconciles: Events are about them.
		d.Events = NewEventRecorder(s.live[s.clusterOf(r.Cluster)], component, env.Clock, d.Log)
		h, err := r.New(d)
		if err != nil {
			return nil, fmt.Errorf("function %s: reconciler %s: %w", fn.Name, r.Name, err)
		}
		s.handlers[r.Name] = h
	}
	for _, sw := range fn.Sweeps {
		s.runs[sw.Name] = &sweepRuns{}
	}
	return s, nil
}

// Mode is how the function reaches its Target; empty for functions without one.
func (s *Server) Mode() Mode {
	if s.targets == nil {
		return ""
	}
	return s.targets.mode
}

// ServeHTTP receives one CloudEvent (binary or structured mode) and answers it deterministically:
//   - 200 when it was handled, when it did not concern the function (predicates), when it failed
//     terminally (the error is logged and counted: retrying cannot help), or when it was a tick
//     coalesced into the sweep run that began after it and succeeded;
//   - 400/422 when it can never be handled (malformed; final for the sender);
//   - 429 with Retry-After, at once, when per seed its tenant has Options.TenantMaxInFlight
//     events in flight (the sender retries);
//   - 503 when handling failed for a reason that may pass (the sender retries);
//   - 500 when the function's own code panicked (a bug: retrying would not help; the next sweep
//     tries again).
func (s *Server) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "CloudEvents are POSTed", http.StatusMethodNotAllowed)
		return
	}
	start := time.Now()
	req.Body = http.MaxBytesReader(w, req.Body, maxEventBytes)
	event, err := binding.ToEvent(req.Context(), cehttp.NewMessageFromHttpRequest(req))
	if err == nil {
		err = event.Validate()
	}
	if err != nil {
		s.answer(w, "malformed", start, nil, rejected("not a CloudEvent: %v", err))
		return
	}
	_, err = safely(func() (struct{}, error) { return struct{}{}, s.handle(req.Context(), *event) })
	s.answer(w, event.Type(), start, event, err)
}

func (s *Server) answer(w http.ResponseWriter, eventType string, start time.Time, event *cloudevents.Event, err error) {
	code, outcome, reason := http.StatusOK, "done", ""
	var evErr *eventError
	var panicked *panicError
	var ack *acknowledged
	var busy *tenantBusy
	switch {
	case err == nil:
	case errors.As(err, &busy):
		// Counted apart from the events handled: shed in tens of microseconds, it is no outcome
		// of handling, and it comes again.
		s.metrics.shed.WithLabelValues(shedTenantBusy).Inc()
		s.log.Debug("event shed, sender will retry", "tenant", busy.tenant, "type", eventType, "duration", time.Since(start))
		w.Header().Set("Retry-After", strconv.Itoa(tenantBusyRetryAfter))
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = fmt.Fprintln(w, busy.Error())
		return
	case errors.As(err, &ack):
		outcome, reason = ack.outcome, ack.Error()
	case errors.As(err, &evErr):
		code, outcome, reason = evErr.code, "rejected", evErr.reason
	case errors.As(err, &panicked):
		code, outcome, reason = http.StatusInternalServerError, "failed", err.Error()
	default:
		code, outcome, reason = http.StatusServiceUnavailable, "retry", err.Error()
	}
	s.metrics.events.WithLabelValues(metricEventType(eventType), outcome).Inc()
	attrs := []any{"outcome", outcome, "code", code, "duration", time.Since(start)}
	if event != nil {
		attrs = append(attrs, "type", event.Type(), "id", event.ID(), "subject", event.Subject())
	}
	if panicked != nil {
		attrs = append(attrs, "stack", string(panicked.stack))
	}
	switch outcome {
	case "done", "coalesced":
		s.log.Debug("event handled", append(attrs, "reason", reason)...)
	case "retry":
		s.log.Warn("event failed, sender will retry", append(attrs, "reason", reason)...)
	case "rejected", "terminal":
		s.log.Warn("event not handled, not to be retried", append(attrs, "reason", reason)...)
	default:
		s.log.Error("event not handled", append(attrs, "reason", reason)...)
	}
	if code != http.StatusOK {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(code)
		_, _ = fmt.Fprintln(w, reason)
		return
	}
	w.WriteHeader(code)
}

// metricEventType keeps the event type label bounded: senders may send any type.
func metricEventType(t string) string {
	switch t {
	case PingEventType, RefAddEventType, RefUpdateEventType, RefDeleteEventType,
		ResourceAddEventType, ResourceUpdateEventType, ResourceDeleteEventType, "malformed":
		return t
	}
	return "other"
}

func (s *Server) handle(ctx context.Context, event cloudevents.Event) error {
	if event.Type() == PingEventType {
		sweep, err := sweepOf(event)
		if err != nil {
			return err
		}
		return s.Sweep(ctx, sweep)
	}
	ev, ok, err := eventOf(event)
	if err != nil {
		return err
	}
	if !ok {
		return unprocessable("event type %q is neither an ApiServerSource nor a PingSource event", event.Type())
	}
	// Per seed, each tenant's events in flight are bounded (Options.TenantMaxInFlight), ticks
	// not: a sweep run serves every tenant at once, the ticks that arrive while it runs join
	// one next run, and it bounds its tenants itself (tenantSweepConcurrency,
	// SWEEP_CONCURRENCY). Shedding a tick would delay every tenant.
	if tn, bounded := s.eventTenant(ev); bounded {
		release, ok := s.share.admit(tn)
		if !ok {
			return &tenantBusy{tenant: tn, max: s.share.max}
		}
		defer release()
	}
	return s.HandleEvent(ctx, ev)
}

// HandleEvent runs every watch of the event's kind and cluster: its predicate on the event, its
// mapping to keys, and its reconciler on each key from live state, all within one event budget.
// A key that fails terminally is acknowledged (logged and counted); any transient failure makes
// the whole event fail, so that the sender retries it.
func (s *Server) HandleEvent(ctx context.Context, ev Event) error {
	ctx, cancel := context.WithTimeout(ctx, s.opts.EventTimeout)
	defer cancel()
	if err := s.onGarden(&ev); err != nil {
		return err
	}
	watched := false
	var transient, terminal []error
	reconciled := map[string]map[Key]bool{}
	echo := s.ownWriteOf(ev)
	mapCtx := ctx
	if ev.Tenant != "" {
		if s.targets == nil || s.targets.mode != PerSeed {
			return rejected("event of tenant %s, but function %s does not serve tenants", ev.Tenant, s.fn.Name)
		}
		mapCtx = tenant.With(ctx, ev.Tenant)
	} else if ev.Cluster == Target && s.targets != nil && s.targets.mode == PerSeed {
		return rejected("a target event names no tenant, and function %s serves only tenants", s.fn.Name)
	}
	for _, w := range s.fn.Watches {
		if w.Kind.GroupKind() != ev.Kind.GroupKind() || s.clusterOf(w.Cluster) != s.clusterOf(ev.Cluster) {
			continue
		}
		watched = true
		if s.clusterOf(ev.Cluster) == Source && !s.scopes.admits(ev.Kind.GroupKind(), ev.Object) {
			// Out of the function's scope: another seed's, from a wider watch than its own.
			s.metrics.filtered.WithLabelValues(w.Reconciler, ev.Kind.Kind).Inc()
			continue
		}
		if w.LabelSelector != "" && ev.Object != nil {
			// A broader watch of the kind (another function's) may have sent it.
			if sel, err := labels.Parse(w.LabelSelector); err == nil && !sel.Matches(labels.Set(ev.Object.GetLabels())) {
				s.metrics.filtered.WithLabelValues(w.Reconciler, ev.Kind.Kind).Inc()
				continue
			}
		}
		if !ev.mayConcern(w.Changes) {
			// An update that changed no part the watch acts on: another watch's of the function
			// let it through the Trigger.
			s.metrics.filtered.WithLabelValues(w.Reconciler, ev.Kind.Kind).Inc()
			continue
		}
		if w.Predicate != nil {
			pass, err := safely(func() (bool, error) { return w.Predicate(ev), nil })
			if err != nil {
				return err
			}
			if !pass {
				s.metrics.filtered.WithLabelValues(w.Reconciler, ev.Kind.Kind).Inc()
				continue
			}
		}
		keys := []Key{ev.Key}
		if w.Map != nil {
			var err error
			keys, err = safely(func() ([]Key, error) { return w.Map(mapCtx, s.live[s.clusterOf(ev.Cluster)], ev) })
			if err != nil {
				if isTerminal(err) {
					terminal = append(terminal, fmt.Errorf("mapping %s %s for %s: %w", ev.Kind.Kind, ev.Key, w.Reconciler, err))
					continue
				}
				return fmt.Errorf("mapping %s %s for %s: %w", ev.Kind.Kind, ev.Key, w.Reconciler, err)
			}
		}
		r, _ := s.fn.Reconciler(w.Reconciler)
		for _, key := range keys {
			// Several watches of one kind (e.g. one per label selector) may map to the same key.
			if reconciled[w.Reconciler][key] {
				continue
			}
			if reconciled[w.Reconciler] == nil {
				reconciled[w.Reconciler] = map[Key]bool{}
			}
			reconciled[w.Reconciler][key] = true
			err := s.reconcileLive(ctx, r, key, ev.Tenant, echo)
			switch {
			case err == nil:
			case apierrors.IsNotFound(err) && isTerminalFor(err, r, key):
				// The object is gone since the event was sent: nothing to converge.
			case isTerminalFor(err, r, key):
				terminal = append(terminal, err)
			default:
				transient = append(transient, err)
			}
		}
	}
	if !watched {
		return unprocessable("function %s does not watch %s on the %s cluster", s.fn.Name, ev.Kind.GroupKind(), ev.Cluster)
	}
	for _, err := range terminal {
		s.metrics.terminal.WithLabelValues(ev.Kind.Kind).Inc()
		s.log.Warn("terminal failure acknowledged, not retried", "kind", ev.Kind.Kind, "object", ev.Key, "error", err)
	}
	if len(transient) > 0 {
		return errors.Join(transient...)
	}
	if len(terminal) > 0 {
		return &acknowledged{outcome: "terminal", err: errors.Join(terminal...)}
	}
	return nil
}

// reconcileLive reconciles one key of an event from live state, for its tenant, unless the event
// is the echo of that key's own write (echo: the version the event carries).
func (s *Server) reconcileLive(ctx context.Context, r Reconciler, key Key, from tenant.Name, echo *ownWrite) error {
	tn, err := s.targets.tenantOf(r, key, from)
	if err == nil {
		ctx, err = s.targets.reach(ctx, tn)
	}
	if errors.Is(err, errNotServed) {
		s.metrics.filtered.WithLabelValues(r.Name, r.For.Kind).Inc()
		return nil
	}
	if err != nil {
		return fmt.Errorf("reconciler %s: %s: %w", r.Name, key, err)
	}
	if !r.appliesTo(ctx) {
		s.metrics.filtered.WithLabelValues(r.Name, r.For.Kind).Inc()
		return nil
	}
	return s.reconcile(ctx, r, Request{Key: key, Reader: s.live[s.clusterOf(r.Cluster)], Source: s.live[Source], Target: s.live[Target], Trigger: ByEvent, echo: echo})
}

// clusterOf is where a declared cluster is: the Source for the Target too in seed mode.
// onGarden names the cluster of an event as a function that works on the garden sees it: the
// garden's source sends its Source events (and serves no other function); the part's own source,
// which watches the cluster the function runs in, its Target events, once the function reaches
// the garden apart from that cluster (in seed mode the Source is the Target anyway).
func (s *Server) onGarden(ev *Event) error {
	switch {
	case ev.Cluster == Garden && !s.fn.WorksOnGarden:
		return rejected("an event of the garden, but function %s does not work on the garden", s.fn.Name)
	case ev.Cluster == Garden:
		ev.Cluster = Source
	case ev.Cluster == Source && s.fn.WorksOnGarden && s.targets != nil && s.targets.mode == SingleTarget:
		ev.Cluster = Target
	}
	return nil
}

func (s *Server) clusterOf(c Cluster) Cluster {
	c = clusterOrSource(c)
	if c == Target && s.targets != nil && s.targets.mode == SeedMode {
		return Source
	}
	return c
}

// reconcile reconciles one key; a write conflict (or a create that finds the object) means the
// read was stale, so the key is reconciled again from live state, a bounded number of times.
func (s *Server) reconcile(ctx context.Context, r Reconciler, req Request) error {
	h := s.handlers[r.Name]
	// One reconcile of a key at a time in this process: a duplicate, a sweep beside an event,
	// waits for the one running and then reads what it left.
	reconciled := reconciledKey(r.Name, tenant.From(ctx), req.Key)
	held, err := s.keys.lock(ctx, reconciled)
	if err != nil {
		return fmt.Errorf("reconciler %s: %s: waiting for the reconcile of the same key running: %w", r.Name, req.Key, err)
	}
	defer held.release()
	// An event waits for the reconcile of its key that runs; by its turn, what it asks for may
	// be done: by a later reconcile of the key (keylock.go), or it was that reconcile's own write
	// (ownwrites.go), as an echo mostly arrives while the reconcile that wrote it runs.
	if req.Trigger == ByEvent && held.servedSinceArrival() {
		s.metrics.coalescedKeys.WithLabelValues(r.Name).Inc()
		return nil
	}
	if req.echo != nil && s.ownWrites.wrote(reconciled, *req.echo) {
		s.metrics.ownWrites.WithLabelValues(r.Name, req.echo.kind.Kind).Inc()
		return nil
	}
	held.started()
	start, trigger := time.Now(), req.Trigger
	live := s.live[s.clusterOf(r.Cluster)]
	j := &journal{primaryGroupKind: r.For.GroupKind(), primaryKey: req.Key, scheme: s.live[Source].Scheme(), snapshot: req.Trigger == BySweep}
	ctx = withJournal(ctx, j)
	reader := req.Reader
	for attempt := 0; ; attempt++ {
		req.Reader = observingReader{Reader: reader, j: j}
		_, err = safely(func() (struct{}, error) { return struct{}{}, h.Reconcile(ctx, req) })
		lost := s.guardCreations(ctx, r, j, live, &err)
		// A conflict or an AlreadyExists means another writer was first: what was read is
		// stale. A create refused on a snapshot, or undone for a lost owner, is decided again
		// from live state too.
		again := lost || j.refused || apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)
		if !again {
			break
		}
		if attempt >= s.opts.ConflictRetries {
			if err == nil {
				err = fmt.Errorf("not settled in %d attempts: its creations were refused on a snapshot or undone for a lost owner", attempt+1)
			}
			break
		}
		// Live reads answer as for an event (a sweep's indexes are the snapshot's alone).
		reader, req.Source, req.Target, req.Trigger = live, s.live[Source], s.live[Target], ByEvent
		j.reset()
	}
	s.metrics.reconcile.WithLabelValues(r.Name, string(trigger), result(err)).Observe(time.Since(start).Seconds())
	if err != nil {
		return fmt.Errorf("reconciler %s: %s: %w", r.Name, req.Key, err)
	}
	s.ownWrites.add(reconciled, j.written())
	if req.Trigger == ByEvent { // read live (a sweep's reconcile retried live counts from its start)
		held.succeeded()
	}
	return nil
}

// reconciledKey names one key of one reconciler and tenant: what the key lock holds and the
// own-write memory is kept by.
func reconciledKey(reconciler string, tn tenant.Name, key Key) string {
	return reconciler + "/" + string(tn) + "/" + key.String()
}

// guardCreations is the owner guard (guard.go) at the end of one attempt of a reconcile: if it
// created anything and no write proved its primary unchanged since, the primary is read live;
// lost says it was gone, replaced or being deleted, and the creations were undone. A failed check
// or undo is joined to *err (the key is then retried: transient).
func (s *Server) guardCreations(ctx context.Context, r Reconciler, j *journal, live client.Reader, err *error) (lost bool) {
	created := j.toCheck()
	if created == nil {
		return false
	}
	lost, checkErr := j.ownerLost(ctx, live, r.For.Version)
	switch {
	case checkErr != nil:
		s.metrics.guard.WithLabelValues(r.Name, "check-failed").Inc()
		*err = errors.Join(*err, checkErr)
		return false
	case !lost:
		s.metrics.guard.WithLabelValues(r.Name, "owner-kept").Inc()
		return false
	}
	undo := DefaultUndo
	if r.Undo != nil {
		undo = r.Undo
	}
	if undoErr := undo(ctx, j.undoRequest(created)); undoErr != nil {
		s.metrics.guard.WithLabelValues(r.Name, "undo-failed").Inc()
		*err = errors.Join(*err, fmt.Errorf("undoing what was created for %s %s, which is gone or being deleted: %w", r.For.Kind, j.primaryKey, undoErr))
		return true
	}
	s.metrics.guard.WithLabelValues(r.Name, "owner-lost").Inc()
	s.log.Info("owner gone or being deleted since it was read: creations undone, reconciling again", "reconciler", r.Name, "object", j.primaryKey, "undone", len(created))
	// What the failed attempt said is superseded by the attempt from live state.
	*err = nil
	return true
}

// Terminal marks err as one that retrying cannot cure (a reconciler's own judgement, e.g. a
// spec it refuses): the event is acknowledged, logged and counted, never retried.
func Terminal(err error) error { return &terminalError{err: err} }

type terminalError struct{ err error }

func (t *terminalError) Error() string { return t.err.Error() }
func (t *terminalError) Unwrap() error { return t.err }

// isTerminal: errors no retry can cure. Forbidden needs an RBAC change, Invalid and BadRequest a
// different object; retrying the same event only repeats the answer.
func isTerminal(err error) bool {
	var t *terminalError
	return errors.As(err, &t) || apierrors.IsForbidden(err) || apierrors.IsInvalid(err) ||
		apierrors.IsBadRequest(err) || apierrors.IsMethodNotSupported(err) || clients.IsUnknownTenant(err)
}

// isTerminalFor is isTerminal, plus a NotFound of the reconciled object itself: it is gone and
// there is nothing to converge. A NotFound of anything else may be a read racing a create.
func isTerminalFor(err error, r Reconciler, key Key) bool {
	if isTerminal(err) {
		return true
	}
	var status apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &status) {
		return false
	}
	details := status.Status().Details
	return details != nil && details.Name == key.Name &&
		details.Group == r.For.Group && (details.Kind == r.For.Resource || details.Kind == r.For.Kind)
}

// acknowledged is an outcome that is answered 200 but is not plain success.
type acknowledged struct {
	outcome string
	err     error
}

func (a *acknowledged) Error() string { return a.err.Error() }

// panicError is a panic of a function's code, turned into an error so that one bad object
// cannot take the process down.
type panicError struct {
	value any
	stack []byte
}

func (p *panicError) Error() string { return fmt.Sprintf("panic: %v", p.value) }

func safely[T any](f func() (T, error)) (result T, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &panicError{value: v, stack: debug.Stack()}
		}
	}()
	return f()
}

// staticMapper is the Mapper of a cluster reached by one client.
func staticMapper(c client.Client) func(context.Context) (meta.RESTMapper, error) {
	return func(context.Context) (meta.RESTMapper, error) { return c.RESTMapper(), nil }
}

// newConfig returns a fresh zero value of the type the declaration's Config points to.
func newConfig(prototype any) any {
	if prototype == nil {
		return nil
	}
	return reflect.New(reflect.TypeOf(prototype).Elem()).Interface()
}
