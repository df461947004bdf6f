package seed_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gardener-knative/gardener-knative/pkg/controller/seed/lifecycle"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

// BenchmarkLifecycleTick measures the lifecycle tick over 1,000 seeds whose gardenlets renew
// their Leases and 10,000 Shoots, with nothing to change: requests by verb and wall time.
// TestHealthyTickCost asserts the request budget on a smaller landscape.
func BenchmarkLifecycleTick(b *testing.B) {
	const seeds, shootsPerSeed = 1000, 10
	h := newHarness(b)
	ns := env.Namespace(b)
	names := make([]string, seeds)
	for i := range seeds {
		s := newSeed(b, gardenletReady(start))
		renewLease(b, s.Name, start)
		names[i] = s.Name
	}
	// Shoots in parallel: 20,000 requests one by one would dominate the benchmark's set-up.
	require.NoError(b, testenv.Parallel(seeds*shootsPerSeed, func(k int) error {
		i, j := k/shootsPerSeed, k%shootsPerSeed
		_, err := createShoot(ns, fmt.Sprintf("shoot-%d-%d", i, j), names[i])
		return err
	}))
	h.Clock.Step(20 * time.Second)

	counts := map[string]int{}
	var elapsed time.Duration
	b.ResetTimer()
	for range b.N {
		began := time.Now()
		for verb, n := range h.Measure(func() { h.Sweep(lifecycle.ReconcilerName) }) {
			counts[verb] += n
		}
		elapsed += time.Since(began)
	}
	b.StopTimer()
	total := 0
	for _, verb := range []string{"list", "get", "create", "patch", "update", "delete"} {
		b.ReportMetric(float64(counts[verb])/float64(b.N), verb+"/tick")
		total += counts[verb]
	}
	b.ReportMetric(float64(total)/float64(b.N), "requests/tick")
	b.ReportMetric(float64(elapsed.Milliseconds())/float64(b.N), "ms/tick")
}
