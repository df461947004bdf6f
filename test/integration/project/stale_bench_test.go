package project_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	securityv1alpha1 "github.com/gardener/gardener/pkg/apis/security/v1alpha1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/project"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

const benchProjects = 10000

func benchNamespace(i int) string { return fmt.Sprintf("garden-bench-%05d", i) }

// benchGarden is what BenchmarkStaleSweep sweeps: 10,000 Projects with their namespaces, and
// 50,000 objects that keep (or fail to keep) them in use, by the Project's index modulo 10:
//
//	0–4  3 Shoots (15,000) and a BackupEntry (5,000); a Quota each (5,000); Shoots of 0–2
//	     use a SecretBinding "sb", of 3–4 a CredentialsBinding "cb", both in their namespace
//	5    5 BackupEntries each (5,000): in use by BackupEntries
//	6    its Secret is referenced by the "sb" of Project i-6, whose Shoots use it
//	7    its Secret is referenced by the "cb" of Project i-4, whose Shoots use it
//	8    its Quota is referenced by the "sb" of Project i-7, whose Shoots use it
//	9    a Secret, referenced by bindings no Shoot uses: stale
//
// Projects 5–9 hold a Secret each (5,000) and an unused SecretBinding and CredentialsBinding
// (5,000 each) besides; with the 3,000 "sb" and 2,000 "cb" bindings that makes 8,000
// SecretBindings and 7,000 CredentialsBindings.
func benchGarden(i int) []client.Object {
	ns := benchNamespace(i)
	secretRef := func(of int) corev1.SecretReference {
		return corev1.SecretReference{Namespace: benchNamespace(of), Name: "credentials"}
	}
	credentialsRef := func(of int) corev1.ObjectReference {
		return corev1.ObjectReference{APIVersion: "v1", Kind: "Secret", Namespace: benchNamespace(of), Name: "credentials"}
	}
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
	var objs []client.Object
	switch kind := i % 10; {
	case kind <= 4:
		for s := range 3 {
			shoot := &gardencorev1beta1.Shoot{ObjectMeta: meta(fmt.Sprintf("shoot-%d", s))}
			shoot.Spec.Provider.Workers = []gardencorev1beta1.Worker{{Name: "worker", Machine: gardencorev1beta1.Machine{Type: "m5.large"}, Minimum: 1, Maximum: 3}}
			if kind <= 2 {
				shoot.Spec.SecretBindingName = ptr.To("sb")
			} else {
				shoot.Spec.CredentialsBindingName = ptr.To("cb")
			}
			objs = append(objs, shoot)
		}
		objs = append(objs,
			&gardencorev1beta1.BackupEntry{ObjectMeta: meta("entry")},
			&gardencorev1beta1.Quota{ObjectMeta: meta("quota")},
		)
		switch kind {
		case 0: // its "sb" references the Secret of Project i+6
			objs = append(objs, &gardencorev1beta1.SecretBinding{ObjectMeta: meta("sb"), SecretRef: secretRef(i + 6)})
		case 1: // its "sb" references its own Secret and the Quota of Project i+7
			objs = append(objs, &gardencorev1beta1.SecretBinding{ObjectMeta: meta("sb"), SecretRef: secretRef(i),
				Quotas: []corev1.ObjectReference{{Namespace: benchNamespace(i + 7), Name: "quota"}}})
		case 2:
			objs = append(objs, &gardencorev1beta1.SecretBinding{ObjectMeta: meta("sb"), SecretRef: secretRef(i)})
		case 3: // its "cb" references the Secret of Project i+4
			objs = append(objs, &securityv1alpha1.CredentialsBinding{ObjectMeta: meta("cb"), CredentialsRef: credentialsRef(i + 4)})
		case 4:
			objs = append(objs, &securityv1alpha1.CredentialsBinding{ObjectMeta: meta("cb"), CredentialsRef: credentialsRef(i)})
		}
	default:
		if kind == 5 {
			for e := range 5 {
				objs = append(objs, &gardencorev1beta1.BackupEntry{ObjectMeta: meta(fmt.Sprintf("entry-%d", e))})
			}
		}
		objs = append(objs,
			&corev1.Secret{ObjectMeta: meta("credentials")},
			&gardencorev1beta1.SecretBinding{ObjectMeta: meta("sb-unused"), SecretRef: secretRef(i)},
			&securityv1alpha1.CredentialsBinding{ObjectMeta: meta("cb-unused"), CredentialsRef: credentialsRef(i)},
		)
	}
	return objs
}

// BenchmarkStaleSweep measures one stale sweep over 10,000 Projects and 50,000 related objects
// (see benchGarden) against a real kube-apiserver, through HTTP. It reports the API requests of
// a sweep by verb (LISTs are one per kind and page, whatever the number of Projects; a sweep
// that changes nothing writes nothing), the writes of the first sweep (which marks the 1,000
// unused Projects stale), and the heap the sweep holds at its peak above what the process held
// before. Creating the garden takes a minute or two; the objects stay in the package's control
// plane (the Projects are removed at the end, so that later sweeps do not see them).
func BenchmarkStaleSweep(b *testing.B) {
	ctx := context.Background()
	h := newStaleHarness(b, gardenerDefaults)
	createBenchGarden(b)
	b.Cleanup(func() {
		_ = env.Client.DeleteAllOf(ctx, &gardencorev1beta1.Project{}, client.MatchingLabels{"bench": "stale"})
	})

	h.ResetRequests()
	h.Sweep(project.StaleSweep) // also warms up discovery
	firstWrites := h.Requests("patch") + h.Requests("delete")
	stale := 0
	projects := &gardencorev1beta1.ProjectList{}
	require.NoError(b, env.Client.List(ctx, projects, client.MatchingLabels{"bench": "stale"}))
	for _, p := range projects.Items {
		if p.Status.StaleSinceTimestamp != nil {
			stale++
		}
	}
	require.Equal(b, benchProjects/10, stale, "Projects marked stale")

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	peak := watchPeakHeap()
	h.ResetRequests()
	b.ResetTimer()
	for b.Loop() {
		h.Sweep(project.StaleSweep)
	}
	b.StopTimer()
	perSweep := func(verb string) float64 { return float64(h.Requests(verb)) / float64(b.N) }
	b.ReportMetric(perSweep("list"), "lists/sweep")
	b.ReportMetric(perSweep("get"), "gets/sweep")
	b.ReportMetric(perSweep("patch")+perSweep("delete")+perSweep("create"), "writes/sweep")
	b.ReportMetric(float64(firstWrites), "writes/first-sweep")
	b.ReportMetric(float64(peak()-before.HeapAlloc)/(1<<20), "peak-heap-MiB")
}

// watchPeakHeap samples the heap until the returned function is called, which returns the
// highest allocation seen.
func watchPeakHeap() func() uint64 {
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > peak.Load() {
				peak.Store(m.HeapAlloc)
			}
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	})
	return func() uint64 {
		close(done)
		wg.Wait()
		return peak.Load()
	}
}

// createBenchGarden creates benchGarden's Projects (Ready, with their namespaces) and related
// objects, in parallel.
func createBenchGarden(b *testing.B) {
	ctx := context.Background()
	require.NoError(b, testenv.Parallel(benchProjects, func(i int) error { return createBenchProject(ctx, i) }))
}

func createBenchProject(ctx context.Context, i int) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNamespace(i)}}
	p := &gardencorev1beta1.Project{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-%05d", i), Labels: map[string]string{"bench": "stale"}}}
	p.Spec.Namespace = ptr.To(ns.Name)
	for _, obj := range append([]client.Object{ns, p}, benchGarden(i)...) {
		if err := env.Client.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
		}
	}
	p.Status.Phase = gardencorev1beta1.ProjectReady
	return env.Client.Status().Update(ctx, p)
}
