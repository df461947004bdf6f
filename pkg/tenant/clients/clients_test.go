package clients

import (
	"context"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubernetesscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/gardener-knative/gardener-knative/pkg/scheme"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/tenanttest"
)

func TestRESTConfig(t *testing.T) {
	ca := []byte("-----BEGIN CERTIFICATE-----\n...\n-----END CERTIFICATE-----\n")
	// The generic kubeconfig's server is the kube-apiserver Service, relative to the shoot's
	// namespace: qualified with it, with the original name kept for TLS.
	cfg, err := RESTConfig("shoot--p--s", tenanttest.Kubeconfig(t, "https://kube-apiserver", ca), "token")
	require.NoError(t, err)
	assert.Equal(t, "https://kube-apiserver.shoot--p--s.svc", cfg.Host)
	assert.Equal(t, "kube-apiserver", cfg.ServerName)
	assert.Equal(t, "token", cfg.BearerToken)
	assert.Equal(t, ca, cfg.CAData)
	assert.Empty(t, cfg.BearerTokenFile, "the token file exists only in the shoot's pods")

	cfg, err = RESTConfig("shoot--p--s", tenanttest.Kubeconfig(t, "https://kube-apiserver:443", ca), "token")
	require.NoError(t, err)
	assert.Equal(t, "https://kube-apiserver.shoot--p--s.svc:443", cfg.Host)

	// Istio TLS termination: the external address stays as it is.
	cfg, err = RESTConfig("shoot--p--s", tenanttest.Kubeconfig(t, "https://api.s.p.example.com", ca), "token")
	require.NoError(t, err)
	assert.Equal(t, "https://api.s.p.example.com", cfg.Host)
	assert.Empty(t, cfg.ServerName)

	for name, kubeconfig := range map[string][]byte{
		"no CA":      tenanttest.Kubeconfig(t, "https://kube-apiserver", nil),
		"plain HTTP": tenanttest.Kubeconfig(t, "http://kube-apiserver", ca),
		"empty":      nil,
		"garbage":    []byte("{"),
	} {
		_, err := RESTConfig("shoot--p--s", kubeconfig, "token")
		assert.Error(t, err, name)
	}
}

func TestClientsCacheAndUnknownTenants(t *testing.T) {
	ctx := context.Background()
	seed := tenanttest.Enrolled(t, "https://127.0.0.1:1", tenanttest.CA(t), "shoot--p--a", "shoot--p--b")
	tenants, err := New(Options{Seed: seed, Scheme: kubernetesscheme.Scheme, Size: 1})
	require.NoError(t, err)

	a, err := tenants.Client(ctx, "shoot--p--a")
	require.NoError(t, err)
	again, err := tenants.Client(ctx, "shoot--p--a")
	require.NoError(t, err)
	assert.Same(t, a, again, "a warm tenant reuses its client")
	assert.Equal(t, 3, seed.Reads, "Cluster, kubeconfig and access Secret, once")
	cfg, err := tenants.Config(ctx, "shoot--p--a")
	require.NoError(t, err)
	assert.Equal(t, "token-of-shoot--p--a", cfg.BearerToken)
	assert.Equal(t, 3, seed.Reads, "the configuration is cached with the client")

	b, err := tenants.Client(ctx, "shoot--p--b")
	require.NoError(t, err)
	assert.NotSame(t, a, b)
	assert.Equal(t, 1, tenants.Len(), "the cache is bounded: A was evicted for B")

	_, err = tenants.Client(ctx, "shoot--p--unknown")
	assert.True(t, IsUnknownTenant(err), "%v", err)
	delete(seed.Objects, client.ObjectKey{Namespace: "shoot--p--b", Name: tenant.DefaultAccessSecret})
	tenants.Forget("shoot--p--b")
	_, err = tenants.Client(ctx, "shoot--p--b")
	assert.True(t, IsUnknownTenant(err), "no access Secret: %v", err)
	reads := seed.Reads
	_, err = tenants.Client(ctx, "shoot--p--b")
	assert.True(t, IsUnknownTenant(err))
	assert.Equal(t, reads, seed.Reads, "an unknown tenant is remembered for a while")

	// A CA that does not parse is the tenant's misconfiguration, not a transient error.
	seed.Objects[client.ObjectKey{Namespace: "shoot--p--a", Name: "generic-token-kubeconfig-1"}] = &corev1.Secret{Data: map[string][]byte{"kubeconfig": tenanttest.Kubeconfig(t, "https://127.0.0.1:1", []byte("not PEM"))}}
	tenants.Forget("shoot--p--a")
	_, err = tenants.Client(ctx, "shoot--p--a")
	assert.True(t, IsUnknownTenant(err), "%v", err)

	tenants.Forget("shoot--p--a")
	seed.Fail = apierrors.NewServiceUnavailable("seed down")
	_, err = tenants.Client(ctx, "shoot--p--a")
	assert.Error(t, err)
	assert.False(t, IsUnknownTenant(err), "an unreachable seed is transient, not an unknown tenant")
}

func TestRouting(t *testing.T) {
	ctx := context.Background()
	single := fake.NewClientBuilder().WithObjects(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "x"}}).Build()

	err := NewRouting(single, nil).Get(tenant.With(ctx, "shoot--p--a"), client.ObjectKey{Namespace: "ns", Name: "x"}, &corev1.Secret{})
	assert.True(t, IsUnknownTenant(err), "a single-tenant process knows no tenants: %v", err)
	assert.NoError(t, NewRouting(single, nil).Get(ctx, client.ObjectKey{Namespace: "ns", Name: "x"}, &corev1.Secret{}), "no tenant: the single cluster")

	tenants, err := New(Options{Seed: tenanttest.Enrolled(t, "https://127.0.0.1:1", tenanttest.CA(t)), Scheme: kubernetesscheme.Scheme})
	require.NoError(t, err)
	only := NewTenantsOnly(tenants, single)
	err = only.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "x"}, &corev1.Secret{})
	assert.True(t, IsUnknownTenant(err), "a process serving only tenants never falls back to the seed: %v", err)
	err = only.Status().Update(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "x"}})
	assert.True(t, IsUnknownTenant(err), "sub-resources route alike: %v", err)
	assert.Same(t, single.Scheme(), only.Scheme())
}

// Discover finds the enrolled tenants only: a shoot whose Cluster lacks the label is left to
// gardenlet's own resource manager.
func TestDiscover(t *testing.T) {
	enrolled := map[string]string{tenant.EnrolledLabel: "true"}
	var objs []client.Object
	for name, labels := range map[string]map[string]string{
		"shoot--p--b": enrolled, "garden": enrolled, "shoot--p--a": enrolled, "shoot--": enrolled,
		"shoot--p--gardenlets": nil, "shoot--p--false": {tenant.EnrolledLabel: "false"},
	} {
		objs = append(objs, &extensionsv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}})
	}
	seed := fake.NewClientBuilder().WithScheme(scheme.Gardener).WithObjects(objs...).Build()
	tenants, err := Discover(context.Background(), seed, tenant.DefaultPrefix, 1)
	require.NoError(t, err)
	assert.Equal(t, []tenant.Name{"shoot--p--a", "shoot--p--b"}, tenants)
}

// A tenant whose Cluster is not labelled enrolled is not served, and none of its Secrets is
// read: the gate comes right after the Cluster.
func TestNotEnrolledTenantIsLeftAlone(t *testing.T) {
	seed := tenanttest.Enrolled(t, "https://127.0.0.1:1", tenanttest.CA(t), "shoot--p--a")
	seed.Objects[client.ObjectKey{Name: "shoot--p--a"}].SetLabels(nil)
	tenants, err := New(Options{Seed: seed, Scheme: kubernetesscheme.Scheme})
	require.NoError(t, err)
	_, err = tenants.Client(context.Background(), "shoot--p--a")
	assert.True(t, IsNotEnrolled(err), "%v", err)
	assert.True(t, IsUnknownTenant(err), "a not enrolled tenant is one kind of unknown: %v", err)
	assert.Equal(t, 1, seed.Reads, "only the Cluster was read")
}

// With IdleConnTimeout a tenant's connection closes once it carried no request for that long,
// and requests after that open a new one; without it client-go keeps it open (90 s).
func TestIdleTenantConnectionsClose(t *testing.T) {
	var mu sync.Mutex
	states := map[net.Conn][]http.ConnState{}
	server := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	server.EnableHTTP2 = true
	server.Config.ConnState = func(c net.Conn, s http.ConnState) {
		mu.Lock()
		defer mu.Unlock()
		states[c] = append(states[c], s)
	}
	server.StartTLS()
	t.Cleanup(server.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: server.Certificate().Raw})
	connections := func() (open, closed int) {
		mu.Lock()
		defer mu.Unlock()
		for _, s := range states {
			if s[len(s)-1] == http.StateClosed {
				closed++
			} else {
				open++
			}
		}
		return open, closed
	}

	for _, tc := range []struct {
		name       string
		idle       time.Duration
		closesIdle bool
	}{{"idle timeout", 200 * time.Millisecond, true}, {"client-go's default", 0, false}} {
		t.Run(tc.name, func(t *testing.T) {
			server.CloseClientConnections()
			require.Eventually(t, func() bool { open, _ := connections(); return open == 0 }, 5*time.Second, 10*time.Millisecond)
			mu.Lock()
			clear(states)
			mu.Unlock()

			seed := tenanttest.Enrolled(t, server.URL, ca, "shoot--p--a")
			tenants, err := New(Options{Seed: seed, Scheme: kubernetesscheme.Scheme, IdleConnTimeout: tc.idle})
			require.NoError(t, err)
			cfg, err := tenants.Config(context.Background(), "shoot--p--a")
			require.NoError(t, err)
			httpClient, err := rest.HTTPClientFor(cfg)
			require.NoError(t, err)
			get := func() {
				resp, err := httpClient.Get(server.URL + "/version")
				require.NoError(t, err)
				require.NoError(t, resp.Body.Close())
				assert.Equal(t, "HTTP/2.0", resp.Proto, "kube-apiservers speak HTTP/2")
			}
			get()
			get()
			open, _ := connections()
			require.Equal(t, 1, open, "one connection carries a tenant's requests")

			if !tc.closesIdle {
				time.Sleep(500 * time.Millisecond)
				open, closed := connections()
				assert.Equal(t, []int{1, 0}, []int{open, closed}, "client-go keeps the connection")
				return
			}
			require.Eventually(t, func() bool { _, closed := connections(); return closed == 1 }, 5*time.Second, 20*time.Millisecond,
				"the idle connection closes")
			get()
			open, closed := connections()
			assert.Equal(t, []int{1, 1}, []int{open, closed}, "a request after that opens a new one")
		})
	}
}
