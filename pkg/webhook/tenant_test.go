package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/clients"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/tenanttest"
	"github.com/gardener-knative/gardener-knative/pkg/tenantproof"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	kubernetesscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

func TestControlPlaneNamespace(t *testing.T) {
	configured := "shoot--configured"
	assert.Equal(t, &configured, ControlPlaneNamespace(context.Background(), &configured))
	assert.Nil(t, ControlPlaneNamespace(context.Background(), nil))
	assert.Equal(t, "shoot--p--s", *ControlPlaneNamespace(tenant.With(context.Background(), "shoot--p--s"), &configured))
}

// The server routes /<tenant>.<proof>/<path> to the webhook with the tenant in the request's
// context, only with the tenant's proof: a caller that names another tenant, or none, is
// answered as a failed call (an authorizer: no opinion) before anything of any tenant is read.
func TestServeRoutesOnlyProvenTenants(t *testing.T) {
	seed := tenanttest.Enrolled(t, "https://127.0.0.1:1", tenanttest.CA(t), "shoot--p--a", "shoot--p--b")
	tenants, err := clients.New(clients.Options{Seed: seed, Scheme: kubernetesscheme.Scheme})
	require.NoError(t, err)
	echo := Webhook{Name: "echo", Path: "/webhooks/echo", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"tenant":"`+string(tenant.From(r.Context()))+`"}`)
	})}
	authz := Authorization("authz", "/webhooks/auth", authorizerFunc(func() { t.Error("the authorizer ran") }), slog.New(slog.DiscardHandler))
	key, post := serveTenants(t, tenants, echo, authz)

	code, out := post("/shoot--p--a/webhooks/echo", "{}")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "shoot--p--a", out["tenant"])
	code, out = post("/seed/webhooks/echo", "{}")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "", out["tenant"], "the seed's path, with its proof, is the seed's")
	code, _ = post("/shoot--p--a/webhooks/other", "{}")
	assert.Equal(t, http.StatusNotFound, code)

	reads := seed.Reads
	other, err := tenantproof.NewKey(time.Now())
	require.NoError(t, err)
	for name, path := range map[string]string{
		"A's proof at B's path": "/shoot--p--b." + key.Proof("shoot--p--a") + "/webhooks/echo",
		"no proof":              "/shoot--p--b./webhooks/echo",
		"another seed's proof":  "/shoot--p--b." + other.Proof("shoot--p--b") + "/webhooks/echo",
		"B's proof cut short":   "/shoot--p--b." + key.Proof("shoot--p--b")[:42] + "/webhooks/echo",
		"B's proof, other case": "/shoot--p--b." + strings.ToUpper(key.Proof("shoot--p--b")) + "/webhooks/echo",
		"a proof of an unknown": "/shoot--p--x." + key.Proof("shoot--p--a") + "/webhooks/echo",
	} {
		code, out := post(path, "{}")
		assert.Equal(t, http.StatusForbidden, code, name)
		assert.Equal(t, "Status", out["kind"], name)
		assert.Contains(t, out["message"], "does not prove tenant", name)
	}
	// The seed's answers need the seed's proof as much: a tenant's proof, or none at the bare
	// path a registration from before the seed's proof names, is refused.
	for name, path := range map[string]string{
		"A's proof at the seed's path": "/seed." + key.Proof("shoot--p--a") + "/webhooks/echo",
		"no proof at the seed's path":  "/seed./webhooks/echo",
	} {
		code, out := post(path, "{}")
		assert.Equal(t, http.StatusForbidden, code, name)
		assert.Contains(t, out["message"], "does not prove the seed", name)
	}
	code, out = post("/webhooks/echo", "{}")
	assert.Equal(t, http.StatusForbidden, code, "the bare path")
	assert.Contains(t, out["message"], "serves the seed at /seed.<proof>/webhooks/echo only")
	code, out = post("/webhooks/auth", `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"u","resourceAttributes":{"verb":"get","resource":"nodes"}}}`)
	require.Equal(t, http.StatusOK, code)
	assert.Nil(t, out["status"].(map[string]any)["denied"], "the bare authorizer path: no opinion")

	code, out = post("/shoot--p--b."+key.Proof("shoot--p--a")+"/webhooks/auth", `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"u","resourceAttributes":{"verb":"get","resource":"nodes"}}}`)
	require.Equal(t, http.StatusOK, code)
	status := out["status"].(map[string]any)
	assert.Equal(t, false, status["allowed"])
	assert.Nil(t, status["denied"], "no opinion")
	assert.Contains(t, status["evaluationError"], "does not prove tenant shoot--p--b")
	assert.Equal(t, reads, seed.Reads, "nothing of any tenant was read for an unproven caller")

	code, out = post("/shoot--p--b/webhooks/echo", "{}")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "shoot--p--b", out["tenant"], "B's own proof")
}

// testProofs are a seed's tenant proof key and a server's ring of it.
func testProofs(tb testing.TB) (tenantproof.Key, *tenantproof.Ring) {
	key, err := tenantproof.NewKey(time.Now())
	require.NoError(tb, err)
	keys := fake.NewClientBuilder().WithObjects(tenantproof.Secret("gardener-knative", tenantproof.Keys{key})).Build()
	return key, tenantproof.NewRing(keys, "gardener-knative", clock.RealClock{})
}

// signed is path with the tenant's (or the seed's) proof under key when its first segment names
// a tenant (or the seed) without one; any other path as it is.
func signed(t *testing.T, key tenantproof.Key, path string) string {
	tn, proof, rest, ok := tenantproof.ParsePath(path, tenant.DefaultPrefix)
	if !ok || proof != "" || strings.HasPrefix(path, "/"+string(tn)+tenantproof.Separator) || strings.HasPrefix(path, "/"+tenantproof.SeedSegment+tenantproof.Separator) {
		return path
	}
	if tn == tenantproof.Seed {
		return tenantproof.SeedPath(key, rest)
	}
	u, err := tenantproof.URL("http://x"+path, tn, key, "")
	require.NoError(t, err)
	return strings.TrimPrefix(u, "http://x")
}

// serveTenants serves the webhooks for the tenants until the test ends, with the seed's tenant
// proof key, and returns the key and a poster of JSON bodies to the server that answers the
// status and the decoded answer. A tenant path without a proof is sent with the tenant's.
func serveTenants(t *testing.T, tenants *clients.Clients, webhooks ...Webhook) (tenantproof.Key, func(path, body string) (int, map[string]any)) {
	t.Helper()
	key, proofs := testProofs(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	addrs := make(chan net.Addr, 1)
	go func() {
		_ = Serve(ctx, ServeOptions{Addr: "127.0.0.1:0", RequestTimeout: time.Second, ShutdownTimeout: time.Second, Ready: func(a net.Addr) { addrs <- a }, Tenants: tenants,
			Proofs: proofs},
			webhooks, prometheus.NewRegistry(), slog.New(slog.DiscardHandler))
	}()
	addr := (<-addrs).String()
	return key, func(path, body string) (int, map[string]any) {
		resp, err := http.Post("http://"+addr+signed(t, key, path), "application/json", strings.NewReader(body))
		require.NoError(t, err)
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
}

// Unknown tenants are answered by the server in the kind and version of the review asked.
func TestServeAnswersUnknownTenants(t *testing.T) {
	called := false
	admissionWebhook := Webhook{Name: "admit", Path: "/webhooks/admit", Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called = true })}
	authz := Authorization("authz", "/webhooks/auth", authorizerFunc(func() { called = true }), slog.New(slog.DiscardHandler))
	tenants, err := clients.New(clients.Options{Seed: tenanttest.Enrolled(t, "https://127.0.0.1:1", nil), Scheme: kubernetesscheme.Scheme})
	require.NoError(t, err)
	_, post := serveTenants(t, tenants, admissionWebhook, authz)

	// The call fails with the reason as a Status: the kube-apiserver applies the registration's
	// failure policy (a fail-closed webhook rejects with it, a best-effort one is skipped).
	code, out := post("/shoot--p--x/webhooks/admit", `{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"u1"}}`)
	require.Equal(t, http.StatusForbidden, code)
	assert.Equal(t, "Status", out["kind"])
	assert.Equal(t, "Forbidden", out["reason"])
	assert.Contains(t, out["message"], `unknown tenant "shoot--p--x"`)

	code, out = post("/shoot--p--x/webhooks/auth", `{"apiVersion":"authorization.k8s.io/v1beta1","kind":"SubjectAccessReview","spec":{"user":"u","resourceAttributes":{"verb":"get","resource":"nodes"}}}`)
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, "authorization.k8s.io/v1beta1", out["apiVersion"])
	status := out["status"].(map[string]any)
	assert.Equal(t, false, status["allowed"])
	assert.Nil(t, status["denied"], "no opinion")
	assert.Contains(t, status["evaluationError"], `unknown tenant "shoot--p--x"`)

	assert.False(t, called, "no webhook runs for an unknown tenant")
}

// A tenant's request reaches the webhook with the tenant's settings; a webhook that does not
// apply to the tenant is answered without it (allowed without a patch, no opinion); a seed that
// cannot be read fails the call (503).
func TestServeAppliesTenantsSettings(t *testing.T) {
	seed := tenanttest.Enrolled(t, "https://127.0.0.1:1", tenanttest.CA(t), "shoot--p--a", "shoot--p--b")
	workerless := tenanttest.Shoot("shoot--p--b")
	workerless.Spec.Provider.Workers = nil
	cluster, err := tenanttest.Cluster("shoot--p--b", "generic-token-kubeconfig-1", workerless)
	require.NoError(t, err)
	seed.Objects[client.ObjectKey{Name: "shoot--p--b"}] = cluster
	tenants, err := clients.New(clients.Options{Seed: seed, Scheme: kubernetesscheme.Scheme})
	require.NoError(t, err)

	var seen []string
	admit := Admission("admit", "/webhooks/admit", admission.HandlerFunc(func(ctx context.Context, req admission.Request) admission.Response {
		s, _ := tenant.SettingsFrom(ctx)
		seen = append(seen, s.KubernetesServiceHost)
		return admission.Denied("the webhook ran")
	}), slog.New(slog.DiscardHandler))
	admit.appliesTo = (*tenant.Settings).HasWorkers
	authz := Authorization("authz", "/webhooks/auth", authorizerFunc(func() { seen = append(seen, "authz") }), slog.New(slog.DiscardHandler))
	authz.appliesTo = (*tenant.Settings).HasWorkers
	_, post := serveTenants(t, tenants, admit, authz)
	const review = `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1","object":{"apiVersion":"v1","kind":"Pod"}}}`
	const sar = `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"u","resourceAttributes":{"verb":"get","resource":"nodes"}}}`

	code, out := post("/shoot--p--a/webhooks/admit", review)
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, false, out["response"].(map[string]any)["allowed"], "the webhook answered")
	assert.Equal(t, []string{tenanttest.APIServerHost("shoot--p--a")}, seen, "with the tenant's settings")

	seen = nil
	code, out = post("/shoot--p--b/webhooks/admit", review)
	require.Equal(t, http.StatusOK, code)
	response := out["response"].(map[string]any)
	assert.Equal(t, true, response["allowed"])
	assert.Equal(t, "u1", response["uid"])
	assert.Nil(t, response["patch"])
	code, out = post("/shoot--p--b/webhooks/auth", sar)
	require.Equal(t, http.StatusOK, code)
	status := out["status"].(map[string]any)
	assert.Equal(t, false, status["allowed"])
	assert.Nil(t, status["denied"], "no opinion")
	assert.Nil(t, status["evaluationError"])
	assert.Empty(t, seen, "no webhook runs for a tenant it does not apply to")

	code, _ = post("/shoot--p--b/webhooks/admit", `not json`)
	assert.Equal(t, http.StatusBadRequest, code)

	seed.Fail = errors.New("the seed is unreachable")
	code, out = post("/shoot--p--c/webhooks/admit", review)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, out["message"], "the seed is unreachable")
	assert.Empty(t, seen)
}

type authorizerFunc func()

func (f authorizerFunc) Authorize(context.Context, authorizationv1.SubjectAccessReviewSpec) (Decision, string, error) {
	f()
	return Allow, "", nil
}

// A tenant whose Cluster is not labelled enrolled is gardenlet's own resource manager's: a
// registration that still points here changes nothing (allowed without a patch, no opinion), and
// no webhook runs.
func TestServeLeavesTenantsNotEnrolledAlone(t *testing.T) {
	seed := tenanttest.Enrolled(t, "https://127.0.0.1:1", tenanttest.CA(t), "shoot--p--a")
	seed.Objects[client.ObjectKey{Name: "shoot--p--a"}].SetLabels(nil)
	tenants, err := clients.New(clients.Options{Seed: seed, Scheme: kubernetesscheme.Scheme})
	require.NoError(t, err)
	called := false
	admit := Admission("admit", "/webhooks/admit", admission.HandlerFunc(func(context.Context, admission.Request) admission.Response {
		called = true
		return admission.Denied("the webhook ran")
	}), slog.New(slog.DiscardHandler))
	authz := Authorization("authz", "/webhooks/auth", authorizerFunc(func() { called = true }), slog.New(slog.DiscardHandler))
	_, post := serveTenants(t, tenants, admit, authz)

	code, out := post("/shoot--p--a/webhooks/admit", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1","object":{"apiVersion":"v1","kind":"Pod"}}}`)
	require.Equal(t, http.StatusOK, code)
	response := out["response"].(map[string]any)
	assert.Equal(t, true, response["allowed"])
	assert.Nil(t, response["patch"])
	code, out = post("/shoot--p--a/webhooks/auth", `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"u","resourceAttributes":{"verb":"get","resource":"nodes"}}}`)
	require.Equal(t, http.StatusOK, code)
	status := out["status"].(map[string]any)
	assert.Equal(t, false, status["allowed"])
	assert.Nil(t, status["denied"], "no opinion")
	assert.Nil(t, status["evaluationError"])
	assert.False(t, called)
}
