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
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// routedWebhook is a webhook with its served (instrumented, time-bounded) handler.
type routedWebhook struct {
	Webhook
	handler http.Handler
}

// tenantRouter serves /<tenant>/<webhook path>: it authenticates the caller when asked, answers
// for tenants the seed holds no access for and for tenants the webhook does not apply to, and
// calls the webhook with the tenant and its settings in the request's context.
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
	// Every webhook answers a tenant as gardenlet configured the tenant's own resource manager:
	// its settings come first. Without them the kube-apiserver is told the call failed, so that
	// it applies the registration's failure policy (a fail-closed webhook rejects with the
	// reason, a best-effort one is skipped); an authorizer has no opinion.
	settings, err := tr.tenants.Settings(ctx, t)
	if clients.IsNotEnrolled(err) {
		// Another resource manager (gardenlet's) serves the tenant: this one changes nothing and
		// has no opinion, whatever registration still points here.
		tr.changeNothing(w, r, wh)
		return
	}
	if err != nil {
		reason, code := "unknown-tenant", http.StatusForbidden
		if !clients.IsUnknownTenant(err) {
			reason, code = "unreachable-seed", http.StatusServiceUnavailable
		}
		tr.metrics.unknownTenants.WithLabelValues(wh.Name, reason).Inc()
		if wh.authorization {
			answerAuthorization(w, r, authorizationv1.SubjectAccessReviewStatus{EvaluationError: err.Error()})
		} else {
			failCall(w, code, err.Error())
		}
		return
	}
	if wh.appliesTo != nil && !wh.appliesTo(settings) {
		// gardenlet would not run this webhook for the tenant: it changes nothing.
		tr.changeNothing(w, r, wh)
		return
	}
	wh.handler.ServeHTTP(w, r.WithContext(tenant.WithSettings(ctx, settings)))
}

// changeNothing answers for a webhook that does not act for the tenant: admission allowed with
// no patch, an authorizer without opinion.
func (tr *tenantRouter) changeNothing(w http.ResponseWriter, r *http.Request, wh routedWebhook) {
	tr.metrics.notApplied.WithLabelValues(wh.Name).Inc()
	if wh.authorization {
		answerAuthorization(w, r, authorizationv1.SubjectAccessReviewStatus{})
	} else {
		allowAdmission(w, r)
	}
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

// failCall answers that the webhook could not be called: an HTTP error whose body is a Status
// with the reason, which the kube-apiserver reports as the webhook's failure.
func failCall(w http.ResponseWriter, code int, message string) {
	reason := metav1.StatusReasonForbidden
	if code == http.StatusServiceUnavailable {
		reason = metav1.StatusReasonServiceUnavailable
	}
	out, err := json.Marshal(&metav1.Status{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"},
		Status:   metav1.StatusFailure, Code: int32(code), Reason: reason, Message: message,
	})
	if err != nil {
		http.Error(w, message, code)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(out)
}

// allowAdmission answers an AdmissionReview with allowed and no patch, in the AdmissionReview
// version asked, without calling a webhook.
func allowAdmission(w http.ResponseWriter, r *http.Request) {
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
		Response: &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true},
	})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}
