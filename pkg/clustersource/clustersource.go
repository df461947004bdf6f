// Package clustersource is the event source of the clusters the functions watch, in a pod of ours
// (a ContainerSource): one watcher of our own per watched resource (watcher.go), sending Knative's
// ApiServerSource events (knative.dev/eventing/pkg/adapter/apiserver/events) and configured as
// Knative's ApiServerSource adapter is (apiserver.Config, Knative's adapter environment). It
// watches one cluster (the Source, where the pod runs, or the one target of a single-target
// deployment), or every tenant of a seed, in one process: one always-on pod per seed however many
// shoots it serves, instead of one adapter pod per shoot. It used to run Knative's adapter itself
// (apiserver.NewAdapter) once per cluster; the watchers send the same events with fewer
// goroutines and without listing every object at start (watcher.go, docs/testing.md).
//
// The Source is watched this way rather than by Knative's ApiServerSource because that
// controller resolves even an empty namespace selector to the list of every namespace and writes
// it into its adapter's Deployment: each namespace created or deleted (a project, a shoot) rolls
// the adapter, and the events of that moment are lost. Here the watchers watch every namespace
// without a list, and nothing restarts them.
//
// Every event it sends carries the deployment's ceOverrides (cluster=source or cluster=target)
// and, per seed, names its tenant (the shoot's control-plane namespace) in the tenant extension,
// so that a function knows whose cluster to read. Tenants are discovered from the seed (its
// extensions.gardener.cloud Clusters) every Interval and reached with their access Secrets
// (pkg/tenant/clients), the same way the webhooks and the functions reach them: a new tenant
// starts being watched within an interval, a tenant that goes away stops, and a tenant whose
// access changed (a rotated token or CA) is watched anew, all without a restart.
package clustersource

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/cloudevents/sdk-go/v2/protocol"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"k8s.io/client-go/rest"
	"knative.dev/eventing/pkg/adapter/apiserver"
	"knative.dev/eventing/pkg/adapter/v2"
	sourcesv1 "knative.dev/eventing/pkg/apis/sources/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/clients"
)

// The variables of the source's container that hold its configurations, in the format of
// Knative's ApiServerSource adapter (apiserver.Config): the kinds watched in Resource mode, and
// the confidential kinds watched in Reference mode (Secrets: their content must not travel
// through the Broker). Knative's adapter reads its own from K_SOURCE_CONFIG.
const (
	ResourcesConfigEnv  = "K_SOURCE_CONFIG"
	ReferencesConfigEnv = "K_REFERENCES_CONFIG"
)

// WatchEnv is the variable that names the cluster a source's container watches: the Source it
// runs in, the Target (its tenants, or its one target), or the garden (GARDEN_KUBECONFIG).
const WatchEnv = "WATCH"

// Adapter is one mode's watches, configured as Knative's ContainerSource and the deployment would
// configure Knative's adapter: its environment (NAME, NAMESPACE, K_SINK, K_CE_OVERRIDES) and the
// resources watched in that mode (K_SOURCE_CONFIG, Config); a watcher runs for each of those
// resources in every cluster watched.
type Adapter struct {
	Env    adapter.EnvConfigAccessor
	Config Config
}

// Config is the configuration of Knative's ApiServerSource adapter (apiserver.Config) with what
// its format lacks: a field selector per resource (ResourceWatch). Its Resources stand in for
// the embedded ones, under the same JSON name.
type Config struct {
	apiserver.Config
	Resources []ResourceWatch `json:"resources"`
}

// ResourceWatch is a resource Knative's adapter watches (its GVR and label selector), with the
// field selector that narrows the watch on the server beside ("" for none): a function's
// Scope, e.g. a seed's ControllerInstallations in the garden.
type ResourceWatch struct {
	apiserver.ResourceWatch
	FieldSelector string `json:"fieldSelector,omitempty"`
	// Changes are the parts of an object (function.Changes) whose change the source tells of
	// each update, each as its function.ChangeAttribute; none when empty.
	Changes []string `json:"changes,omitempty"`
}

// AdapterEnvs are the modes' watches the process's environment configures, one per mode
// (ResourcesConfigEnv, ReferencesConfigEnv), read as Knative's adapter reads its own. They are
// read while the process has a single goroutine (or under the caller's lock): each is read with
// K_SOURCE_CONFIG set to its configuration, which is restored after.
func AdapterEnvs() ([]Adapter, error) {
	resources, hadResources := os.LookupEnv(ResourcesConfigEnv)
	defer func() {
		if hadResources {
			_ = os.Setenv(ResourcesConfigEnv, resources)
		} else {
			_ = os.Unsetenv(ResourcesConfigEnv)
		}
	}()
	var adapters []Adapter
	for _, config := range []string{resources, os.Getenv(ReferencesConfigEnv)} {
		if config == "" {
			continue
		}
		a := Adapter{}
		if err := json.Unmarshal([]byte(config), &a.Config); err != nil {
			return nil, fmt.Errorf("an adapter's configuration: %w", err)
		}
		for _, r := range a.Config.Resources {
			if strings.Contains(r.FieldSelector, "$(") {
				// Kubernetes expands a variable it knows; a reference left is one it did not.
				return nil, fmt.Errorf("the field selector of %s refers to a variable the container does not have: %s", r.GVR, r.FieldSelector)
			}
		}
		if !a.Config.AllNamespaces {
			// A watcher watches every namespace (sources.AdapterConfig): a configuration that
			// names namespaces would be watched wider than it says.
			return nil, fmt.Errorf("an adapter's configuration must watch all namespaces: %s", config)
		}
		if err := os.Setenv(ResourcesConfigEnv, config); err != nil {
			return nil, err
		}
		a.Env = adapter.ConstructEnvOrDie(apiserver.NewEnvConfig)
		adapters = append(adapters, a)
	}
	if len(adapters) == 0 {
		return nil, fmt.Errorf("neither %s nor %s configures a watch", ResourcesConfigEnv, ReferencesConfigEnv)
	}
	return adapters, nil
}

// Options configure a cluster source.
type Options struct {
	// Adapters are the modes' environments and configurations (NAME, NAMESPACE, K_SOURCE_CONFIG
	// with the watched resources and mode, K_SINK), as Knative's ContainerSource and the
	// deployment give them (AdapterEnvs): each of their resources is watched in every cluster
	// watched.
	Adapters []Adapter
	// Sink sends the events; its overrides set the cluster extension.
	Sink cloudevents.Client
	// Single is the one cluster watched (the Source, or the target of a single-target
	// deployment); nil serves the tenants.
	Single *rest.Config
	// Seed lists the tenants, Tenants reaches them, Prefix says which namespaces are tenants
	// (tenant.DefaultPrefix when empty).
	Seed    client.Reader
	Tenants *clients.Clients
	Prefix  string
	// Interval is how often the tenants are discovered anew; PageSize pages that LIST.
	Interval time.Duration
	PageSize int64
	Log      *zap.SugaredLogger
	Registry prometheus.Registerer
}

// Run watches the cluster(s) until ctx ends.
func Run(ctx context.Context, opts Options) error {
	m := newMetrics(opts.Registry)
	if opts.Single != nil {
		m.watched.Set(1)
		return watchCluster(ctx, opts, opts.Single, "")
	}
	if opts.Prefix == "" {
		opts.Prefix = tenant.DefaultPrefix
	}
	s := &source{opts: opts, metrics: m, running: map[tenant.Name]*watched{}}
	ticker := time.NewTicker(opts.Interval)
	defer ticker.Stop()
	for {
		s.discover(ctx)
		select {
		case <-ctx.Done():
			s.stopAll()
			return nil
		case <-ticker.C:
		}
	}
}

type source struct {
	opts    Options
	metrics *metrics
	mu      sync.Mutex
	running map[tenant.Name]*watched
	wg      sync.WaitGroup
}

// watched is one tenant's running watchers and the access they were started with.
type watched struct {
	cancel context.CancelFunc
	access *rest.Config
}

// discover lists the tenants and brings the running watchers in line: new tenants start,
// tenants gone stop, tenants whose access changed restart. A failed discovery changes nothing;
// the next interval tries again.
func (s *source) discover(ctx context.Context) {
	names, err := clients.Discover(ctx, s.opts.Seed, s.opts.Prefix, s.opts.PageSize)
	if err != nil {
		s.metrics.discoveryFailures.Inc()
		s.opts.Log.Warnw("cannot discover the tenants; trying again next interval", "error", err)
		return
	}
	present := map[tenant.Name]bool{}
	for _, t := range names {
		access, err := s.opts.Tenants.Config(ctx, t)
		if clients.IsNotEnrolled(err) {
			continue // un-enrolled between the LIST and the read of its Cluster: stopped below
		}
		present[t] = true
		if err != nil {
			// Unknown (no access Secret or token yet) or transient: looked at again next time.
			s.metrics.unreachable.Inc()
			s.opts.Log.Infow("tenant not watched (yet)", "tenant", t, "reason", err)
			continue
		}
		s.mu.Lock()
		w := s.running[t]
		s.mu.Unlock()
		if w != nil && sameAccess(w.access, access) {
			continue
		}
		if w != nil {
			s.opts.Log.Infow("tenant access changed; watching anew", "tenant", t)
			s.stop(t)
		}
		s.start(ctx, t, access)
	}
	s.mu.Lock()
	var gone []tenant.Name
	for t := range s.running {
		if !present[t] {
			gone = append(gone, t)
		}
	}
	s.mu.Unlock()
	for _, t := range gone {
		s.opts.Log.Infow("tenant gone; not watched any more", "tenant", t)
		s.stop(t)
	}
}

func (s *source) start(ctx context.Context, t tenant.Name, access *rest.Config) {
	tctx, cancel := context.WithCancel(ctx)
	s.mu.Lock()
	s.running[t] = &watched{cancel: cancel, access: access}
	s.metrics.watched.Set(float64(len(s.running)))
	s.mu.Unlock()
	s.metrics.starts.Inc()
	s.opts.Log.Infow("watching tenant", "tenant", t)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := watchCluster(tctx, s.opts, access, t); err != nil {
			s.opts.Log.Warnw("tenant's client cannot be built; it is tried again at the next discovery", "tenant", t, "error", err)
			s.mu.Lock()
			if w := s.running[t]; w != nil && w.access == access {
				delete(s.running, t)
				s.metrics.watched.Set(float64(len(s.running)))
			}
			s.mu.Unlock()
		}
	}()
}

func (s *source) stop(t tenant.Name) {
	s.mu.Lock()
	w := s.running[t]
	delete(s.running, t)
	s.metrics.watched.Set(float64(len(s.running)))
	s.mu.Unlock()
	if w != nil {
		w.cancel()
	}
}

func (s *source) stopAll() {
	s.mu.Lock()
	for _, w := range s.running {
		w.cancel()
	}
	s.running = map[tenant.Name]*watched{}
	s.mu.Unlock()
	s.wg.Wait()
}

// sameAccess compares what reaches a tenant: server, CA and token.
func sameAccess(a, b *rest.Config) bool {
	return a.Host == b.Host && a.BearerToken == b.BearerToken && a.ServerName == b.ServerName &&
		reflect.DeepEqual(a.CAData, b.CAData)
}

// watchCluster watches the cluster cfg reaches until ctx ends, or until no watcher is left (the
// cluster serves none of the resources): one watcher per resource of every mode's configuration;
// events of a tenant carry its name. It fails only when it cannot build the cluster's client; a
// watcher retries its own failures.
func watchCluster(ctx context.Context, opts Options, cfg *rest.Config, t tenant.Name) error {
	clients, err := newClusterClients(cfg)
	if err != nil {
		return err
	}
	log := opts.Log
	if t != "" {
		log = log.With("tenant", string(t))
	}
	var sink cloudevents.Client = opts.Sink
	if t != "" {
		sink = &tenantSink{Client: opts.Sink, tenant: string(t)}
	}
	var wg sync.WaitGroup
	for _, a := range opts.Adapters {
		for _, r := range a.Config.Resources {
			w := &watcher{
				res: clients.resource(r.GVR), selector: r.LabelSelector, fieldSelector: r.FieldSelector, changes: newChangeTracker(r.Changes), source: cfg.Host, name: a.Env.GetName(),
				ref: a.Config.EventMode == sourcesv1.ReferenceMode, sink: sink, log: log.With("resource", r.GVR.String()),
			}
			wg.Go(func() { w.run(ctx) })
		}
	}
	wg.Wait()
	return nil
}

// tenantSink names the tenant on every event it sends, sharing one connection pool to the sink
// for all tenants.
type tenantSink struct {
	cloudevents.Client
	tenant string
}

func (s *tenantSink) Send(ctx context.Context, event cloudevents.Event) protocol.Result {
	event.SetExtension(function.TenantExtension, s.tenant)
	return s.Client.Send(ctx, event)
}

func (s *tenantSink) Request(ctx context.Context, event cloudevents.Event) (*cloudevents.Event, protocol.Result) {
	event.SetExtension(function.TenantExtension, s.tenant)
	return s.Client.Request(ctx, event)
}

type metrics struct {
	watched                                prometheus.Gauge
	starts, unreachable, discoveryFailures prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		watched:           prometheus.NewGauge(prometheus.GaugeOpts{Name: "gardener_knative_cluster_source_tenants_watched", Help: "Targets watched."}),
		starts:            prometheus.NewCounter(prometheus.CounterOpts{Name: "gardener_knative_cluster_source_tenant_starts_total", Help: "Tenants whose watches started (new tenants, changed access, restarts)."}),
		unreachable:       prometheus.NewCounter(prometheus.CounterOpts{Name: "gardener_knative_cluster_source_tenants_unreachable_total", Help: "Discoveries of a tenant that could not be reached (not enrolled, no token yet, seed errors)."}),
		discoveryFailures: prometheus.NewCounter(prometheus.CounterOpts{Name: "gardener_knative_cluster_source_discovery_failures_total", Help: "Failed LISTs of the seed's tenants."}),
	}
	if reg != nil {
		reg.MustRegister(m.watched, m.starts, m.unreachable, m.discoveryFailures)
	}
	return m
}
