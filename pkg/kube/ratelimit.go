package kube

import (
	"fmt"
	"net/http"
	"sync"

	"golang.org/x/time/rate"
	"k8s.io/client-go/rest"
)

// Rate is a client-side rate limit: QPS requests a second on average, in bursts of up to Burst.
type Rate struct {
	QPS   float32
	Burst int
}

// TenantRateLimits add a bucket per tenant to a client's one token bucket, for a client that
// every tenant of a seed shares (the per-seed functions' seed client). Gardener gives each
// shoot's resource manager a seed client of its own, rate-limited on its own; with only one
// bucket for all, one tenant's burst could take the whole client's rate and queue every other
// tenant's reconciles behind it.
type TenantRateLimits struct {
	// PerTenant bounds the requests in each tenant's namespace, a bucket per tenant.
	PerTenant Rate
	// Shared bounds all requests of the client together (a tenant's after its own bucket): the
	// process's load on the API server.
	Shared Rate
	// IsTenant tells whether a namespace is a tenant's.
	IsTenant func(namespace string) bool
}

// Apply makes cfg's client limit its requests by l instead of client-go's one bucket.
func (l TenantRateLimits) Apply(cfg *rest.Config) {
	// A negative QPS and no RateLimiter turn client-go's own bucket off: the transport limits.
	cfg.QPS, cfg.Burst, cfg.RateLimiter = -1, 0, nil
	limits := &tenantLimiter{limits: l, shared: newLimiter(l.Shared), tenants: map[string]*rate.Limiter{}, pruneAt: minPruneAt}
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			// The tenant's own bucket first: a tenant over its limit holds none of the shared rate.
			namespace := NamespaceOf(req)
			if tenant := limits.of(namespace); tenant != nil {
				if err := tenant.Wait(req.Context()); err != nil {
					return nil, fmt.Errorf("client rate limiter of tenant %s: %w", namespace, err)
				}
			}
			if err := limits.shared.Wait(req.Context()); err != nil {
				return nil, fmt.Errorf("client rate limiter: %w", err)
			}
			return next.RoundTrip(req)
		})
	})
}

// minPruneAt is how many tenants' buckets are kept before full ones are dropped.
const minPruneAt = 256

type tenantLimiter struct {
	limits TenantRateLimits
	shared *rate.Limiter

	mu      sync.Mutex
	tenants map[string]*rate.Limiter
	// pruneAt is the number of buckets at which the full ones are dropped: twice the number
	// left by the last pruning (at least minPruneAt), so that pruning costs O(1) per request
	// amortized, and buckets held grow with the tenants active at once, not with every tenant
	// ever seen.
	pruneAt int
}

// of is the bucket of the tenant whose namespace a request is in; nil for a request that is no
// tenant's.
func (t *tenantLimiter) of(namespace string) *rate.Limiter {
	if namespace == "" || !t.limits.IsTenant(namespace) {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	limiter, ok := t.tenants[namespace]
	if !ok {
		if len(t.tenants) >= t.pruneAt {
			t.prune()
		}
		limiter = newLimiter(t.limits.PerTenant)
		t.tenants[namespace] = limiter
	}
	return limiter
}

// prune drops the buckets that are full: a full bucket lets through what a new one would, so
// forgetting it changes no request's wait.
func (t *tenantLimiter) prune() {
	for namespace, limiter := range t.tenants {
		if limiter.Tokens() >= float64(limiter.Burst()) {
			delete(t.tenants, namespace)
		}
	}
	t.pruneAt = max(minPruneAt, 2*len(t.tenants))
}

func newLimiter(r Rate) *rate.Limiter {
	if r.QPS <= 0 {
		return rate.NewLimiter(rate.Inf, 0)
	}
	return rate.NewLimiter(rate.Limit(r.QPS), max(r.Burst, 1))
}

// NamespaceOf is the namespace a request to a kube-apiserver addresses: the one in its path
// (/api/v1/namespaces/<ns>/…, /apis/<group>/<version>/namespaces/<ns>/…), or the namespace a
// request for a Namespace object names; "" for every other request.
func NamespaceOf(req *http.Request) string {
	_, _, rest, _ := splitAPIPath(req)
	if len(rest) >= 2 && rest[0] == "namespaces" {
		return rest[1]
	}
	return ""
}
