package webhook

import (
	"context"
	"crypto/tls"
	"errors"
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
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/clients"
	"github.com/gardener-knative/gardener-knative/pkg/tenantproof"
)

// ServeOptions say how to serve.
type ServeOptions struct {
	Addr string
	// CertFile and KeyFile enable TLS (≥ 1.2); both files are watched and reloaded when they
	// change. Empty means plain HTTP, for TLS terminated by the Knative ingress.
	CertFile, KeyFile string
	// TLSAddr, with the certificate, serves TLS there and plain HTTP on Addr.
	TLSAddr         string
	RequestTimeout  time.Duration
	ShutdownTimeout time.Duration
	// DrainDelay: see serve.Options.DrainDelay.
	DrainDelay time.Duration
	// Ready is told the listener's address once the server accepts connections.
	Ready func(addr net.Addr)
	// Profiling: see serve.Options.Profiling.
	Profiling bool
	// Tenants, when set, is the multi-tenant mode: every webhook is served at
	// /<tenant>.<proof>/<path> for the shoot control-plane namespaces of the seed, with the
	// tenant in the request's context (see tenant.From), and for the seed itself at
	// /seed.<proof>/<path> (tenantproof.SeedPath), never at its bare path; Tenants tells which
	// tenants are known.
	Tenants *clients.Clients
	// TenantPrefix is what a tenant's name starts with (tenant.DefaultPrefix when empty).
	TenantPrefix string
	// Proofs verify that a caller of a tenant path is the tenant (pkg/tenantproof); the
	// multi-tenant mode needs them.
	Proofs *tenantproof.Ring
	// Fairness bounds each tenant's and all tenants' requests in flight, and the server's
	// timeouts (zero values: defaults).
	Fairness Fairness
}

// serverMetrics count the webhooks' requests.
type serverMetrics struct {
	unknownTenants *prometheus.CounterVec
	notApplied     *prometheus.CounterVec
	requests       *prometheus.CounterVec
	latency        *prometheus.HistogramVec
	shed           *prometheus.CounterVec
}

func newServerMetrics(reg prometheus.Registerer) *serverMetrics {
	m := &serverMetrics{
		unknownTenants: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gardener_knative_webhook_tenant_refusals_total",
			Help: "Requests for tenant paths refused without calling the webhook, by webhook and reason (unproven, unreadable-keys, unknown-tenant, unreachable-seed).",
		}, []string{"webhook", "reason"}),
		notApplied: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gardener_knative_webhook_not_applied_total",
			Help: "Requests of tenants the webhook does not apply to (gardenlet would not configure it for their shoots), answered without a change, by webhook.",
		}, []string{"webhook"}),
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
	// No tenant label: tenants are unbounded; the log and the 429's message name the tenant.
	m.shed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gardener_knative_webhook_shed_total",
		Help: "Requests answered 429 (or 413) without reading them, by reason: a tenant's requests (tenant-requests) or bytes (tenant-bytes) in flight, all tenants' bytes in flight (bytes), a body over MAX_REQUEST_BYTES (too-large).",
	}, []string{"reason"})
	reg.MustRegister(m.requests, m.latency, m.unknownTenants, m.notApplied, m.shed, admissionResponses)
	return m
}

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) { r.code = code; r.ResponseWriter.WriteHeader(code) }

// instrument counts and times each request and turns a panic into a 500 instead of a crash.
func (m *serverMetrics) instrument(name string, next http.Handler, log *slog.Logger) http.Handler {
	// The series every answered request counts in, looked up once rather than per request.
	answered, latency := m.requests.WithLabelValues(name, strconv.Itoa(http.StatusOK)), m.latency.WithLabelValues(name)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		defer func() {
			if v := recover(); v != nil {
				log.Error("webhook panicked", "webhook", name, "panic", v, "stack", string(debug.Stack()))
				rec.code = http.StatusInternalServerError
				http.Error(w, fmt.Sprintf("webhook %s failed", name), http.StatusInternalServerError)
			}
			if rec.code == http.StatusOK {
				answered.Inc()
			} else {
				m.requests.WithLabelValues(name, strconv.Itoa(rec.code)).Inc()
			}
			latency.Observe(time.Since(start).Seconds())
		}()
		next.ServeHTTP(rec, r)
	})
}

// routes are what Serve serves: every webhook at its paths, counted, timed and time-bounded,
// and in the multi-tenant mode every other path through the tenant router; names say which
// webhook is where, for the log.
func routes(opts ServeOptions, webhooks []Webhook, metrics *serverMetrics, log *slog.Logger) (*http.ServeMux, []string) {
	mux := http.NewServeMux()
	names := make([]string, 0, len(webhooks))
	byPath := map[string]routedWebhook{}
	share := newFairShare(opts.Fairness, metrics)
	for _, wh := range webhooks {
		handler := metrics.instrument(wh.Name, withTimeout(opts.RequestTimeout, wh.Handler), log)
		for _, path := range wh.Paths() {
			byPath[path] = routedWebhook{Webhook: wh, handler: handler}
		}
		names = append(names, wh.Name+"="+strings.Join(wh.Paths(), ","))
	}
	if opts.Tenants == nil {
		// One cluster's server: its paths answer whoever reaches them, as Gardener's do.
		for path, wh := range byPath {
			mux.Handle(path, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { share.Serve(w, r, tenantproof.Seed, wh.handler) }))
		}
		return mux, names
	}
	router := &tenantRouter{webhooks: byPath, tenants: opts.Tenants, proofs: opts.Proofs, prefix: opts.TenantPrefix, metrics: metrics, log: log, share: share}
	if router.prefix == "" {
		router.prefix = tenant.DefaultPrefix
	}
	// Every path but /healthz, /readyz and /metrics is the seed's or a tenant's, with its proof:
	// a shoot's kube-apiserver can reach the server, so the seed's answers need a proof as
	// much as another tenant's.
	mux.Handle("/", router)
	names = append(names, "seed=/"+tenantproof.SeedSegment+tenantproof.Separator+"<proof>/<path>", "tenants=/"+router.prefix+"*"+tenantproof.Separator+"<proof>/<path>")
	return mux, names
}

// Serve serves the webhooks at their paths, with /healthz, /readyz and /metrics, until ctx
// ends; then it fails readiness and lets in-flight requests finish.
func Serve(ctx context.Context, opts ServeOptions, webhooks []Webhook, reg *prometheus.Registry, log *slog.Logger) error {
	if opts.Tenants != nil && opts.Proofs == nil {
		return errors.New("the multi-tenant mode needs the tenant proof keys")
	}
	if err := opts.Fairness.check(opts.RequestTimeout); err != nil {
		return err
	}
	mux, names := routes(opts, webhooks, newServerMetrics(reg), log)
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
	return serve.Run(ctx, opts.Fairness.serveOptions(serve.Options{Addr: opts.Addr, TLSAddr: opts.TLSAddr, TLSConfig: tlsConfig, ShutdownTimeout: opts.ShutdownTimeout, DrainDelay: opts.DrainDelay, Ready: opts.Ready, Profiling: opts.Profiling}), mux, reg, log, "webhooks", names)
}
