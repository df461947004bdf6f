package multitenant_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/clients"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/tenanttest"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubernetesscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/bootstrap"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/projectedtokenmount"
)

var benchServiceAccount sync.Once

// ensureBenchServiceAccount creates kube-system/bench in shoot A, opted out of automount.
func ensureBenchServiceAccount(b *testing.B) {
	benchServiceAccount.Do(func() {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: "bench"}, AutomountServiceAccountToken: ptrTo(false)}
		require.NoError(b, client.IgnoreAlreadyExists(shootA.env.Client.Create(context.Background(), sa)))
	})
}

// benchAdmission sends projected-token-mount AdmissionReviews for a pod whose ServiceAccount
// opts out of automount (one ServiceAccount GET in shoot A per request) to tenant A, as its
// kube-apiserver does, and reports p50 and p99; before each request, prepare runs untimed.
func benchAdmission(b *testing.B, prepare func()) {
	ensureBenchServiceAccount(b)
	c := serverClient(b)
	body := admissionReviewBody(b, "bench")
	path := tenantPath(shootA.tenant, projectedtokenmount.Path)
	var out admissionv1.AdmissionReview
	review(b, c, path, body, &out) // a kept-alive connection to the server, as the kube-apiserver has
	var latencies []time.Duration
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		prepare()
		b.StartTimer()
		start := time.Now()
		review(b, c, path, body, &out)
		latencies = append(latencies, time.Since(start))
		if out.Response == nil || !out.Response.Allowed || len(out.Response.Patch) == 0 {
			b.Fatalf("not mounted: %+v", out.Response)
		}
	}
	slices.Sort(latencies)
	b.ReportMetric(float64(latencies[len(latencies)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(latencies[len(latencies)*99/100].Microseconds())/1000, "p99-ms")
}

// A warm tenant: its client is cached, its connection to the shoot's kube-apiserver open.
func BenchmarkWarmTenant(b *testing.B) { benchAdmission(b, func() {}) }

// A cold tenant: every request first builds the tenant's client (three GETs in the seed:
// Cluster, kubeconfig and access Secret), discovers the shoot's API and connects to it.
func BenchmarkColdTenant(b *testing.B) { benchAdmission(b, func() { tenants.Forget(shootA.tenant) }) }

// BenchmarkMemoryPerCachedTenant builds the clients of 50 tenants (all reaching shoot A, each
// with its own token, transport and REST mapper) and reads one ServiceAccount through each,
// then reports the live heap they hold per tenant.
func BenchmarkMemoryPerCachedTenant(b *testing.B) {
	const count = 50
	ctx := context.Background()
	ensureBenchServiceAccount(b)
	access := &corev1.Secret{}
	require.NoError(b, seed.Client.Get(ctx, client.ObjectKey{Namespace: string(shootA.tenant), Name: tenant.DefaultAccessSecret}, access))
	kubeconfig, err := testenv.GenericTokenKubeconfig("bench", shootA.env.Config)
	require.NoError(b, err)
	names := make([]tenant.Name, count)
	for i := range names {
		names[i] = tenant.Name(fmt.Sprintf("shoot--bench--t%d", i))
		ns := string(names[i])
		if err := seed.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); client.IgnoreAlreadyExists(err) != nil {
			b.Fatal(err)
		}
		// The Cluster as gardenlet writes it, holding B's Shoot (a tainted system pool: tolerations
		// among the settings kept).
		cluster, err := tenanttest.Cluster(names[i], "generic-token-kubeconfig-bench", shootB.object)
		require.NoError(b, err)
		for _, obj := range []client.Object{
			cluster,
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "generic-token-kubeconfig-bench"}, Data: map[string][]byte{"kubeconfig": kubeconfig}},
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tenant.DefaultAccessSecret}, Data: access.Data},
		} {
			if err := seed.Client.Create(ctx, obj); client.IgnoreAlreadyExists(err) != nil {
				b.Fatal(err)
			}
		}
	}
	seedReader, err := client.New(rest.CopyConfig(seed.Config), client.Options{Scheme: kubernetesscheme.Scheme})
	require.NoError(b, err)

	for name, shared := range map[string]meta.RESTMapper{"own-discovery": nil, "shared-builtin-mapper": seedReader.RESTMapper()} {
		b.Run(name, func(b *testing.B) {
			var perTenant float64
			for b.Loop() {
				tenantClients, err := clients.New(clients.Options{Seed: seedReader, Scheme: kubernetesscheme.Scheme, SharedMapper: shared, ConfigureREST: bootstrap.Unthrottled})
				require.NoError(b, err)
				before := liveHeap()
				for _, t := range names {
					sa := &corev1.ServiceAccount{}
					require.NoError(b, clients.NewTenantsOnly(tenantClients, seedReader).Get(tenant.With(ctx, t), client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: "bench"}, sa))
				}
				after := liveHeap()
				runtime.KeepAlive(tenantClients)
				perTenant = float64(after-before) / count
			}
			b.ReportMetric(perTenant/1024, "KiB/tenant")
		})
	}
}

// liveHeap is the heap in use after a collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
