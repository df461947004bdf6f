package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gardener-knative/gardener-knative/hack/internal/benchkit"
)

// peerEnv names Gardener's gardener-resource-manager binary for the smoke run (`make test`
// builds it with hack/peers.sh).
const peerEnv = "GARDENER_RESOURCE_MANAGER_BIN"

// The benchmark re-executes its binary as our event plumbing: under `go test` that is this one.
func TestMain(m *testing.M) {
	if benchkit.ServedAsPlumbing() {
		os.Exit(0)
	}
	// As main: nothing of envtest's logs is wanted.
	log.SetLogger(logr.Discard())
	os.Exit(m.Run())
}

// A smoke run at N = 3 with a small workload: both sides reach a steady state and every figure
// is produced. It checks the harness, not the figures: no timing is asserted.
func TestBothSidesReachASteadyStateAndAreMeasured(t *testing.T) {
	peer := os.Getenv(peerEnv)
	require.NotEmpty(t, peer, "%s is not set: run the tests with `make test`, or export %s=$(hack/peers.sh)", peerEnv, peerEnv)
	var out bytes.Buffer
	opts := options{sizes: []int{3}, managedResources: 4, period: minPeriod, edits: 5, peer: peer, dir: t.TempDir()}
	results, err := bench(context.Background(), opts, &out)
	require.NoError(t, err, out.String())
	require.Len(t, results, 1)
	for name, side := range map[string]sideResult{"ours": results[0].ours, "Gardener's": results[0].peer} {
		assert.Positive(t, side.processes, name)
		assert.Positive(t, side.fullSync, name)
		assert.Positive(t, side.window.MeanRSS, name)
		assert.Positive(t, side.window.PeakRSS, name)
		assert.Positive(t, side.peaks, name)
		assert.Positive(t, total(side.shootRequests), "%s: requests to the shoots in a sync period (AlwaysUpdate writes every object)", name)
		assert.Len(t, side.drift, opts.edits, "%s: every edit reverted", name)
	}
	assert.Equal(t, len(perSeedFunctions)+3, results[0].ours.processes, "the per-seed functions, the webhook server, the source and the Broker")
	assert.Equal(t, 3, results[0].peer.processes, "one resource manager per shoot")
	heaps, err := filepath.Glob(filepath.Join(opts.dir, "n003", "ours-*.heap"))
	require.NoError(t, err)
	assert.Len(t, heaps, len(perSeedFunctions)+2, "a heap profile of each function, the source and the Broker at steady state")
	for _, name := range profiledProcesses() {
		assert.Positive(t, results[0].ours.live[name], "%s's live heap", name)
	}
	for _, name := range append(servingProcesses(), sourceProcess, brokerProcess) {
		assert.Positive(t, results[0].ours.window.Anon[name], "%s's anonymous RSS", name)
		assert.Less(t, results[0].ours.window.Anon[name], results[0].ours.window.RSS[name], "%s: RssAnon leaves out the binary's pages", name)
	}
	assert.Contains(t, out.String(), "anonymous RSS (RssAnon")
	assert.Contains(t, out.String(), "live heap right after the window")
	for _, side := range []string{"ours", "Gardener"} {
		assert.Contains(t, out.String(), fmt.Sprintf("3  %s ", side), "a row of %s in:\n%s", side, out.String())
	}
	assert.True(t, strings.Contains(out.String(), "a fit needs two sizes"), "one size: no fit, and the table says so")
}

func TestFitAndExtrapolation(t *testing.T) {
	l, err := benchkit.Fit([]int{10, 25, 50}, []float64{120, 150, 200})
	require.NoError(t, err)
	assert.InDelta(t, 2, l.B, 0.01)
	assert.InDelta(t, 100, l.A, 0.5)
	assert.InDelta(t, 600, l.At(250), 3)
	_, err = benchkit.Fit([]int{3}, []float64{1})
	assert.Error(t, err, "one size")
}

func TestPercentileIsNearestRank(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 100; i++ {
		ds = append(ds, time.Duration(101-i)*time.Millisecond)
	}
	assert.Equal(t, 50*time.Millisecond, benchkit.Percentile(ds, 50))
	assert.Equal(t, 99*time.Millisecond, benchkit.Percentile(ds, 99))
	assert.Equal(t, 100*time.Millisecond, benchkit.Percentile(ds, 100))
	assert.Zero(t, benchkit.Percentile(nil, 50))
}

// A run too large for the machine's inotify bound stops before it starts anything, naming the
// setting; one within it, or a machine without that bound, goes on.
func TestInotifyBoundIsCheckedBeforeTheRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "max_user_instances")
	require.NoError(t, os.WriteFile(path, []byte("128\n"), 0o644))
	assert.NoError(t, checkInotifyInstances(path, 3), "the smoke run's 3 shoots")
	err := checkInotifyInstances(path, 50)
	require.Error(t, err, "50 shoots, where a run ran out")
	assert.Contains(t, err.Error(), "sysctl -w fs.inotify.max_user_instances=")
	require.NoError(t, os.WriteFile(path, []byte("1024\n"), 0o644))
	assert.NoError(t, checkInotifyInstances(path, 50))
	assert.NoError(t, checkInotifyInstances(filepath.Join(t.TempDir(), "absent"), 50), "no such bound")
}
