package function

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gardener-knative/gardener-knative/pkg/scheme"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/clients"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/tenanttest"
)

var configMapKind = NewKind(corev1.SchemeGroupVersion, "ConfigMap", "configmaps")

// tenantRecorder records, per reconcile, the key and the context's tenant.
type tenantRecorder struct {
	mu   sync.Mutex
	seen []string
}

func (r *tenantRecorder) Reconcile(ctx context.Context, req Request) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, req.Key.String()+"@"+string(tenant.From(ctx)))
	return nil
}

func (r *tenantRecorder) recorded() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}

// targetFunction reconciles Bastions (a namespaced Source kind, as a ManagedResource is) and
// watches ConfigMaps on the Target, mapping each to the Bastion its "owner" annotation names.
func targetFunction(rec *tenantRecorder) *Function {
	return &Function{
		Name:        "test",
		Reconcilers: []Reconciler{{Name: "main", For: bastionKind, New: func(Deps) (Handler, error) { return rec, nil }}},
		Watches: []Watch{
			{Kind: bastionKind, Reconciler: "main"},
			{Kind: configMapKind, Cluster: Target, Reconciler: "main", Map: func(_ context.Context, _ client.Reader, ev Event) ([]Key, error) {
				ns, name, _ := cutKey(ev.Object.GetAnnotations()["owner"])
				return []Key{{Namespace: ns, Name: name}}, nil
			}},
		},
	}
}

func cutKey(s string) (string, string, bool) {
	for i := range s {
		if s[i] == '/' {
			return s[:i], s[i+1:], true
		}
	}
	return "", s, false
}

func serveTargets(t *testing.T, fn *Function, env Env) *httptest.Server {
	t.Helper()
	env.Source = fake.NewClientBuilder().WithScheme(scheme.Gardener).Build()
	env.Clock, env.Log, env.Registry = clock.RealClock{}, slog.New(slog.NewTextHandler(io.Discard, nil)), prometheus.NewRegistry()
	s, err := NewServer(fn, env, Options{EventTimeout: 5 * time.Second, SweepTimeout: 5 * time.Second, SweepConcurrency: 2, ListPageSize: 10, ConflictRetries: 1})
	require.NoError(t, err)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv
}

func configMapEvent(t *testing.T, owner string, extensions map[string]string) cloudevents.Event {
	t.Helper()
	e := event(t, ResourceUpdateEventType, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":"kube-system","name":"cm","annotations":{"owner":"`+owner+`"}}}`)
	for k, v := range extensions {
		e.SetExtension(k, v)
	}
	return e
}

func post(t *testing.T, srv *httptest.Server, e cloudevents.Event) (int, string) {
	t.Helper()
	return postBinary(t, srv.URL, e)
}

// In seed mode the Source is the Target: its events say cluster=source and feed the watches
// declared on the Target.
func TestSeedModeServesTargetWatchesFromSourceEvents(t *testing.T) {
	rec := &tenantRecorder{}
	srv := serveTargets(t, targetFunction(rec), Env{})
	code, body := post(t, srv, configMapEvent(t, "shoot--p--a/b", map[string]string{ClusterExtension: "source"}))
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, []string{"shoot--p--a/b@"}, rec.recorded(), "no tenants in seed mode")
}

// Per seed, every reconcile is for the tenant of its key's namespace, reached through the
// seed's access Secrets, and nothing an event or a mapper says can make it act for another.
func TestPerSeedModeScopesEveryReconcileToItsTenant(t *testing.T) {
	rec := &tenantRecorder{}
	seed := tenanttest.Enrolled(t, "https://127.0.0.1:1", tenanttest.CA(t), "shoot--p--a", "shoot--p--b")
	tenants, err := clients.New(clients.Options{Seed: seed, Scheme: scheme.Gardener})
	require.NoError(t, err)
	srv := serveTargets(t, targetFunction(rec), Env{Tenants: tenants})
	target := map[string]string{ClusterExtension: "target", TenantExtension: "shoot--p--a"}

	code, body := post(t, srv, configMapEvent(t, "shoot--p--a/b", target))
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, []string{"shoot--p--a/b@shoot--p--a"}, rec.recorded())

	code, body = post(t, srv, configMapEvent(t, "shoot--p--b/b", target))
	assert.Equal(t, http.StatusOK, code, "refused terminally: %s", body)
	assert.Len(t, rec.recorded(), 1, "tenant A's object never makes the function act for tenant B")

	code, body = post(t, srv, event(t, ResourceUpdateEventType, `{"apiVersion":"operations.gardener.cloud/v1alpha1","kind":"Bastion","metadata":{"namespace":"shoot--p--b","name":"x"}}`))
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, "shoot--p--b/x@shoot--p--b", rec.recorded()[1], "a Source object is for the tenant of its namespace")

	for name, ev := range map[string]cloudevents.Event{
		"outside any tenant":      event(t, ResourceUpdateEventType, `{"apiVersion":"operations.gardener.cloud/v1alpha1","kind":"Bastion","metadata":{"namespace":"garden","name":"x"}}`),
		"an unknown tenant":       event(t, ResourceUpdateEventType, `{"apiVersion":"operations.gardener.cloud/v1alpha1","kind":"Bastion","metadata":{"namespace":"shoot--p--c","name":"x"}}`),
		"an unknown event tenant": configMapEvent(t, "shoot--p--c/b", map[string]string{ClusterExtension: "target", TenantExtension: "shoot--p--c"}),
	} {
		code, body := post(t, srv, ev)
		assert.Equal(t, http.StatusOK, code, "%s: terminal, acknowledged: %s", name, body)
	}
	assert.Len(t, rec.recorded(), 2, "nothing reconciled for keys without a reachable tenant")

	code, _ = post(t, srv, configMapEvent(t, "shoot--p--a/b", map[string]string{ClusterExtension: "target"}))
	assert.Equal(t, http.StatusBadRequest, code, "a target event without a tenant is malformed per seed")
	code, _ = post(t, srv, configMapEvent(t, "shoot--p--a/b", map[string]string{ClusterExtension: "source", TenantExtension: "shoot--p--a"}))
	assert.Equal(t, http.StatusBadRequest, code, "a tenant names a target cluster")
	code, _ = post(t, srv, configMapEvent(t, "shoot--p--a/b", map[string]string{ClusterExtension: "target", TenantExtension: "Not_A_Namespace"}))
	assert.Equal(t, http.StatusBadRequest, code)
}

// Per seed, an object of a kind named after its tenant (extensions' Cluster) is reconciled for
// the tenant of its name, and a Target event of another tenant cannot map to it.
func TestPerSeedModeReconcilesAKindThatNamesItsTenantForThatTenant(t *testing.T) {
	rec := &tenantRecorder{}
	seed := tenanttest.Enrolled(t, "https://127.0.0.1:1", tenanttest.CA(t), "shoot--p--a", "shoot--p--b")
	tenants, err := clients.New(clients.Options{Seed: seed, Scheme: scheme.Gardener})
	require.NoError(t, err)
	clusterKind := NewClusterKind(extensionsv1alpha1.SchemeGroupVersion, "Cluster", "clusters").AsNamingTenants()
	fn := &Function{
		Name:        "test",
		Reconcilers: []Reconciler{{Name: "main", For: clusterKind, New: func(Deps) (Handler, error) { return rec, nil }}},
		Watches: []Watch{
			{Kind: clusterKind, Reconciler: "main"},
			{Kind: configMapKind, Cluster: Target, Reconciler: "main", Map: func(_ context.Context, _ client.Reader, ev Event) ([]Key, error) {
				return []Key{{Name: ev.Object.GetAnnotations()["owner"]}}, nil
			}},
		},
	}
	srv := serveTargets(t, fn, Env{Tenants: tenants})
	cluster := func(name string) cloudevents.Event {
		return event(t, ResourceUpdateEventType, `{"apiVersion":"extensions.gardener.cloud/v1alpha1","kind":"Cluster","metadata":{"name":"`+name+`"}}`)
	}

	code, body := post(t, srv, cluster("shoot--p--a"))
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, []string{"/shoot--p--a@shoot--p--a"}, rec.recorded(), "a Cluster is its name's tenant's")

	code, body = post(t, srv, cluster("garden"))
	require.Equal(t, http.StatusOK, code, body)
	code, body = post(t, srv, configMapEvent(t, "shoot--p--b", map[string]string{ClusterExtension: "target", TenantExtension: "shoot--p--a"}))
	require.Equal(t, http.StatusOK, code, "refused terminally: %s", body)
	assert.Len(t, rec.recorded(), 1, "no tenant's Cluster is not served, and tenant A's event never reaches tenant B's Cluster")

	code, body = post(t, srv, configMapEvent(t, "shoot--p--a", map[string]string{ClusterExtension: "target", TenantExtension: "shoot--p--a"}))
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, []string{"/shoot--p--a@shoot--p--a", "/shoot--p--a@shoot--p--a"}, rec.recorded())
}

// A single-target function refuses tenant events: it serves one target.
func TestSingleTargetRefusesTenantEvents(t *testing.T) {
	rec := &tenantRecorder{}
	srv := serveTargets(t, targetFunction(rec), Env{Target: fake.NewClientBuilder().WithScheme(scheme.Gardener).Build()})
	code, _ := post(t, srv, configMapEvent(t, "shoot--p--a/b", map[string]string{ClusterExtension: "target", TenantExtension: "shoot--p--a"}))
	assert.Equal(t, http.StatusBadRequest, code)
	code, body := post(t, srv, configMapEvent(t, "garden/b", map[string]string{ClusterExtension: "target"}))
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, []string{"garden/b@"}, rec.recorded())
}

// A function that works on the garden, apart from the cluster it runs in, takes the garden's
// events as its Source's and those of its part's own source (cluster=source, the cluster it runs
// in) as its Target's: a Source kind from there is not its concern.
func TestOnTheGardenThePartsOwnSourceIsTheTarget(t *testing.T) {
	rec := &tenantRecorder{}
	fn := targetFunction(rec)
	fn.WorksOnGarden = true
	srv := serveTargets(t, fn, Env{Target: fake.NewClientBuilder().WithScheme(scheme.Gardener).Build()})
	code, body := post(t, srv, configMapEvent(t, "garden/b", map[string]string{ClusterExtension: "source"}))
	require.Equal(t, http.StatusOK, code, body)
	bastion := event(t, RefUpdateEventType, `{"apiVersion":"operations.gardener.cloud/v1alpha1","kind":"Bastion","name":"a","namespace":"garden"}`)
	bastion.SetExtension(ClusterExtension, "garden")
	code, body = post(t, srv, bastion)
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, []string{"garden/b@", "garden/a@"}, rec.recorded())

	bastion.SetExtension(ClusterExtension, "source")
	code, body = post(t, srv, bastion)
	assert.Equal(t, http.StatusUnprocessableEntity, code, "where it runs, Bastions are not watched: %s", body)
	assert.Len(t, rec.recorded(), 2)
}

func TestScheduleEvery(t *testing.T) {
	for d, want := range map[time.Duration]string{
		2 * time.Second:        "*/2 * * * * *",
		7 * time.Second:        "*/6 * * * * *", // never less often than configured
		30 * time.Second:       "*/30 * * * * *",
		time.Minute:            "0 */1 * * * *",
		10 * time.Minute:       "0 */10 * * * *",
		time.Hour:              "0 0 */1 * * *",
		5 * time.Hour:          "0 0 */4 * * *",
		48 * time.Hour:         "0 0 0 * * *",
		500 * time.Millisecond: "*/1 * * * * *",
	} {
		assert.Equal(t, want, ScheduleEvery(d), d.String())
	}
}
