// Package serve runs the HTTP servers of functions and webhooks: the application's routes
// beside /healthz, /readyz and Prometheus /metrics, and a graceful shutdown that fails
// readiness and lets in-flight requests finish.
package serve

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Options say how to serve.
type Options struct {
	Addr string
	// TLSConfig serves TLS; nil serves plain HTTP.
	TLSConfig *tls.Config
	// TLSAddr, when set, serves TLS there and plain HTTP on Addr, the same routes on both: a
	// Knative Service's pod answers its queue-proxy (plain) and kube-apiserver's direct calls
	// through a Service of its own (TLS) at once.
	TLSAddr string
	// ShutdownTimeout bounds how long in-flight requests may finish once ctx ends.
	ShutdownTimeout time.Duration
	// DrainDelay is how long the server goes on serving once ctx ends, closing each connection
	// after its response, before it shuts down. A caller that keeps connections alive through a
	// plain Service (a kube-apiserver calling a webhook) then moves to another pod on its next
	// request, instead of sending it on an idle connection just as the server closes it ("http:
	// server closed idle connection", which a kube-apiserver does not retry: a fail-closed
	// webhook refuses). Zero shuts down at once.
	DrainDelay time.Duration
	// Ready is told the listener's address once the server accepts connections.
	Ready func(net.Addr)
	// Profiling serves Go's profiles at /debug/pprof/ beside the other routes.
	Profiling bool
	// ReadTimeout bounds reading a whole request, its body included, from its first byte: a
	// caller that sends its body slowly holds a connection and what the handler set aside for it
	// no longer than that. It does not cut a handler that runs longer once the body is read.
	// Zero: DefaultReadTimeout.
	ReadTimeout time.Duration
	// WriteTimeout bounds a request from the end of its header to the end of its response (the
	// body's reading and the handler included); the connection is closed when it passes. Zero:
	// none, for servers whose handlers bound themselves and may answer late (a function's sweep
	// answers after up to SWEEP_TIMEOUT); a webhook server sets its own.
	WriteTimeout time.Duration
	// IdleTimeout is how long a kept-alive connection may wait for its next request. Zero:
	// DefaultIdleTimeout.
	IdleTimeout time.Duration
}

const (
	// DefaultReadTimeout is Options.ReadTimeout when unset: a CloudEvent's or an AdmissionReview's
	// body of a few MiB takes milliseconds inside a cluster; a minute cuts only a stalled one.
	DefaultReadTimeout = time.Minute
	// DefaultIdleTimeout is Options.IdleTimeout when unset: longer than the 90 s after which Go's
	// and client-go's transports (the kube-apiserver's, Knative's queue-proxy's) close their idle
	// connections, so that the caller, not the server, closes an idle connection: a server that
	// closes one just as the caller sends on it fails that request ("http: server closed idle
	// connection"), which a kube-apiserver does not retry. Unset, the server would take
	// ReadTimeout instead.
	DefaultIdleTimeout = 2 * time.Minute
	// readHeaderTimeout bounds reading a request's header.
	readHeaderTimeout = 10 * time.Second
)

// Run serves app's routes, /healthz, /readyz and /metrics until ctx ends, then shuts down
// gracefully. attrs are logged with the "serving" line.
func Run(ctx context.Context, opts Options, app *http.ServeMux, gatherer prometheus.Gatherer, log *slog.Logger, attrs ...any) error {
	var shuttingDown atomic.Bool
	app.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	app.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if shuttingDown.Load() {
			http.Error(w, "shutting down", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	app.Handle("/metrics", promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{}))
	if opts.Profiling {
		HandleProfiles(app)
	}

	if opts.TLSAddr != "" && opts.TLSConfig == nil {
		return errors.New("a TLS address needs a TLS configuration")
	}
	listeners := []struct {
		addr string
		tls  *tls.Config
	}{{opts.Addr, opts.TLSConfig}}
	if opts.TLSAddr != "" {
		listeners = []struct {
			addr string
			tls  *tls.Config
		}{{opts.Addr, nil}, {opts.TLSAddr, opts.TLSConfig}}
	}
	readTimeout, idleTimeout := cmp.Or(opts.ReadTimeout, DefaultReadTimeout), cmp.Or(opts.IdleTimeout, DefaultIdleTimeout)
	// The standard library's own complaints (e.g. failed TLS handshakes) become structured too.
	errorLog := slog.NewLogLogger(log.Handler(), slog.LevelWarn)
	served := make(chan error, len(listeners))
	var servers []*http.Server
	var primary net.Addr
	for _, l := range listeners {
		listener, err := net.Listen("tcp", l.addr)
		if err != nil {
			for _, s := range servers {
				_ = s.Close()
			}
			return fmt.Errorf("listening on %s: %w", l.addr, err)
		}
		if l.tls != nil {
			listener = tls.NewListener(listener, l.tls)
		}
		server := &http.Server{
			Handler: closingWhile(&shuttingDown, app), ErrorLog: errorLog,
			ReadHeaderTimeout: min(readHeaderTimeout, readTimeout), ReadTimeout: readTimeout,
			WriteTimeout: opts.WriteTimeout, IdleTimeout: idleTimeout,
		}
		servers = append(servers, server)
		go func() { served <- server.Serve(listener) }()
		log.Info("serving", append([]any{"address", listener.Addr().String(), "tls", l.tls != nil}, attrs...)...)
		if primary == nil {
			primary = listener.Addr()
		}
	}
	if opts.Ready != nil {
		opts.Ready(primary)
	}

	var failed error
	select {
	case failed = <-served:
	case <-ctx.Done():
	}
	shuttingDown.Store(true)
	if failed == nil && opts.DrainDelay > 0 {
		log.Info("draining", "for", opts.DrainDelay)
		select {
		case <-time.After(opts.DrainDelay):
		case failed = <-served:
		}
	}
	log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), opts.ShutdownTimeout)
	defer cancel()
	var errs []error
	for _, server := range servers {
		if err := server.Shutdown(shutdownCtx); err != nil {
			errs = append(errs, fmt.Errorf("shutting down: %w", err))
		}
	}
	remaining := len(servers)
	if failed != nil {
		errs, remaining = append(errs, failed), remaining-1
	}
	for range remaining {
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// HandleProfiles serves Go's profiles at /debug/pprof/ on mux (net/http/pprof's routes).
func HandleProfiles(mux *http.ServeMux) {
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
}

// closingWhile closes every connection after its response once shuttingDown is set, so that no
// caller keeps it for a next request.
func closingWhile(shuttingDown *atomic.Bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if shuttingDown.Load() {
			w.Header().Set("Connection", "close")
		}
		next.ServeHTTP(w, r)
	})
}
