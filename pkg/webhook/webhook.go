// Package webhook is the runtime of GRM's admission and authorization webhooks: one HTTP(S)
// server that serves each enabled webhook at Gardener's path, with TLS from certificate files
// that are reloaded when they change (or plain HTTP behind Knative's ingress), panic recovery,
// request timeouts, /healthz, /readyz, Prometheus metrics and structured logs.
package webhook

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
)

// Webhook is one webhook served at a path.
type Webhook struct {
	// Name is the webhook's name in metrics, logs and WEBHOOKS (e.g. "high-availability-config").
	Name string
	// Path is where Gardener serves it, e.g. "/webhooks/high-availability-config".
	Path string
	// MorePaths are further paths the same handler answers at (Gardener serves extension
	// validation at one path per kind).
	MorePaths []string
	// Handler answers AdmissionReviews (see Admission) or SubjectAccessReviews (see Authorization).
	Handler http.Handler
	// authorization says the handler answers SubjectAccessReviews (else AdmissionReviews): the
	// server answers requests it refuses itself (unknown tenants) in the same kind.
	authorization bool
	// appliesTo is the constructor's AppliesTo.
	appliesTo func(*tenant.Settings) bool
}

// Deps are what a webhook's constructor gets.
type Deps struct {
	// Source reads the cluster the server runs in (the seed): e.g. the shoot's Machines in its
	// control-plane namespace.
	Source client.Reader
	// Target reads the cluster whose requests are admitted (the seed itself or a shoot). In the
	// multi-tenant mode it reads the cluster of the request's tenant (from the ctx, see
	// tenant.From): handlers must read through the request's ctx.
	Target client.Reader
	// Config is GRM's component configuration, defaulted; its webhooks section configures
	// each webhook.
	Config *rmv1alpha1.ResourceManagerConfiguration
	Clock  clock.PassiveClock
	Log    *slog.Logger
}

// Constructor builds a webhook.
type Constructor struct {
	// Name is the webhook's name (as in WEBHOOKS).
	Name string
	// Enabled says whether GRM's component configuration enables it.
	Enabled func(*componentconfig.ResourceManagerFile) bool
	// AppliesTo says whether gardenlet configures the webhook in the resource manager of a
	// tenant with these settings; nil means every tenant's (where it is registered). The server
	// answers the requests of a tenant it does not apply to itself: allowed without a patch, no
	// opinion for an authorizer.
	AppliesTo func(*tenant.Settings) bool
	New       func(Deps) (Webhook, error)
}

// Build builds the webhook with what the constructor declares.
func (c Constructor) Build(deps Deps) (Webhook, error) {
	wh, err := c.New(deps)
	if err != nil {
		return Webhook{}, err
	}
	wh.appliesTo = c.AppliesTo
	return wh, nil
}

// Paths are all paths the webhook answers at.
func (w Webhook) Paths() []string { return append([]string{w.Path}, w.MorePaths...) }

// logrFrom adapts slog for controller-runtime's admission package.
func logrFrom(log *slog.Logger) logr.Logger { return logr.FromSlogHandler(log.Handler()) }

// withTimeout bounds every request: the kube-apiserver gives up after the webhook's
// timeoutSeconds anyway, and a webhook must never hang.
func withTimeout(timeout time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}
