package webhook

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"

	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/clients"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// routedWebhook is a webhook with its served (instrumented, time-bounded) handler.
type routedWebhook struct {
	Webhook
	handler http.Handler
}

// tenantRouter serves /<tenant>/<webhook path>: it authenticates the caller when asked, answers
// for tenants the seed holds no access for, and calls the webhook with the tenant in the
// request's context.
type tenantRouter struct {
	webhooks     map[string]routedWebhook
	tenants      *clients.Clients
	prefix       string
	authenticate bool
	metrics      *serverMetrics
	log          *slog.Logger
}

func (tr *tenantRouter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t, rest, ok := ParseTenantPath(r.URL.Path, tr.prefix)
	wh, served := tr.webhooks[rest]
	if !ok || !served {
		http.NotFound(w, r)
		return
	}
	if tr.authenticate && !callerIsTenant(r, t) {
		tr.metrics.unknownTenants.WithLabelValues(wh.Name, "unauthenticated").Inc()
		tr.log.Warn("caller not authenticated for tenant", "webhook", wh.Name, "tenant", string(t), "remote", r.RemoteAddr)
		http.Error(w, fmt.Sprintf("a client certificate naming tenant %q is required", t), http.StatusUnauthorized)
		return
	}
	ctx := tenant.With(r.Context(), t)
	// Resolving the tenant first gives an unknown tenant the same clear answer from every
	// webhook, also from those that never read the tenant's cluster. Transient errors are left
	// to the webhooks that read it (they fail as they would for an unreachable target).
	if _, err := tr.tenants.Client(ctx, t); clients.IsUnknownTenant(err) {
		tr.metrics.unknownTenants.WithLabelValues(wh.Name, "unknown-tenant").Inc()
		if wh.authorization {
			answerAuthorizationError(w, r, err)
		} else {
			denyAdmission(w, r, http.StatusForbidden, err.Error())
		}
		return
	}
	wh.handler.ServeHTTP(w, r.WithContext(ctx))
}

// callerIsTenant tells whether the request came with a verified client certificate whose
// common name or one of whose organizations is the tenant.
func callerIsTenant(r *http.Request, t tenant.Name) bool {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return false
	}
	subject := r.TLS.VerifiedChains[0][0].Subject
	return subject.CommonName == string(t) || slices.Contains(subject.Organization, string(t))
}

// denyAdmission answers an AdmissionReview with a denial of the given code and message, in
// the AdmissionReview version asked, without calling a webhook.
func denyAdmission(w http.ResponseWriter, r *http.Request, code int32, message string) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxReviewBytes))
	if err != nil {
		http.Error(w, fmt.Sprintf("reading AdmissionReview: %v", err), http.StatusBadRequest)
		return
	}
	var review struct {
		metav1.TypeMeta
		Request *struct {
			UID types.UID `json:"uid"`
		} `json:"request"`
	}
	if err := json.Unmarshal(body, &review); err != nil || review.Kind != "AdmissionReview" || review.Request == nil {
		http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
		return
	}
	apiVersion := review.APIVersion
	if apiVersion != "admission.k8s.io/v1beta1" {
		apiVersion = admissionv1.SchemeGroupVersion.String()
	}
	out, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: apiVersion, Kind: "AdmissionReview"},
		Response: &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: false, Result: &metav1.Status{
			Status: metav1.StatusFailure, Code: code, Reason: metav1.StatusReasonForbidden, Message: message,
		}},
	})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}
