package function

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/kelseyhightower/envconfig"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gardener-knative/gardener-knative/pkg/scheme"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/clients"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/tenanttest"
)

const (
	tenantA = "shoot--p--a"
	tenantB = "shoot--p--b"
)

// gatedHandler reconciles Bastions: a tenant's reconciles wait while its gate is closed (held),
// and every reconcile is recorded with its tenant; busy, when set, is how long each one takes.
type gatedHandler struct {
	mu      sync.Mutex
	gates   map[tenant.Name]chan struct{}
	started map[tenant.Name]int
	done    []string
	busy    time.Duration
}

func newGatedHandler() *gatedHandler {
	return &gatedHandler{gates: map[tenant.Name]chan struct{}{}, started: map[tenant.Name]int{}}
}

// hold closes tn's gate: its reconciles wait until open.
func (g *gatedHandler) hold(tn tenant.Name) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gates[tn] = make(chan struct{})
}

func (g *gatedHandler) open(tn tenant.Name) {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.gates[tn])
	delete(g.gates, tn)
}

func (g *gatedHandler) Reconcile(ctx context.Context, req Request) error {
	tn := tenant.From(ctx)
	g.mu.Lock()
	g.started[tn]++
	gate := g.gates[tn]
	g.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if g.busy > 0 {
		time.Sleep(g.busy)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.done = append(g.done, req.Key.String()+"@"+string(tn))
	return nil
}

func (g *gatedHandler) startedFor(tn tenant.Name) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.started[tn]
}

func (g *gatedHandler) reconciled() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.done...)
}

// perSeedServer serves a function that reconciles Bastions (a namespaced Source kind, as a
// ManagedResource) per seed, for the enrolled tenants A and B; a Target watch of ConfigMaps maps
// each to the Bastion its "owner" annotation names (as a shoot's objects map to their
// ManagedResource).
func perSeedServer(t testing.TB, h Handler, opts Options) (*Server, *prometheus.Registry) {
	t.Helper()
	fn := &Function{
		Name:        "test",
		Reconcilers: []Reconciler{{Name: "main", For: bastionKind, New: func(Deps) (Handler, error) { return h, nil }}},
		Watches: []Watch{
			{Kind: bastionKind, Reconciler: "main"},
			{Kind: configMapKind, Cluster: Target, Reconciler: "main", Map: func(_ context.Context, _ client.Reader, ev Event) ([]Key, error) {
				ns, name, _ := cutKey(ev.Object.GetAnnotations()["owner"])
				return []Key{{Namespace: ns, Name: name}}, nil
			}},
		},
	}
	seed := tenanttest.Enrolled(t, "https://127.0.0.1:1", tenanttest.CA(t), tenantA, tenantB)
	tenants, err := clients.New(clients.Options{Seed: seed, Scheme: scheme.Gardener})
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	env := Env{
		Source: fake.NewClientBuilder().WithScheme(scheme.Gardener).Build(), Tenants: tenants,
		Clock: clock.RealClock{}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Registry: reg,
	}
	s, err := NewServer(fn, env, opts)
	require.NoError(t, err)
	return s, reg
}

func bastionEvent(namespace, name string) cloudevents.Event {
	e := cloudevents.NewEvent()
	e.SetID(namespace + "/" + name)
	e.SetSource("https://10.0.0.1:443")
	e.SetType(ResourceUpdateEventType)
	_ = e.SetData(cloudevents.ApplicationJSON, []byte(`{"apiVersion":"operations.gardener.cloud/v1alpha1","kind":"Bastion","metadata":{"namespace":"`+namespace+`","name":"`+name+`"}}`))
	return e
}

// binaryRequest is e as the Broker POSTs it, in binary mode.
func binaryRequest(e cloudevents.Event) *http.Request {
	req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(e.Data()))
	req.Header.Set("Ce-Specversion", "1.0")
	req.Header.Set("Ce-Id", e.ID())
	req.Header.Set("Ce-Source", e.Source())
	req.Header.Set("Ce-Type", e.Type())
	for name, value := range e.Extensions() {
		req.Header.Set("Ce-"+name, fmt.Sprint(value))
	}
	req.Header.Set("Content-Type", "application/json")
	return req
}

func serveEvent(s *Server, e cloudevents.Event) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	s.ServeHTTP(w, binaryRequest(e))
	return w
}

// Per seed, a tenant with TenantMaxInFlight events in flight has its further events shed at
// once with 429 and Retry-After, while another tenant's events, and the seed's, are served.
func TestTenantBurstIsShedWhileOtherTenantsAreServed(t *testing.T) {
	const bound = 3
	h := newGatedHandler()
	s, reg := perSeedServer(t, h, Options{EventTimeout: 10 * time.Second, ConflictRetries: 1, TenantMaxInFlight: bound})
	h.hold(tenantA)

	// Tenant A's reconciles hang: its first events take every one of its slots.
	var admitted sync.WaitGroup
	codes := make(chan int, bound)
	for i := range bound {
		admitted.Add(1)
		go func() {
			defer admitted.Done()
			codes <- serveEvent(s, bastionEvent(tenantA, fmt.Sprintf("held-%d", i))).Code
		}()
	}
	require.Eventually(t, func() bool { return h.startedFor(tenantA) == bound }, 5*time.Second, time.Millisecond)

	// A's flood: every further event is answered at once, 429 with Retry-After, nothing reconciled.
	const flood = 200
	start := time.Now()
	for i := range flood {
		w := serveEvent(s, bastionEvent(tenantA, fmt.Sprintf("flood-%d", i)))
		require.Equal(t, http.StatusTooManyRequests, w.Code, w.Body.String())
		assert.Equal(t, "1", w.Header().Get("Retry-After"))
		assert.Contains(t, w.Body.String(), `tenant "shoot--p--a" has 3 events in flight (TENANT_MAX_IN_FLIGHT)`)
	}
	t.Logf("%d events of A shed in %s", flood, time.Since(start))
	assert.Equal(t, bound, h.startedFor(tenantA), "no shed event reaches the reconciler")
	assert.Equal(t, float64(flood), testutil.ToFloat64(s.metrics.shed.WithLabelValues(shedTenantBusy)))
	assert.Equal(t, 1, testutil.CollectAndCount(reg, "gardener_knative_function_shed_total"))

	// Tenant B is reconciled at once, with A still held, as often as it sends.
	for i := range 2 * bound {
		start := time.Now()
		w := serveEvent(s, bastionEvent(tenantB, fmt.Sprintf("b-%d", i)))
		require.Equal(t, http.StatusOK, w.Code, w.Body.String())
		assert.Less(t, time.Since(start), time.Second)
	}
	assert.Len(t, h.reconciled(), 2*bound, "B's events reconciled while A's hang")
	for _, r := range h.reconciled() {
		assert.True(t, strings.HasSuffix(r, "@"+tenantB), r)
	}

	// The seed's own events are a tenant of their own (not a tenant's object: not served here,
	// acknowledged), and an event that is not valid keeps its 4xx however busy its tenant.
	assert.Equal(t, http.StatusOK, serveEvent(s, bastionEvent("garden", "x")).Code)
	bad := bastionEvent(tenantA, "x")
	_ = bad.SetData(cloudevents.ApplicationJSON, []byte(`{"apiVersion":"operations.gardener.cloud/v1alpha1","kind":"Bastion","metadata":`))
	assert.Equal(t, http.StatusBadRequest, serveEvent(s, bad).Code, "malformed")
	unwatched := bastionEvent(tenantA, "x")
	_ = unwatched.SetData(cloudevents.ApplicationJSON, []byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"namespace":"shoot--p--a","name":"x"}}`))
	assert.Equal(t, http.StatusUnprocessableEntity, serveEvent(s, unwatched).Code, "a kind not watched")
	noTenant := configMapEvent(t, tenantA+"/x", map[string]string{ClusterExtension: "target"})
	assert.Equal(t, http.StatusBadRequest, serveEvent(s, noTenant).Code, "a target event without a tenant")
	// A's objects in its shoot are A's events too: shed alike.
	ofShoot := configMapEvent(t, tenantA+"/x", map[string]string{ClusterExtension: "target", TenantExtension: tenantA})
	assert.Equal(t, http.StatusTooManyRequests, serveEvent(s, ofShoot).Code, "a target event of A")

	// Once A's reconciles end, its slots are free again and nothing is held for it.
	h.open(tenantA)
	admitted.Wait()
	close(codes)
	for code := range codes {
		assert.Equal(t, http.StatusOK, code)
	}
	assert.Equal(t, http.StatusOK, serveEvent(s, bastionEvent(tenantA, "after")).Code)
	s.share.mu.Lock()
	assert.Empty(t, s.share.inFlight, "no entry outlives its tenant's events")
	s.share.mu.Unlock()
	assert.Equal(t, float64(flood+1), testutil.ToFloat64(s.metrics.shed.WithLabelValues(shedTenantBusy)))
}

// A Target event is its tenant's (the tenant extension), whatever namespace its object is in;
// outside per seed nothing is bounded.
func TestEventTenantOfTargetEventsAndOtherModes(t *testing.T) {
	s, _ := perSeedServer(t, newGatedHandler(), Options{EventTimeout: time.Second, TenantMaxInFlight: 1})
	ev := Event{Cluster: Target, Tenant: tenantB, Kind: configMapKind.GroupVersionKind, Key: Key{Namespace: "kube-system", Name: "x"}}
	tn, bounded := s.eventTenant(ev)
	assert.True(t, bounded)
	assert.Equal(t, tenant.Name(tenantB), tn)

	tn, bounded = s.eventTenant(Event{Cluster: Source, Kind: bastionKind.GroupVersionKind, Key: Key{Namespace: "garden", Name: "x"}})
	assert.True(t, bounded)
	assert.Equal(t, tenant.Name(""), tn, "the seed's own keys are one tenant")

	s.targets.mode = SeedMode
	_, bounded = s.eventTenant(Event{Cluster: Source, Kind: bastionKind.GroupVersionKind, Key: Key{Namespace: tenantA, Name: "x"}})
	assert.False(t, bounded, "one tenant: containerConcurrency bounds it")

	_, err := NewServer(s.fn, Env{Source: fake.NewClientBuilder().WithScheme(scheme.Gardener).Build(), Clock: clock.RealClock{},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Registry: prometheus.NewRegistry()}, Options{TenantMaxInFlight: -1})
	assert.ErrorContains(t, err, "TENANT_MAX_IN_FLIGHT")
}

func TestTenantMaxInFlightDefault(t *testing.T) {
	var cfg Config
	require.NoError(t, envconfig.Process("", &cfg))
	assert.Equal(t, DefaultTenantMaxInFlight, cfg.Options().TenantMaxInFlight)
	assert.Equal(t, DefaultTenantLendBelow, cfg.Options().TenantLendBelow)
	assert.Less(t, DefaultTenantMaxInFlight, 20, "well below the Services' containerConcurrency")
	// What is never lent is at least one tenant's share: another tenant's event finds a slot
	// while one tenant bursts alone.
	assert.GreaterOrEqual(t, 20-DefaultTenantLendBelow, DefaultTenantMaxInFlight)
}

// Idle slots are lent: a tenant alone past its share is admitted while fewer than TenantLendBelow
// events are in flight in all; past that it is shed, and another tenant within its share is
// still admitted.
func TestIdleSlotsAreLentToABurstingTenant(t *testing.T) {
	share := newTenantShare(2, 4)
	var releases []func()
	for i := range 4 {
		release, ok := share.admit(tenantA)
		require.True(t, ok, "A's event %d: %d in flight in all, below 4", i, i)
		releases = append(releases, release)
	}
	_, ok := share.admit(tenantA)
	assert.False(t, ok, "A past its share with 4 in flight: shed")
	releaseB, ok := share.admit(tenantB)
	assert.True(t, ok, "B within its share is admitted however many are in flight")
	releaseB()
	releases[0]()
	releases[0]() // a release runs once
	release, ok := share.admit(tenantA)
	assert.True(t, ok, "a slot freed: lent again")
	release()
	for _, r := range releases[1:] {
		r()
	}
	assert.Empty(t, share.inFlight)
	assert.Zero(t, share.total)
}
