package webhook

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/clients"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/tenanttest"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	kubernetesscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

func TestParseTenantPath(t *testing.T) {
	for _, tc := range []struct {
		path   string
		tenant tenant.Name
		rest   string
		ok     bool
	}{
		{"/shoot--p--s/webhooks/high-availability-config", "shoot--p--s", "/webhooks/high-availability-config", true},
		{"/shoot--p--s/validate-druid-gardener-cloud-v1alpha1-etcd", "shoot--p--s", "/validate-druid-gardener-cloud-v1alpha1-etcd", true},
		{"/shoot--p--s/webhooks/auth/nodeagent", "shoot--p--s", "/webhooks/auth/nodeagent", true},
		{"/webhooks/high-availability-config", "", "", false}, // single-tenant path
		{"/kube-system/webhooks/high-availability-config", "", "", false},
		{"/garden/webhooks/high-availability-config", "", "", false},
		{"/shoot--p--s", "", "", false},
		{"/shoot--p--s/", "", "", false},
		{"shoot--p--s/webhooks/x", "", "", false},
		{"/Shoot--p--s/webhooks/x", "", "", false},
		{"/shoot--p--s./webhooks/x", "", "", false},
		{"/shoot--p--s%2F/webhooks/x", "", "", false},
		{"/shoot--" + strings.Repeat("x", 60) + "/webhooks/x", "", "", false}, // longer than a namespace name
		{"//webhooks/x", "", "", false},
	} {
		tenant, rest, ok := ParseTenantPath(tc.path, tenant.DefaultPrefix)
		assert.Equal(t, tc.ok, ok, tc.path)
		assert.Equal(t, tc.tenant, tenant, tc.path)
		assert.Equal(t, tc.rest, rest, tc.path)
	}
}

// Whatever path arrives, a tenant is only ever a namespace name with the prefix, and the path
// is exactly the tenant and the rest: no path can address a namespace outside the prefix or
// smuggle a second segment into the tenant.
func FuzzParseTenantPath(f *testing.F) {
	for _, s := range []string{"/shoot--p--s/webhooks/x", "/webhooks/x", "/shoot--a/", "/shoot--a//", "/shoot--a/../kube-system/x", "", "/", "//"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		tn, rest, ok := ParseTenantPath(path, tenant.DefaultPrefix)
		if !ok {
			if tn != "" || rest != "" {
				t.Fatalf("%q: not a tenant path, yet tenant %q rest %q", path, tn, rest)
			}
			return
		}
		if !strings.HasPrefix(string(tn), tenant.DefaultPrefix) || len(validation.IsDNS1123Label(string(tn))) > 0 {
			t.Fatalf("%q: tenant %q is no namespace name with prefix %q", path, tn, tenant.DefaultPrefix)
		}
		if !strings.HasPrefix(rest, "/") || len(rest) < 2 {
			t.Fatalf("%q: rest %q is no path", path, rest)
		}
		if "/"+string(tn)+rest != path {
			t.Fatalf("%q: tenant %q and rest %q do not make up the path", path, tn, rest)
		}
	})
}

func TestControlPlaneNamespace(t *testing.T) {
	configured := "shoot--configured"
	assert.Equal(t, &configured, ControlPlaneNamespace(context.Background(), &configured))
	assert.Nil(t, ControlPlaneNamespace(context.Background(), nil))
	assert.Equal(t, "shoot--p--s", *ControlPlaneNamespace(tenant.With(context.Background(), "shoot--p--s"), &configured))
}

// pki is a CA that signs the server's and the callers' certificates.
type pki struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newPKI(t testing.TB) *pki {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &pki{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue signs a certificate for the subject; server certificates are for 127.0.0.1.
func (p *pki) issue(t *testing.T, subject pkix.Name, server bool) tls.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: subject, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if server {
		tmpl.ExtKeyUsage, tmpl.IPAddresses = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.cert, &key.PublicKey, p.key)
	require.NoError(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func writePEM(t *testing.T, dir string, c tls.Certificate) (certFile, keyFile string) {
	keyDER, err := x509.MarshalECPrivateKey(c.PrivateKey.(*ecdsa.PrivateKey))
	require.NoError(t, err)
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600))
	return certFile, keyFile
}

// The server routes /<tenant>/<path> to the webhook with the tenant in the request's context,
// and with CLIENT_CA_FILE only callers whose certificate names the tenant get there.
func TestServeRoutesAndAuthenticatesTenants(t *testing.T) {
	dir := t.TempDir()
	ca := newPKI(t)
	certFile, keyFile := writePEM(t, dir, ca.issue(t, pkix.Name{CommonName: "server"}, true))
	caFile := filepath.Join(dir, "ca.crt")
	require.NoError(t, os.WriteFile(caFile, ca.pem, 0o600))

	echo := Webhook{Name: "echo", Path: "/webhooks/echo", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "tenant="+string(tenant.From(r.Context())))
	})}
	tenants, err := clients.New(clients.Options{Seed: tenanttest.Enrolled(t, "https://127.0.0.1:1", newPKI(t).pem, "shoot--p--a", "shoot--p--b"), Scheme: kubernetesscheme.Scheme})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrs := make(chan net.Addr, 1)
	go func() {
		_ = Serve(ctx, ServeOptions{
			Addr: "127.0.0.1:0", CertFile: certFile, KeyFile: keyFile, RequestTimeout: time.Second, ShutdownTimeout: time.Second,
			Ready: func(a net.Addr) { addrs <- a }, Tenants: tenants, ClientCAFile: caFile,
		}, []Webhook{echo}, prometheus.NewRegistry(), slog.New(slog.DiscardHandler))
	}()
	addr := (<-addrs).String()

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.pem)
	call := func(path string, cert *tls.Certificate) (int, string) {
		cfg := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
		if cert != nil {
			cfg.Certificates = []tls.Certificate{*cert}
		}
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
		resp, err := c.Post("https://"+addr+path, "application/json", strings.NewReader("{}"))
		require.NoError(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	callerA := ca.issue(t, pkix.Name{CommonName: "shoot--p--a"}, false)
	callerB := ca.issue(t, pkix.Name{CommonName: "kube-apiserver", Organization: []string{"shoot--p--b"}}, false)

	code, body := call("/shoot--p--a/webhooks/echo", &callerA)
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "tenant=shoot--p--a", body)
	code, body = call("/shoot--p--b/webhooks/echo", &callerB)
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "tenant=shoot--p--b", body, "the organization may name the tenant")

	code, _ = call("/shoot--p--b/webhooks/echo", &callerA)
	assert.Equal(t, http.StatusUnauthorized, code, "A's caller may not act for B")
	code, _ = call("/shoot--p--a/webhooks/echo", nil)
	assert.Equal(t, http.StatusUnauthorized, code, "no certificate, no tenant")

	code, body = call("/webhooks/echo", nil)
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "tenant=", body, "the unprefixed path is the single tenant (the seed)")
	code, _ = call("/shoot--p--a/webhooks/other", &callerA)
	assert.Equal(t, http.StatusNotFound, code)

	// A certificate of another CA fails the handshake.
	other := newPKI(t).issue(t, pkix.Name{CommonName: "shoot--p--a"}, false)
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{other}, MinVersion: tls.VersionTLS12}}}
	_, err = c.Post("https://"+addr+"/shoot--p--a/webhooks/echo", "application/json", strings.NewReader("{}"))
	assert.Error(t, err)
}

// serveTenants serves the webhooks for the tenants until the test ends and returns a poster of
// JSON bodies to the server that answers the status and the decoded answer.
func serveTenants(t *testing.T, tenants *clients.Clients, webhooks ...Webhook) func(path, body string) (int, map[string]any) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	addrs := make(chan net.Addr, 1)
	go func() {
		_ = Serve(ctx, ServeOptions{Addr: "127.0.0.1:0", RequestTimeout: time.Second, ShutdownTimeout: time.Second, Ready: func(a net.Addr) { addrs <- a }, Tenants: tenants},
			webhooks, prometheus.NewRegistry(), slog.New(slog.DiscardHandler))
	}()
	addr := (<-addrs).String()
	return func(path, body string) (int, map[string]any) {
		resp, err := http.Post("http://"+addr+path, "application/json", strings.NewReader(body))
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
	post := serveTenants(t, tenants, admissionWebhook, authz)

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
	seed := tenanttest.Enrolled(t, "https://127.0.0.1:1", newPKI(t).pem, "shoot--p--a", "shoot--p--b")
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
	post := serveTenants(t, tenants, admit, authz)
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
	seed := tenanttest.Enrolled(t, "https://127.0.0.1:1", newPKI(t).pem, "shoot--p--a")
	seed.Objects[client.ObjectKey{Name: "shoot--p--a"}].SetLabels(nil)
	tenants, err := clients.New(clients.Options{Seed: seed, Scheme: kubernetesscheme.Scheme})
	require.NoError(t, err)
	called := false
	admit := Admission("admit", "/webhooks/admit", admission.HandlerFunc(func(context.Context, admission.Request) admission.Response {
		called = true
		return admission.Denied("the webhook ran")
	}), slog.New(slog.DiscardHandler))
	authz := Authorization("authz", "/webhooks/auth", authorizerFunc(func() { called = true }), slog.New(slog.DiscardHandler))
	post := serveTenants(t, tenants, admit, authz)

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
