package function

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Options tune how the runtime serves events; Config fills them from the environment.
type Options struct {
	EventTimeout     time.Duration
	SweepTimeout     time.Duration
	SweepConcurrency int
	ListPageSize     int64
	// ConflictRetries is how often a key whose write conflicted is reconciled again from
	// live state before the event is answered with 503.
	ConflictRetries int
}

// maxEventBytes bounds an event's body: etcd stores objects of at most 1.5 MiB.
const maxEventBytes = 8 << 20

// Server answers the CloudEvents of one function.
type Server struct {
	fn         Function
	reconciler Reconciler
	live       client.Reader
	scheme     *runtime.Scheme
	opts       Options
	log        *slog.Logger
	metrics    *metrics
}

// NewServer serves fn's events with reconciler; live is the uncached API reader.
func NewServer(fn Function, reconciler Reconciler, live client.Reader, scheme *runtime.Scheme, opts Options, log *slog.Logger, reg prometheus.Registerer) (*Server, error) {
	if err := fn.Validate(); err != nil {
		return nil, fmt.Errorf("function %s: %w", fn.Name(), err)
	}
	return &Server{fn: fn, reconciler: reconciler, live: live, scheme: scheme, opts: opts, log: log, metrics: newMetrics(reg, fn.Name())}, nil
}

// ServeHTTP receives one CloudEvent (binary or structured mode) and answers it:
// 200 when it was handled, 400/422 when it can never be (final for the sender),
// 503 when handling failed for a reason that may pass (the sender retries),
// 500 when the function itself failed (a bug: retrying would not help; the next sweep retries).
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
	switch {
	case err == nil:
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
	switch {
	case err == nil:
		s.log.Debug("event handled", attrs...)
	case outcome == "retry":
		s.log.Warn("event failed, sender will retry", append(attrs, "reason", reason)...)
	case outcome == "rejected":
		s.log.Warn("event rejected", append(attrs, "reason", reason)...)
	default:
		s.log.Error("event not handled", append(attrs, "reason", reason)...)
	}
	if err != nil {
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
	obj, ok, err := objectOf(event)
	if err != nil {
		return err
	}
	if !ok {
		return unprocessable("event type %q is neither an ApiServerSource nor a PingSource event", event.Type())
	}
	return s.HandleObject(ctx, obj)
}

// HandleObject reconciles the keys that an event about obj concerns, from live state.
func (s *Server) HandleObject(ctx context.Context, obj Object) error {
	mapper := s.fn.Watches[obj.GVK.GroupKind()]
	if mapper == nil {
		return unprocessable("function %s does not watch %s", s.fn.Name(), obj.GVK.GroupKind())
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.EventTimeout)
	defer cancel()
	keys, err := safely(func() ([]Key, error) { return mapper(ctx, s.live, obj) })
	if err != nil {
		return fmt.Errorf("mapping %s %s: %w", obj.GVK.Kind, obj.Key, err)
	}
	var errs []error
	for _, key := range keys {
		if err := s.reconcile(ctx, "event", s.live, key); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Sweep runs the named sweep: one paginated LIST per listed kind, then a reconcile of every
// primary key against that snapshot, a bounded number at a time.
func (s *Server) Sweep(ctx context.Context, name string) (err error) {
	sweep, ok := s.fn.Sweeps[name]
	if !ok {
		return unprocessable("function %s has no sweep %q", s.fn.Name(), name)
	}
	start := time.Now()
	defer func() { s.metrics.sweeps.WithLabelValues(name, result(err)).Observe(time.Since(start).Seconds()) }()
	ctx, cancel := context.WithTimeout(ctx, s.opts.SweepTimeout)
	defer cancel()

	snap, keys, err := takeSnapshot(ctx, s.live, s.scheme, sweep, s.opts.ListPageSize)
	if err != nil {
		return fmt.Errorf("sweep %s: %w", name, err)
	}
	var (
		mu     sync.Mutex
		failed []error
		wg     sync.WaitGroup
		slots  = make(chan struct{}, max(1, s.opts.SweepConcurrency))
	)
	for _, key := range keys {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			if err := s.reconcile(ctx, "sweep", snap, key); err != nil {
				mu.Lock()
				failed = append(failed, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	s.metrics.swept.WithLabelValues(name).Set(float64(len(keys)))
	s.log.Info("sweep done", "sweep", name, "objects", len(keys), "failed", len(failed), "duration", time.Since(start))
	if len(failed) > 0 {
		const shown = 3
		return fmt.Errorf("sweep %s: %d of %d objects failed: %w", name, len(failed), len(keys), errors.Join(failed[:min(shown, len(failed))]...))
	}
	return nil
}

// reconcile reconciles one key; a write conflict means the read was stale, so the key is
// reconciled again from live state, a bounded number of times.
func (s *Server) reconcile(ctx context.Context, trigger string, reader client.Reader, key Key) error {
	start := time.Now()
	var err error
	for attempt := 0; ; attempt++ {
		_, err = safely(func() (struct{}, error) { return struct{}{}, s.reconciler.Reconcile(ctx, reader, key) })
		if !apierrors.IsConflict(err) || attempt >= s.opts.ConflictRetries {
			break
		}
		reader = s.live
	}
	s.metrics.reconcile.WithLabelValues(trigger, result(err)).Observe(time.Since(start).Seconds())
	if err != nil {
		return fmt.Errorf("reconciling %s: %w", key, err)
	}
	return nil
}

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
