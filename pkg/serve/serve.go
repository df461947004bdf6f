// Package serve runs the HTTP servers of functions and webhooks: the application's routes
// beside /healthz, /readyz and Prometheus /metrics, and a graceful shutdown that fails
// readiness and lets in-flight requests finish.
package serve

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
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
	// ShutdownTimeout bounds how long in-flight requests may finish once ctx ends.
	ShutdownTimeout time.Duration
	// Ready is told the listener's address once the server accepts connections.
	Ready func(net.Addr)
}

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

	listener, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", opts.Addr, err)
	}
	if opts.TLSConfig != nil {
		listener = tls.NewListener(listener, opts.TLSConfig)
	}
	// The standard library's own complaints (e.g. failed TLS handshakes) become structured too.
	server := &http.Server{Handler: app, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	served := make(chan error, 1)
	go func() { served <- server.Serve(listener) }()
	log.Info("serving", append([]any{"address", listener.Addr().String(), "tls", opts.TLSConfig != nil}, attrs...)...)
	if opts.Ready != nil {
		opts.Ready(listener.Addr())
	}

	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shuttingDown.Store(true)
	log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), opts.ShutdownTimeout)
	defer cancel()
	if err := server.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutting down: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
