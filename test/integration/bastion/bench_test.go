package bastion_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	operationsv1alpha1 "github.com/gardener/gardener/pkg/apis/operations/v1alpha1"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gardener-knative/gardener-knative/pkg/controller/bastion"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

// BenchmarkResync10000Shoots50Bastions measures the resync sweep on a garden of 10,000 Shoots and
// 50 Bastions, against a real kube-apiserver, through HTTP: API requests and response bytes per
// sweep and the heap in use after it. "shoots-listed" is the design before runtime v2, whose
// sweep listed every Shoot in full; "shoots-read" is today's declaration, which reads only the
// Shoots its Bastions name.
func BenchmarkResync10000Shoots50Bastions(b *testing.B) {
	listed := *bastion.Function
	listed.Sweeps = []function.Sweep{listed.Sweeps[0]}
	listed.Sweeps[0].Related = []function.List{{Kind: kinds.Shoot}}
	for _, variant := range []struct {
		name string
		fn   *function.Function
	}{{"shoots-listed", &listed}, {"shoots-read", bastion.Function}} {
		b.Run(variant.name, func(b *testing.B) { benchmarkResync(b, variant.fn) })
	}
}

func benchmarkResync(b *testing.B, fn *function.Function) {
	f := &fixture{Harness: functiontest.New(b, env, fn, functiontest.WithConfig(&bastion.Config{MaxLifetime: 24 * time.Hour}))}
	f.ns = env.Namespace(b)
	ctx := context.Background()
	require.NoError(b, testenv.Parallel(10000, func(i int) error {
		s := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("shoot-%05d", i), Namespace: f.ns}}
		s.Spec.SeedName = ptr.To("seed-a")
		s.Spec.Provider.Workers = []gardencorev1beta1.Worker{{Name: "worker", Machine: gardencorev1beta1.Machine{Type: "m5.large"}, Minimum: 1, Maximum: 3}}
		return env.Client.Create(ctx, s)
	}))
	for i := range 50 {
		nb := &operationsv1alpha1.Bastion{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bastion-%02d", i), Namespace: f.ns}}
		nb.Spec.ShootRef.Name = fmt.Sprintf("shoot-%05d", i*200)
		nb.Spec.SeedName = ptr.To("seed-a")
		require.NoError(b, env.Client.Create(ctx, nb))
		nb.Status.ExpirationTimestamp = &metav1.Time{Time: f.Clock.Now().Add(time.Hour)}
		require.NoError(b, env.Client.Status().Update(ctx, nb))
	}
	f.Sweep("resync") // warm up discovery
	f.ResetRequests()
	bytesBefore := f.Counter.Bytes()
	b.ResetTimer()
	for b.Loop() {
		f.Sweep("resync")
	}
	b.StopTimer()
	runtime.GC()
	var mem runtime.MemStats
	runtime.ReadMemStats(&mem)
	b.ReportMetric(float64(f.Requests(""))/float64(b.N), "requests/sweep")
	b.ReportMetric(float64(f.Requests("list"))/float64(b.N), "lists/sweep")
	b.ReportMetric(float64(f.Counter.Bytes()-bytesBefore)/float64(b.N), "bytes-read/sweep")
	b.ReportMetric(float64(mem.HeapInuse)/(1<<20), "heap-MiB")
}

// BenchmarkNoopBastionEvent measures one Bastion creation event that changes nothing (a
// Bastion's updates are filtered without a request).
func BenchmarkNoopBastionEvent(b *testing.B) {
	f := newFixture(b)
	hour := time.Hour
	f.shoot(b, "shoot", "seed-a")
	bastion := f.bastion(b, "bastion", "shoot", "seed-a", &hour)
	event := f.Event("add", bastion)
	f.Send("add", bastion) // warm up discovery
	f.ResetRequests()
	b.ResetTimer()
	for b.Loop() {
		if code, body := f.Post(event); code != 200 {
			b.Fatal(code, body)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(f.Requests(""))/float64(b.N), "requests/event")
}
