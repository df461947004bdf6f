package seed_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gardener-knative/gardener-knative/pkg/controller/seed/lifecycle"
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
	work := make(chan [2]int)
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for job := range work {
				if _, err := createShoot(ns, fmt.Sprintf("shoot-%d-%d", job[0], job[1]), names[job[0]]); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	for i := range seeds {
		for j := range shootsPerSeed {
			work <- [2]int{i, j}
		}
	}
	close(work)
	wg.Wait()
	close(errs)
	require.NoError(b, <-errs)
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
