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
	"fmt"
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

	"github.com/gardener-knative/gardener-knative/pkg/webhook/tenant"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	kubernetesscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
		tenant, rest, ok := ParseTenantPath(tc.path, DefaultTenantPrefix)
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
		tenant, rest, ok := ParseTenantPath(path, DefaultTenantPrefix)
		if !ok {
			if tenant != "" || rest != "" {
				t.Fatalf("%q: not a tenant path, yet tenant %q rest %q", path, tenant, rest)
			}
			return
		}
		if !strings.HasPrefix(string(tenant), DefaultTenantPrefix) || len(validation.IsDNS1123Label(string(tenant))) > 0 {
			t.Fatalf("%q: tenant %q is no namespace name with prefix %q", path, tenant, DefaultTenantPrefix)
		}
		if !strings.HasPrefix(rest, "/") || len(rest) < 2 {
			t.Fatalf("%q: rest %q is no path", path, rest)
		}
		if "/"+string(tenant)+rest != path {
			t.Fatalf("%q: tenant %q and rest %q do not make up the path", path, tenant, rest)
		}
	})
}

func TestControlPlaneNamespace(t *testing.T) {
	configured := "shoot--configured"
	assert.Equal(t, &configured, ControlPlaneNamespace(context.Background(), &configured))
	assert.Nil(t, ControlPlaneNamespace(context.Background(), nil))
	assert.Equal(t, "shoot--p--s", *ControlPlaneNamespace(tenant.With(context.Background(), "shoot--p--s"), &configured))
}

// kubeconfigFor is a generic token kubeconfig as gardenlet writes it.
func kubeconfigFor(t *testing.T, server string, ca []byte) []byte {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["shoot"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	kc.AuthInfos["shoot"] = &clientcmdapi.AuthInfo{TokenFile: "/var/run/secrets/gardener.cloud/shoot/generic-kubeconfig/token"}
	kc.Contexts["shoot"] = &clientcmdapi.Context{Cluster: "shoot", AuthInfo: "shoot"}
	kc.CurrentContext = "shoot"
	data, err := clientcmd.Write(*kc)
	require.NoError(t, err)
	return data
}

func TestTenantRESTConfig(t *testing.T) {
	ca := []byte("-----BEGIN CERTIFICATE-----\n...\n-----END CERTIFICATE-----\n")
	// The generic kubeconfig's server is the kube-apiserver Service, relative to the shoot's
	// namespace: qualified with it, with the original name kept for TLS.
	cfg, err := TenantRESTConfig("shoot--p--s", kubeconfigFor(t, "https://kube-apiserver", ca), "token")
	require.NoError(t, err)
	assert.Equal(t, "https://kube-apiserver.shoot--p--s.svc", cfg.Host)
	assert.Equal(t, "kube-apiserver", cfg.ServerName)
	assert.Equal(t, "token", cfg.BearerToken)
	assert.Equal(t, ca, cfg.CAData)
	assert.Empty(t, cfg.BearerTokenFile, "the token file exists only in the shoot's pods")

	cfg, err = TenantRESTConfig("shoot--p--s", kubeconfigFor(t, "https://kube-apiserver:443", ca), "token")
	require.NoError(t, err)
	assert.Equal(t, "https://kube-apiserver.shoot--p--s.svc:443", cfg.Host)

	// Istio TLS termination: the external address stays as it is.
	cfg, err = TenantRESTConfig("shoot--p--s", kubeconfigFor(t, "https://api.s.p.example.com", ca), "token")
	require.NoError(t, err)
	assert.Equal(t, "https://api.s.p.example.com", cfg.Host)
	assert.Empty(t, cfg.ServerName)

	for name, kubeconfig := range map[string][]byte{
		"no CA":      kubeconfigFor(t, "https://kube-apiserver", nil),
		"plain HTTP": kubeconfigFor(t, "http://kube-apiserver", ca),
		"empty":      nil,
		"garbage":    []byte("{"),
	} {
		_, err := TenantRESTConfig("shoot--p--s", kubeconfig, "token")
		assert.Error(t, err, name)
	}
}

// seedReader is the seed's Clusters and Secrets for TenantClients, counting reads.
type seedReader struct {
	objects map[client.ObjectKey]client.Object
	reads   int
	fail    error
}

func (s *seedReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	s.reads++
	if s.fail != nil {
		return s.fail
	}
	stored, ok := s.objects[key]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{}, key.Name)
	}
	switch o := obj.(type) {
	case *metav1.PartialObjectMetadata:
		u := stored.(*unstructured.Unstructured)
		o.ObjectMeta = metav1.ObjectMeta{Name: u.GetName(), Annotations: u.GetAnnotations()}
	case *corev1.Secret:
		*o = *stored.(*corev1.Secret).DeepCopy()
	default:
		return fmt.Errorf("unexpected %T", obj)
	}
	return nil
}

func (s *seedReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return fmt.Errorf("the seed is never listed")
}

// enrolled is a seed that holds access for the tenants, with their kube-apiserver at server.
func enrolled(t *testing.T, server string, tenants ...tenant.Name) *seedReader {
	s := &seedReader{objects: map[client.ObjectKey]client.Object{}}
	for _, tenant := range tenants {
		ns := string(tenant)
		cluster := &unstructured.Unstructured{}
		cluster.SetName(ns)
		cluster.SetAnnotations(map[string]string{"generic-token-kubeconfig.secret.gardener.cloud/name": "generic-token-kubeconfig-1"})
		s.objects[client.ObjectKey{Name: ns}] = cluster
		s.objects[client.ObjectKey{Namespace: ns, Name: "generic-token-kubeconfig-1"}] = &corev1.Secret{Data: map[string][]byte{"kubeconfig": kubeconfigFor(t, server, newPKI(t).pem)}}
		s.objects[client.ObjectKey{Namespace: ns, Name: DefaultTenantAccessSecret}] = &corev1.Secret{Data: map[string][]byte{"token": []byte("token-of-" + ns)}}
	}
	return s
}

func TestTenantClientsCacheAndUnknownTenants(t *testing.T) {
	ctx := context.Background()
	seed := enrolled(t, "https://127.0.0.1:1", "shoot--p--a", "shoot--p--b")
	tenants, err := NewTenantClients(TenantClientsOptions{Seed: seed, Scheme: kubernetesscheme.Scheme, Size: 1})
	require.NoError(t, err)

	a, err := tenants.Client(ctx, "shoot--p--a")
	require.NoError(t, err)
	again, err := tenants.Client(ctx, "shoot--p--a")
	require.NoError(t, err)
	assert.Same(t, a, again, "a warm tenant reuses its client")
	assert.Equal(t, 3, seed.reads, "Cluster, kubeconfig and access Secret, once")

	b, err := tenants.Client(ctx, "shoot--p--b")
	require.NoError(t, err)
	assert.NotSame(t, a, b)
	assert.Equal(t, 1, tenants.Len(), "the cache is bounded: A was evicted for B")

	_, err = tenants.Client(ctx, "shoot--p--unknown")
	assert.True(t, IsUnknownTenant(err), "%v", err)
	delete(seed.objects, client.ObjectKey{Namespace: "shoot--p--b", Name: DefaultTenantAccessSecret})
	tenants.Forget("shoot--p--b")
	_, err = tenants.Client(ctx, "shoot--p--b")
	assert.True(t, IsUnknownTenant(err), "no access Secret: %v", err)
	reads := seed.reads
	_, err = tenants.Client(ctx, "shoot--p--b")
	assert.True(t, IsUnknownTenant(err))
	assert.Equal(t, reads, seed.reads, "an unknown tenant is remembered for a while")

	// A CA that does not parse is the tenant's misconfiguration, not a transient error.
	seed.objects[client.ObjectKey{Namespace: "shoot--p--a", Name: "generic-token-kubeconfig-1"}] = &corev1.Secret{Data: map[string][]byte{"kubeconfig": kubeconfigFor(t, "https://127.0.0.1:1", []byte("not PEM"))}}
	tenants.Forget("shoot--p--a")
	_, err = tenants.Client(ctx, "shoot--p--a")
	assert.True(t, IsUnknownTenant(err), "%v", err)

	tenants.Forget("shoot--p--a")
	seed.fail = apierrors.NewServiceUnavailable("seed down")
	_, err = tenants.Client(ctx, "shoot--p--a")
	assert.Error(t, err)
	assert.False(t, IsUnknownTenant(err), "an unreachable seed is transient, not an unknown tenant")

	err = NewRoutingReader(nil, nil).Get(tenant.With(ctx, "shoot--p--a"), client.ObjectKey{Name: "x"}, &corev1.Secret{})
	assert.True(t, IsUnknownTenant(err), "a single-tenant server knows no tenants: %v", err)
}

// pki is a CA that signs the server's and the callers' certificates.
type pki struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newPKI(t *testing.T) *pki {
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
	tenants, err := NewTenantClients(TenantClientsOptions{Seed: enrolled(t, "https://127.0.0.1:1", "shoot--p--a", "shoot--p--b"), Scheme: kubernetesscheme.Scheme})
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

// Unknown tenants are answered by the server in the kind and version of the review asked.
func TestServeAnswersUnknownTenants(t *testing.T) {
	called := false
	admissionWebhook := Webhook{Name: "admit", Path: "/webhooks/admit", Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called = true })}
	authz := Authorization("authz", "/webhooks/auth", authorizerFunc(func() { called = true }), slog.New(slog.DiscardHandler))
	tenants, err := NewTenantClients(TenantClientsOptions{Seed: enrolled(t, "https://127.0.0.1:1"), Scheme: kubernetesscheme.Scheme})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrs := make(chan net.Addr, 1)
	go func() {
		_ = Serve(ctx, ServeOptions{Addr: "127.0.0.1:0", RequestTimeout: time.Second, ShutdownTimeout: time.Second, Ready: func(a net.Addr) { addrs <- a }, Tenants: tenants},
			[]Webhook{admissionWebhook, authz}, prometheus.NewRegistry(), slog.New(slog.DiscardHandler))
	}()
	addr := (<-addrs).String()
	post := func(path, body string) (int, map[string]any) {
		resp, err := http.Post("http://"+addr+path, "application/json", strings.NewReader(body))
		require.NoError(t, err)
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}

	code, out := post("/shoot--p--x/webhooks/admit", `{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"u1"}}`)
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, "admission.k8s.io/v1beta1", out["apiVersion"])
	response := out["response"].(map[string]any)
	assert.Equal(t, "u1", response["uid"])
	assert.Equal(t, false, response["allowed"])
	assert.Equal(t, float64(http.StatusForbidden), response["status"].(map[string]any)["code"])
	assert.Contains(t, response["status"].(map[string]any)["message"], `unknown tenant "shoot--p--x"`)

	code, out = post("/shoot--p--x/webhooks/auth", `{"apiVersion":"authorization.k8s.io/v1beta1","kind":"SubjectAccessReview","spec":{"user":"u","resourceAttributes":{"verb":"get","resource":"nodes"}}}`)
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, "authorization.k8s.io/v1beta1", out["apiVersion"])
	status := out["status"].(map[string]any)
	assert.Equal(t, false, status["allowed"])
	assert.Nil(t, status["denied"], "no opinion")
	assert.Contains(t, status["evaluationError"], `unknown tenant "shoot--p--x"`)

	code, _ = post("/shoot--p--x/webhooks/admit", `not json`)
	assert.Equal(t, http.StatusBadRequest, code)
	assert.False(t, called, "no webhook runs for an unknown tenant")
}

type authorizerFunc func()

func (f authorizerFunc) Authorize(context.Context, authorizationv1.SubjectAccessReviewSpec) (Decision, string, error) {
	f()
	return Allow, "", nil
}
