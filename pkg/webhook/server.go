package webhook

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"

	"github.com/gardener-knative/gardener-knative/pkg/serve"
)

// ServeOptions say how to serve.
type ServeOptions struct {
	Addr string
	// CertFile and KeyFile enable TLS (≥ 1.2); both files are watched and reloaded when they
	// change. Empty means plain HTTP, for TLS terminated by the Knative ingress.
	CertFile, KeyFile string
	RequestTimeout    time.Duration
	ShutdownTimeout   time.Duration
	// Ready is told the listener's address once the server accepts connections.
	Ready func(addr net.Addr)
}

// serverMetrics count the webhooks' requests.
type serverMetrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

func newServerMetrics(reg prometheus.Registerer) *serverMetrics {
	m := &serverMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gardener_knative_webhook_requests_total",
			Help: "Webhook requests by webhook and HTTP code (admission outcomes are in gardener_knative_admission_responses_total).",
		}, []string{"webhook", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gardener_knative_webhook_request_duration_seconds",
			Help:    "Time to answer a webhook request, by webhook.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}, []string{"webhook"}),
	}
	reg.MustRegister(m.requests, m.latency, admissionResponses)
	return m
}

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) { r.code = code; r.ResponseWriter.WriteHeader(code) }

// instrument counts and times each request and turns a panic into a 500 instead of a crash.
func (m *serverMetrics) instrument(name string, next http.Handler, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		defer func() {
			if v := recover(); v != nil {
				log.Error("webhook panicked", "webhook", name, "panic", v, "stack", string(debug.Stack()))
				rec.code = http.StatusInternalServerError
				http.Error(w, fmt.Sprintf("webhook %s failed", name), http.StatusInternalServerError)
			}
			m.requests.WithLabelValues(name, strconv.Itoa(rec.code)).Inc()
			m.latency.WithLabelValues(name).Observe(time.Since(start).Seconds())
		}()
		next.ServeHTTP(rec, r)
	})
}

// Serve serves the webhooks at their paths, with /healthz, /readyz and /metrics, until ctx
// ends; then it fails readiness and lets in-flight requests finish.
func Serve(ctx context.Context, opts ServeOptions, webhooks []Webhook, reg *prometheus.Registry, log *slog.Logger) error {
	metrics := newServerMetrics(reg)
	mux := http.NewServeMux()
	names := make([]string, 0, len(webhooks))
	for _, wh := range webhooks {
		handler := metrics.instrument(wh.Name, withTimeout(opts.RequestTimeout, wh.Handler), log)
		for _, path := range wh.Paths() {
			mux.Handle(path, handler)
		}
		names = append(names, wh.Name+"="+strings.Join(wh.Paths(), ","))
	}
	var tlsConfig *tls.Config
	if opts.CertFile != "" || opts.KeyFile != "" {
		watcher, err := certwatcher.New(opts.CertFile, opts.KeyFile)
		if err != nil {
			return fmt.Errorf("loading TLS certificate: %w", err)
		}
		go func() {
			if err := watcher.Start(ctx); err != nil {
				log.Error("watching TLS certificate failed", "error", err)
			}
		}()
		tlsConfig = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: watcher.GetCertificate, NextProtos: []string{"h2", "http/1.1"}}
	}
	return serve.Run(ctx, serve.Options{Addr: opts.Addr, TLSConfig: tlsConfig, ShutdownTimeout: opts.ShutdownTimeout, Ready: opts.Ready}, mux, reg, log, "webhooks", names)
}
