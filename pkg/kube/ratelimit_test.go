package kube

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"
	"k8s.io/client-go/rest"
)

func TestNamespaceOf(t *testing.T) {
	for path, namespace := range map[string]string{
		"/api/v1/namespaces/shoot--a/secrets":                                            "shoot--a",
		"/api/v1/namespaces/shoot--a":                                                    "shoot--a",
		"/apis/resources.gardener.cloud/v1alpha1/namespaces/shoot--a/managedresources/x": "shoot--a",
		"/apis/resources.gardener.cloud/v1alpha1/managedresources":                       "",
		"/api/v1/namespaces":                                                             "",
		"/api/v1/nodes/n":                                                                "",
		"/apis":                                                                          "",
	} {
		u, _ := url.Parse(path)
		assert.Equal(t, namespace, NamespaceOf(&http.Request{URL: u}), path)
	}
}

// limitedGet returns a GET of a path through a client limited by limits, with a one-second
// deadline: a request its bucket would hold past the deadline fails at once.
func limitedGet(t *testing.T, limits TenantRateLimits) func(path string) error {
	t.Helper()
	server := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(server.Close)
	cfg := &rest.Config{Host: server.URL, QPS: 1000, Burst: 1000}
	limits.Apply(cfg)
	httpClient, err := rest.HTTPClientFor(cfg)
	require.NoError(t, err)
	return func(path string) error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, server.URL+path, nil)
		require.NoError(t, err)
		resp, err := httpClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
}

func isTenant(namespace string) bool { return strings.HasPrefix(namespace, "shoot--") }

// One request a minute: a bucket's second request waits far past limitedGet's deadline.
var oneAMinute = Rate{QPS: 1.0 / 60, Burst: 1}

func TestEachTenantHasABucketOfItsOwn(t *testing.T) {
	get := limitedGet(t, TenantRateLimits{PerTenant: oneAMinute, Shared: Rate{QPS: 1000, Burst: 1000}, IsTenant: isTenant})

	require.NoError(t, get("/api/v1/namespaces/shoot--a/secrets"))
	err := get("/api/v1/namespaces/shoot--a/configmaps")
	require.Error(t, err, "tenant a's bucket is empty")
	assert.Contains(t, err.Error(), "client rate limiter of tenant shoot--a")

	assert.NoError(t, get("/api/v1/namespaces/shoot--b/secrets"), "tenant b does not wait for tenant a")
	assert.NoError(t, get("/apis/resources.gardener.cloud/v1alpha1/managedresources"), "nor do requests that are no tenant's")
	assert.NoError(t, get("/api/v1/namespaces/garden/secrets"), "nor those in a namespace that is no tenant's")
}

func TestTheSharedBucketBoundsAllRequests(t *testing.T) {
	get := limitedGet(t, TenantRateLimits{PerTenant: Rate{QPS: 1000, Burst: 1000}, Shared: oneAMinute, IsTenant: isTenant})

	require.NoError(t, get("/api/v1/namespaces/shoot--a/secrets"))
	for _, path := range []string{"/api/v1/namespaces/shoot--b/secrets", "/apis/resources.gardener.cloud/v1alpha1/managedresources"} {
		err := get(path)
		require.Error(t, err, "the shared bucket is empty: %s", path)
		assert.Contains(t, err.Error(), "client rate limiter: ")
	}
}

func TestClientGoBucketIsReplaced(t *testing.T) {
	cfg := &rest.Config{QPS: 50, Burst: 100}
	TenantRateLimits{IsTenant: isTenant}.Apply(cfg)
	assert.Negative(t, cfg.QPS, "client-go's own bucket would hold every tenant's requests")
	assert.Nil(t, cfg.RateLimiter)
}

// bucketsHeldAfter2000Tenants is how many buckets a limiter with the per-tenant rate r holds
// after 2,000 tenants made one request each, one after the other.
func bucketsHeldAfter2000Tenants(t *testing.T, r Rate) int {
	limits := &tenantLimiter{
		limits:  TenantRateLimits{PerTenant: r, IsTenant: isTenant},
		shared:  newLimiter(Rate{}),
		tenants: map[string]*rate.Limiter{},
		pruneAt: minPruneAt,
	}
	for i := range 2000 {
		limiter := limits.of(fmt.Sprintf("shoot--%d", i))
		require.True(t, limiter.Allow())
	}
	return len(limits.tenants)
}

func TestFullBucketsAreForgotten(t *testing.T) {
	// Refilled at once: every bucket is full again when the next tenant comes.
	assert.LessOrEqual(t, bucketsHeldAfter2000Tenants(t, Rate{QPS: 1e9, Burst: 1}), minPruneAt)
}

func TestBucketsNotFullAreKept(t *testing.T) {
	// Empty for a minute: forgetting one would let its tenant past its limit.
	assert.Equal(t, 2000, bucketsHeldAfter2000Tenants(t, Rate{QPS: 1.0 / 60, Burst: 1}))
}
