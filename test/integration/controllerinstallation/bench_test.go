package controllerinstallation_test

import (
	"fmt"
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// BenchmarkInstall measures one installation from the in-process registry (pull secret, tag
// resolved, chart pulled, namespace created, Helm install of a one-ConfigMap chart, conditions),
// through HTTP against the garden and seed control planes, and then a second reconcile of it
// with nothing changed. The function's discovery of the seed is warmed up first (once per
// process). Reported: wall time, requests per cluster and verb, registry requests.
func BenchmarkInstall(b *testing.B) {
	f := newFixture(b)
	ref, _ := f.pushChart(b, "provider-bench", "0.1.0")
	secret := f.pullSecret(b, true)
	helm := func() gardencorev1beta1.HelmControllerDeployment {
		return gardencorev1beta1.HelmControllerDeployment{OCIRepository: &gardencorev1beta1.OCIRepository{Ref: ptr.To(ref), PullSecretRef: &corev1.LocalObjectReference{Name: secret}}}
	}
	f.Send("add", f.chain(b, "bench-warmup", helm()))

	var install, unchanged time.Duration
	var installGarden, installSeed, unchangedGarden, unchangedSeed map[string]int
	var installRegistry, unchangedRegistry int64
	i := 0
	for b.Loop() {
		ci := f.chain(b, fmt.Sprintf("bench-%d", i), helm())
		i++
		registryBefore := f.registry.Requests()
		start := time.Now()
		installGarden, installSeed = f.measureBoth(func() { f.Send("add", ci) })
		install += time.Since(start)
		installRegistry += f.registry.Requests() - registryBefore

		registryBefore = f.registry.Requests()
		start = time.Now()
		unchangedGarden, unchangedSeed = f.measureBoth(func() { f.Send("update", get(b, ci)) })
		unchanged += time.Since(start)
		unchangedRegistry += f.registry.Requests() - registryBefore
		require.Zero(b, writes(unchangedGarden)+writes(unchangedSeed))
	}
	n := float64(i)
	b.ReportMetric(float64(install.Milliseconds())/n, "install-ms")
	b.ReportMetric(float64(unchanged.Milliseconds())/n, "unchanged-ms")
	report := func(prefix string, counts map[string]int) {
		for verb, c := range counts {
			b.ReportMetric(float64(c), prefix+"-"+verb)
		}
	}
	report("install-garden", installGarden)
	report("install-seed", installSeed)
	report("unchanged-garden", unchangedGarden)
	report("unchanged-seed", unchangedSeed)
	b.ReportMetric(float64(installRegistry)/n, "install-registry-requests")
	b.ReportMetric(float64(unchangedRegistry)/n, "unchanged-registry-requests")
}
