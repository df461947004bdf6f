package function

import (
	"fmt"
	"strconv"
	"sync"

	"github.com/gardener-knative/gardener-knative/pkg/tenant"
)

// DefaultTenantMaxInFlight is TENANT_MAX_IN_FLIGHT's default: the events of one tenant a per-seed
// function's process handles at once (docs/architecture.md, "One tenant's burst").
//
// Why 5, against the Service's containerConcurrency of 20 (pkg/configgen):
//   - a bursting tenant holds at most a quarter of a pod's slots, so 15 stay for the others and
//     it takes four tenants bursting at once to fill a pod;
//   - the seed client's requests of all tenants share one token bucket (KUBE_API_QPS 50, behind
//     each tenant's own, kube.TenantRateLimits), which serves its waiters in order. A reconcile
//     makes its 2 to 6 requests one after another, so a tenant with 5 reconciles in flight has at
//     most 5 requests waiting there: another tenant's request waits for at most 5 tokens (0.1 s at
//     50 QPS) where 20 would have it wait 0.4 s, at each of its requests;
//   - by Little's law 5 in flight is one tenant's 50 events a second per pod at a 0.1 s reconcile
//     (150 over max-scale's 3 pods), far above a shoot's steady rate: the bound bites on bursts
//     (a ManagedResource's objects all changed at once, a source's relist), not on normal work.
const DefaultTenantMaxInFlight = 5

// DefaultTenantLendBelow is TENANT_LEND_BELOW's default: while fewer events than this (of all
// tenants) are in flight in the process, a tenant past its share is admitted anyway, so that a
// burst of one tenant alone (a shoot's reconcile writing all its ManagedResources at once) is
// not shed while slots stand idle. The pod's containerConcurrency (20, pkg/configgen) minus this
// stays free for tenants within their share: 5, one tenant's share, so another tenant's event
// always finds a slot while a single tenant bursts.
const DefaultTenantLendBelow = 15

// tenantBusyRetryAfter is the Retry-After (in seconds) of an event shed because its tenant is
// busy: about what a handful of a tenant's reconciles take to make room.
//
// What Knative Eventing v0.50's dispatcher does with the answer (knative.dev/eventing
// pkg/kncloudevents/retries.go): SelectiveRetry retries 429, like 404, 408, 409 and 5xx, within
// the delivery's retry count (config/*/eventing.yaml: 5, exponential from 0.2 s, about 6 s in all),
// then sends the event to the dead-letter sink. Retry-After lengthens its backoff (to at most
// the delivery's retryAfterMax) only where the delivery sets retryAfterMax, which Knative accepts
// only with its experimental feature delivery-retryafter enabled (off by default; config/ does
// not set it): on a default installation the header is ignored and the backoff alone spaces the
// retries. It is sent anyway, for a Broker that honours it and for any other sender.
const tenantBusyRetryAfter = 1

// shedTenantBusy is the reason label of gardener_knative_function_shed_total for an event
// answered 429 because its tenant had TenantMaxInFlight events in flight.
const shedTenantBusy = "tenant-busy"

// tenantShare bounds the events of each tenant that a process handles at once (Options.
// TenantMaxInFlight), so that one tenant's burst leaves the pod's other slots to the others. The
// seed's own events (no tenant) share one bound of their own. An entry lives while its tenant
// has events in flight: the map is bounded by the events in flight, not by the tenants seen.
type tenantShare struct {
	max int
	// lendBelow is Options.TenantLendBelow: below this many events in flight in all, a tenant
	// past its share is admitted too.
	lendBelow int
	mu        sync.Mutex
	inFlight  map[tenant.Name]int
	total     int
}

func newTenantShare(maxInFlight, lendBelow int) *tenantShare {
	if maxInFlight <= 0 {
		return nil
	}
	return &tenantShare{max: maxInFlight, lendBelow: lendBelow, inFlight: map[tenant.Name]int{}}
}

// admit takes a slot of tn's, or says (ok false) that tn has all of its slots in flight. A nil
// share admits everything.
func (s *tenantShare) admit(tn tenant.Name) (release func(), ok bool) {
	if s == nil {
		return func() {}, true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inFlight[tn] >= s.max && s.total >= s.lendBelow {
		return nil, false
	}
	s.inFlight[tn]++
	s.total++
	var once sync.Once
	return func() { once.Do(func() { s.release(tn) }) }, true
}

func (s *tenantShare) release(tn tenant.Name) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total--
	if s.inFlight[tn] <= 1 {
		delete(s.inFlight, tn)
		return
	}
	s.inFlight[tn]--
}

// tenantBusy is an event shed because its tenant had its share in flight: answered 429 with
// Retry-After, so that the sender delivers it again later.
type tenantBusy struct {
	tenant tenant.Name
	max    int
}

func (b *tenantBusy) Error() string {
	who := "tenant " + strconv.Quote(string(b.tenant))
	if b.tenant == "" {
		who = "the seed"
	}
	return fmt.Sprintf("function busy: %s has %d events in flight (TENANT_MAX_IN_FLIGHT); retry later", who, b.max)
}

// eventTenant is the tenant an event is handled for, known from the event alone (before any
// API request), in per-seed mode: the tenant a Target event names; for a Source event, the
// tenant of its object's namespace, or of its name for a kind named after its tenant (extensions'
// Cluster); the seed's ("") for anything else. It is the tenant every key the event's mappers
// may reconcile belongs to (targets.tenantOf refuses a Target event's keys of another tenant),
// but for a Source event of the seed's that maps to a tenant's keys, which counts as the
// seed's. bounded is false outside per-seed mode (there is one tenant, and the Service's
// containerConcurrency is its bound), and for an event HandleEvent refuses before any request
// (of the garden, a Target event without a tenant, a kind not watched on its cluster): it gets
// its 4xx however busy its tenant is.
func (s *Server) eventTenant(ev Event) (tn tenant.Name, bounded bool) {
	if s.share == nil || s.targets == nil || s.targets.mode != PerSeed {
		return "", false
	}
	if ev.Cluster == Garden || (ev.Cluster == Target && ev.Tenant == "") || !s.watches(ev) {
		return "", false
	}
	if ev.Tenant != "" {
		return ev.Tenant, true
	}
	if ev.Key.Namespace != "" {
		if tenant.Valid(ev.Key.Namespace, s.targets.prefix) {
			return tenant.Name(ev.Key.Namespace), true
		}
		return "", true
	}
	for _, w := range s.fn.Watches {
		if w.Kind.NamesTenant && w.Kind.GroupKind() == ev.Kind.GroupKind() && tenant.Valid(ev.Key.Name, s.targets.prefix) {
			return tenant.Name(ev.Key.Name), true
		}
	}
	return "", true
}

// watches says that a watch of the function takes the event's kind on the event's cluster.
func (s *Server) watches(ev Event) bool {
	for _, w := range s.fn.Watches {
		if w.Kind.GroupKind() == ev.Kind.GroupKind() && s.clusterOf(w.Cluster) == s.clusterOf(ev.Cluster) {
			return true
		}
	}
	return false
}
