package webhook

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"

	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/clients"
	"github.com/gardener-knative/gardener-knative/pkg/tenantproof"

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

// tenantRouter serves /<tenant>.<proof>/<webhook path> and the seed's /seed.<proof>/<webhook
// path>: it refuses a caller whose proof is not the tenant's (or the seed's) before anything else
// (pkg/tenantproof), answers for tenants the seed holds no access for and for tenants the webhook
// does not apply to, and calls the webhook with the tenant and its settings in the request's
// context; the seed's calls it as one cluster's server does.
type tenantRouter struct {
	webhooks map[string]routedWebhook
	tenants  *clients.Clients
	proofs   *tenantproof.Ring
	prefix   string
	metrics  *serverMetrics
	log      *slog.Logger
	share    *fairShare
}

func (tr *tenantRouter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t, proof, rest, ok := tenantproof.ParsePath(r.URL.Path, tr.prefix)
	wh, served := tr.webhooks[rest]
	if bare, isWebhook := tr.webhooks[r.URL.Path]; !ok && isWebhook {
		// A webhook's bare path: a registration from before the seed's proof (docs/deployment.md,
		// upgrading), or a caller without one.
		tr.metrics.unknownTenants.WithLabelValues(bare.Name, "unproven").Inc()
		tr.log.Warn("bare path refused", "webhook", bare.Name, "remote", r.RemoteAddr)
		tr.refuse(w, r, bare, http.StatusForbidden, fmt.Sprintf("%s serves the seed at /%s%s<proof>%s only (docs/webhooks.md#tenant-proof)", r.URL.Path, tenantproof.SeedSegment, tenantproof.Separator, r.URL.Path))
		return
	}
	if !ok || !served {
		http.NotFound(w, r)
		return
	}
	// The caller proves its tenant before anything of any tenant is read, its body included:
	// a shoot admin who copies their registration and names another tenant, or the seed, is
	// answered as a failed call, and the other tenant's cluster, settings and cache are never
	// touched.
	if proven, err := tr.proofs.Verify(r.Context(), t, proof); !proven {
		reason, code, message := "unproven", http.StatusForbidden, fmt.Sprintf("the request does not prove %s (docs/webhooks.md#tenant-proof)", describe(t))
		if err != nil {
			reason, code, message = "unreadable-keys", http.StatusServiceUnavailable, err.Error()
		}
		tr.metrics.unknownTenants.WithLabelValues(wh.Name, reason).Inc()
		tr.log.Warn("tenant not proven", "webhook", wh.Name, "tenant", string(t), "remote", r.RemoteAddr, "error", err)
		tr.refuse(w, r, wh, code, message)
		return
	}
	// A proven caller gets its share of the server (fairness.go): beyond it, 429 at once, the
	// body unread.
	if t == tenantproof.Seed {
		tr.share.Serve(w, r, t, wh.handler)
		return
	}
	tr.share.Serve(w, r, t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { tr.serveTenant(w, r, t, wh) }))
}

// describe names a caller in an answer: the seed, or tenant <name>.
func describe(t tenant.Name) string {
	if t == tenantproof.Seed {
		return "the seed"
	}
	return "tenant " + string(t)
}

// serveTenant serves webhook wh for tenant t, admitted by its fair share.
func (tr *tenantRouter) serveTenant(w http.ResponseWriter, r *http.Request, t tenant.Name, wh routedWebhook) {
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
		tr.refuse(w, r, wh, code, err.Error())
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

// refuse answers that the webhook could not be called for the tenant: an authorizer has no
// opinion (the review is read to answer in its version), an admission webhook fails the call.
func (tr *tenantRouter) refuse(w http.ResponseWriter, r *http.Request, wh routedWebhook, code int, message string) {
	if wh.authorization {
		answerAuthorization(w, r, authorizationv1.SubjectAccessReviewStatus{EvaluationError: message})
		return
	}
	failCall(w, code, message)
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
