package managedresource_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/eventing/pkg/adapter/v2"
	sourcesv1 "knative.dev/eventing/pkg/apis/sources/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/bootstrap"
	"github.com/gardener-knative/gardener-knative/pkg/clustersource"
	"github.com/gardener-knative/gardener-knative/pkg/controller/garbagecollector"
	"github.com/gardener-knative/gardener-knative/pkg/controller/health"
	"github.com/gardener-knative/gardener-knative/pkg/controller/managedresource"
	"github.com/gardener-knative/gardener-knative/pkg/controller/tokenrequestor"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
	"github.com/gardener-knative/gardener-knative/pkg/localsources"
	"github.com/gardener-knative/gardener-knative/pkg/scheme"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/clients"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
	"github.com/gardener-knative/gardener-knative/sources"
)

// manyObjects is a manifest of n objects: ConfigMaps, and every tenth a Service and every
// twentieth a Deployment.
func manyObjects(namespace string, n int) string {
	var parts []string
	for i := range n {
		switch {
		case i%20 == 19:
			parts = append(parts, strings.ReplaceAll(strings.ReplaceAll(deployment(namespace), "name: web\n", fmt.Sprintf("name: web-%d\n", i)), "app: web", fmt.Sprintf("app: web-%d", i)))
		case i%10 == 9:
			parts = append(parts, fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata:\n  name: svc-%d\n  namespace: %s\nspec:\n  ports:\n  - port: 80\n", i, namespace))
		default:
			parts = append(parts, configMap(namespace, fmt.Sprintf("cm-%d", i), fmt.Sprintf("value-%d", i)))
		}
	}
	return docs(parts...)
}

// BenchmarkManagedResource200Objects applies one ManagedResource of 200 objects (180
// ConfigMaps, 10 Services, 10 Deployments) into the target on its creation event, then
// reconciles it with nothing changed, by its sync sweep (the periodic no-op; its status events are
// filtered), after the first sync, which patches each Deployment once without a change (see
// docs/functions/managedresource.md). Reported: wall time and requests by cluster and verb.
func BenchmarkManagedResource200Objects(b *testing.B) {
	h := singleTarget(b)
	var apply, noop time.Duration
	var applySource, applyTarget, noopSource, noopTarget map[string]int
	i := 0
	for b.Loop() {
		ns := namespace(b, shootA)
		_, mr := manifest(b, ns, fmt.Sprintf("big-%d", i), map[string]string{"objects.yaml": manyObjects(ns, 200)})
		i++
		start := time.Now()
		applySource, applyTarget = measureBoth(h, func() { h.Send("add", mr) })
		apply += time.Since(start)
		h.Sweep("sync") // the first no-op: the Deployments' defaults, patched once
		start = time.Now()
		noopSource, noopTarget = measureBoth(h, func() { h.Sweep("sync") })
		noop += time.Since(start)
		require.Zero(b, noopSource["patch"]+noopTarget["patch"]+noopTarget["create"]+noopTarget["delete"], "a no-op reconcile writes nothing")
	}
	n := float64(i)
	b.ReportMetric(float64(apply.Milliseconds())/n, "apply-ms")
	b.ReportMetric(float64(noop.Milliseconds())/n, "noop-ms")
	for prefix, counts := range map[string]map[string]int{"apply-source": applySource, "apply-target": applyTarget, "noop-source": noopSource, "noop-target": noopTarget} {
		for verb, c := range counts {
			b.ReportMetric(float64(c), prefix+"-"+verb)
		}
	}
}

func measureBoth(h *functiontest.Harness, do func()) (source, target map[string]int) {
	verbs := []string{"get", "list", "create", "patch", "delete"}
	before := map[string]int{}
	for _, v := range verbs {
		before["s"+v], before["t"+v] = h.Requests(v), h.TargetCounter.Total(v)
	}
	do()
	source, target = map[string]int{}, map[string]int{}
	for _, v := range verbs {
		if d := h.Requests(v) - before["s"+v]; d > 0 {
			source[v] = d
		}
		if d := h.TargetCounter.Total(v) - before["t"+v]; d > 0 {
			target[v] = d
		}
	}
	return source, target
}

// BenchmarkTargetSourcePerSeed runs the target source (its watchers once per tenant) for
// 100 tenants of one seed, all enrolled against the shoot control plane shootB (tenants share a
// kube-apiserver here to save memory: each has its own Cluster, access Secrets, client, REST
// configuration and watches, as on a real seed), watching the Target kinds of the registry's
// functions. Reported: the live heap, goroutines and stack memory per tenant once all watch, the
// discovery's LISTs per interval, and the always-on pods (one, whatever the number of tenants).
// BENCH_HEAP_PROFILE=file writes the heap's profile there while every tenant watches, and the
// goroutines' to file.goroutines.
func BenchmarkTargetSourcePerSeed(b *testing.B) {
	const tenants = 100
	if os.Getenv("BENCH_HEAP_PROFILE") != "" {
		runtime.MemProfileRate = 4096 // before the tenants allocate: a sample every 4 KiB
	}
	ctx := context.Background()
	names := make([]tenant.Name, tenants)
	for i := range names {
		names[i] = tenant.Name(fmt.Sprintf("shoot--bench--t%03d", i))
		if err := seed.Client.Get(ctx, client.ObjectKey{Name: string(names[i])}, &corev1.Namespace{}); err == nil {
			continue // enrolled by an earlier round
		}
		require.NoError(b, testenv.Enroll(ctx, seed.Client, names[i], shootB))
	}
	var sent sync.Map
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if e, err := binding.ToEvent(r.Context(), cehttp.NewMessageFromHttpRequest(r)); err == nil {
			sent.Store(e.ID(), true)
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	defer sink.Close()
	envs, ce := targetSource(b, sink.URL)
	seedClient, counter, err := seed.CountingClient()
	require.NoError(b, err)
	var perTenant, goroutinesPerTenant, stackPerTenant float64
	for b.Loop() {
		access, err := clients.New(clients.Options{Seed: seedClient, Scheme: scheme.Gardener, SharedMapper: seedClient.RESTMapper(), ConfigureREST: bootstrap.Unthrottled})
		require.NoError(b, err)
		runCtx, cancel := context.WithCancel(ctx)
		before, goroutinesBefore, stackBefore := liveHeap(), runtime.NumGoroutine(), stackInUse()
		done := make(chan error, 1)
		go func() {
			done <- clustersource.Run(runCtx, clustersource.Options{
				Adapters: envs, Sink: ce, Seed: seedClient, Tenants: access, Prefix: "shoot--bench--",
				Interval: time.Second, PageSize: 500, Log: zap.NewNop().Sugar(),
			})
		}()
		// Every tenant watches once a change in the shared shoot reaches the sink once per tenant.
		probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", GenerateName: "probe-", Labels: map[string]string{"resources.gardener.cloud/managed-by": "gardener"}}}
		deadline := time.Now().Add(2 * time.Minute)
		for time.Now().Before(deadline) {
			time.Sleep(2 * time.Second)
			counted := 0
			sent.Range(func(any, any) bool { counted++; return true })
			if counted >= tenants {
				break
			}
			if probe.Name == "" {
				require.NoError(b, shootB.Client.Create(ctx, probe))
			} else {
				probe.Data = map[string]string{"t": time.Now().String()}
				require.NoError(b, shootB.Client.Update(ctx, probe))
			}
		}
		after := liveHeap()
		perTenant = float64(after-before) / tenants
		// Goroutines' stacks are not in the heap: each watch runs three (the watcher's, its
		// stream's decoder and its HTTP/2 stream).
		goroutinesPerTenant = float64(runtime.NumGoroutine()-goroutinesBefore) / tenants
		stackPerTenant = float64(stackInUse()-stackBefore) / tenants
		if path := os.Getenv("BENCH_HEAP_PROFILE"); path != "" {
			writeProfile(b, "heap", path) // where the tenants' heap is, while they watch
			writeProfile(b, "goroutine", path+".goroutines")
		}
		counter.Reset()
		time.Sleep(3 * time.Second)
		b.ReportMetric(float64(counter.Total("list"))/3, "seed-lists-per-interval")
		cancel()
		require.NoError(b, <-done)
		if probe.Name != "" {
			require.NoError(b, shootB.Client.Delete(ctx, probe))
		}
	}
	b.ReportMetric(perTenant/1024, "KiB-per-tenant")
	b.ReportMetric(goroutinesPerTenant, "goroutines-per-tenant")
	b.ReportMetric(stackPerTenant/1024, "stack-KiB-per-tenant")
	b.ReportMetric(1, "always-on-pods")
}

// writeProfile writes the named runtime profile to path: the heap's in pprof's format, the
// goroutines' as text, their stacks grouped (debug 1).
func writeProfile(b *testing.B, name, path string) {
	b.Helper()
	f, err := os.Create(path)
	require.NoError(b, err)
	defer f.Close()
	debug := 0
	if name == "goroutine" {
		debug = 1
	}
	require.NoError(b, pprof.Lookup(name).WriteTo(f, debug))
}

// stackInUse is the memory of the goroutines' stacks.
func stackInUse() int64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.StackInuse)
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkTargetEventLatency measures, per seed, from a change of a managed object in a
// tenant's shoot to the function's answer of the event the target source sent for it (the
// manual edit reverted): p50 and p99 over the loop's edits.
func BenchmarkTargetEventLatency(b *testing.B) {
	ctx := context.Background()
	h := functiontest.New(b, seed, managedresource.Function, functiontest.WithTenants(), functiontest.WithConfig(config(b)))
	ns := targetNamespace(b)
	name := "latency-" + ns
	_, mr := manifest(b, string(tenantA), name, map[string]string{"objects.yaml": configMap(ns, "watched", "a")})
	h.Send("add", mr)

	answered := make(chan time.Time, 1024)
	relay := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The Broker's Trigger in front of the function, reduced to what the latency is about:
		// the function answers the target's event.
		e, err := binding.ToEvent(r.Context(), cehttp.NewMessageFromHttpRequest(r))
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		code, _ := h.Post(*e)
		if bytes.Contains(e.Data(), []byte(`"edited"`)) {
			answered <- time.Now() // the edit's event, not the revert's
		}
		w.WriteHeader(code)
	}))
	defer relay.Close()
	envs, ce := targetSource(b, relay.URL)
	seedClient, _, err := seed.CountingClient()
	require.NoError(b, err)
	access, err := clients.New(clients.Options{Seed: seedClient, Scheme: scheme.Gardener, SharedMapper: seedClient.RESTMapper(), ConfigureREST: bootstrap.Unthrottled})
	require.NoError(b, err)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_ = clustersource.Run(runCtx, clustersource.Options{Adapters: envs, Sink: ce, Seed: seedClient, Tenants: access, Prefix: "shoot--p--", Interval: time.Second, PageSize: 500, Log: zap.NewNop().Sugar()})
	}()
	time.Sleep(3 * time.Second) // the watches start

	var latencies []time.Duration
	for b.Loop() {
		cm := &corev1.ConfigMap{}
		require.NoError(b, shootA.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "watched"}, cm))
		cm.Data["key"] = "edited"
		start := time.Now()
		require.NoError(b, shootA.Client.Update(ctx, cm))
		select {
		case at := <-answered:
			latencies = append(latencies, at.Sub(start))
		case <-time.After(30 * time.Second):
			b.Fatal("the edit's event was not answered within 30s")
		}
	}
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	b.ReportMetric(float64(latencies[len(latencies)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(latencies[len(latencies)*99/100].Microseconds())/1000, "p99-ms")
}

// targetSource is the registry's GRM functions' target source: its modes' settings
// (clustersource.Adapter) for the sink, and a client of the sink.
func targetSource(b *testing.B, sink string) ([]clustersource.Adapter, cloudevents.Client) {
	b.Helper()
	objs, err := sources.Objects([]*function.Function{managedresource.Function, health.Function, garbagecollector.Function})
	require.NoError(b, err)
	for _, o := range objs {
		if cs, ok := o.(*sourcesv1.ContainerSource); ok && cs.Name == sources.SourceName(function.Target) {
			envs, err := localsources.AdapterEnvs(cs, sink, nil)
			require.NoError(b, err)
			ce, err := adapter.NewClient(adapter.ClientConfig{Env: envs[0].Env})
			require.NoError(b, err)
			return envs, ce
		}
	}
	b.Fatal("the GRM functions watch their targets: a target source")
	return nil, nil
}

// BenchmarkTokenRequestorSweep1000 is the renewal sweep over 1,000 token requestor Secrets with
// nothing due: its requests (a constant number of LISTs, no write) and time.
func BenchmarkTokenRequestorSweep1000(b *testing.B) {
	ctx := context.Background()
	h := functiontest.New(b, seed, tokenrequestor.Function, functiontest.WithTarget(shootA), functiontest.WithConfig(&tokenrequestor.Config{Enabled: true}))
	ns := seed.Namespace(b)
	renew := h.Clock.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	require.NoError(b, testenv.Parallel(1000, func(i int) error {
		return seed.Client.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("token-%04d", i),
				Labels: map[string]string{"resources.gardener.cloud/purpose": "token-requestor", "resources.gardener.cloud/class": "shoot"},
				Annotations: map[string]string{
					"serviceaccount.resources.gardener.cloud/name": fmt.Sprintf("sa-%04d", i), "serviceaccount.resources.gardener.cloud/namespace": "default",
					"serviceaccount.resources.gardener.cloud/token-renew-timestamp": renew,
				}},
			Data: map[string][]byte{"token": []byte("a-token")},
		})
	}))
	var requests map[string]int
	for b.Loop() {
		h.TargetCounter.Reset()
		requests = h.Measure(func() { h.Sweep("renew") })
		require.Zero(b, h.TargetCounter.Total(""), "nothing due: the targets are not asked")
		require.Zero(b, requests["patch"]+requests["create"]+requests["update"])
	}
	for verb, n := range requests {
		b.ReportMetric(float64(n), "source-"+verb)
	}
}

// BenchmarkTokenRequestorSweepPerSeed is the renewal sweep as config/ deploys it, per seed with
// its own RBAC (Secrets only in the enrolled tenants' namespaces): 100 tenants with 10 token
// requestor Secrets each, nothing due. One LIST per tenant, since the function may list no
// namespace but an enrolled tenant's.
func BenchmarkTokenRequestorSweepPerSeed(b *testing.B) {
	const tenants, perTenant = 100, 10
	ctx := context.Background()
	names := make([]tenant.Name, tenants)
	for i := range names {
		names[i] = tenant.Name(fmt.Sprintf("shoot--bench--t%03d", i))
		if err := seed.Client.Get(ctx, client.ObjectKey{Name: string(names[i])}, &corev1.Namespace{}); err == nil {
			continue // enrolled by an earlier benchmark or round
		}
		require.NoError(b, testenv.Enroll(ctx, seed.Client, names[i], shootB))
	}
	h := functiontest.New(b, seed, tokenrequestor.Function, functiontest.AsFunction(), functiontest.WithTenants(), functiontest.WithConfig(&tokenrequestor.Config{Enabled: true}))
	renew := h.Clock.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	require.NoError(b, testenv.Parallel(tenants*perTenant, func(i int) error {
		err := seed.Client.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: string(names[i/perTenant]), Name: fmt.Sprintf("token-%02d", i%perTenant),
				Labels: map[string]string{"resources.gardener.cloud/purpose": "token-requestor", "resources.gardener.cloud/class": "shoot"},
				Annotations: map[string]string{
					"serviceaccount.resources.gardener.cloud/name": fmt.Sprintf("sa-%02d", i%perTenant), "serviceaccount.resources.gardener.cloud/namespace": "default",
					"serviceaccount.resources.gardener.cloud/token-renew-timestamp": renew,
				}},
			Data: map[string][]byte{"token": []byte("a-token")},
		})
		return client.IgnoreAlreadyExists(err)
	}))
	var requests map[string]int
	for b.Loop() {
		h.TargetCounter.Reset()
		requests = h.Measure(func() { h.Sweep("renew") })
		require.Zero(b, h.TargetCounter.Total(""), "nothing due: the targets are not asked")
		require.Zero(b, requests["patch"]+requests["create"]+requests["update"])
	}
	for verb, n := range requests {
		b.ReportMetric(float64(n), "source-"+verb)
	}
}
