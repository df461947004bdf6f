package main

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gardener-knative/gardener-knative/hack/internal/benchkit"
)

// peerEnv names Gardener's gardener-controller-manager binary for the smoke run (`make test`
// builds it with hack/peers.sh).
const peerEnv = "GARDENER_CONTROLLER_MANAGER_BIN"

// The benchmark re-executes its binary as our event plumbing: under `go test` that is this one.
func TestMain(m *testing.M) {
	if benchkit.ServedAsPlumbing() {
		os.Exit(0)
	}
	log.SetLogger(logr.Discard())
	os.Exit(m.Run())
}

// A smoke run at N = 50 with a short warm-up and window: both sides run on the garden under churn
// and every figure is produced. It checks the harness, not the figures: no timing is asserted.
func TestBothSidesRunAndAreMeasured(t *testing.T) {
	peer := os.Getenv(peerEnv)
	require.NotEmpty(t, peer, "%s is not set: run the tests with `make test`, or export %s=$(hack/peers.sh gardener-controller-manager)", peerEnv, peerEnv)
	var out bytes.Buffer
	opts := options{sizes: []int{50}, warmup: 10 * time.Second, window: 15 * time.Second, peer: peer, dir: t.TempDir(),
		churn: churnRates{statusEvery: time.Minute, specPerHour: 300, leaseEvery: 10 * time.Second, seedStatusEvery: time.Minute},
		sides: map[string]bool{"ours": true, "gardener": true}}
	results, err := bench(context.Background(), opts, &out)
	require.NoError(t, err, out.String())
	require.Len(t, results, 1)
	r := results[0]
	assert.Greater(t, r.served["Shoot"], 10<<10, "Shoots of real size (over 10 KiB as served)")
	assert.Positive(t, r.churn, "the churn wrote")
	for name, side := range map[string]sideResult{"ours": r.ours, "Gardener's": r.peer} {
		assert.Positive(t, side.processes, name)
		assert.Positive(t, side.window.MeanRSS, name)
		assert.Positive(t, sum(side.startup).Total().Bytes, "%s read the garden at start", name)
		assert.Positive(t, side.perHour.requests, "%s's requests per hour", name)
		assert.Positive(t, side.perHour.bytes, "%s's bytes per hour", name)
		for process, kills := range side.oomKills {
			assert.Zero(t, kills, "%s: %s killed for its memory limit", name, process)
		}
	}
	assert.Equal(t, len(runtimeFunctions)+2, r.ours.processes, "every runtime function, the source and the Broker")
	long, err := schedules()
	require.NoError(t, err)
	fired := map[string]bool{}
	for _, l := range r.ours.long {
		fired[l.sweep.name] = true
		assert.Positive(t, l.reads.Total().Requests, "%s read the garden when fired", l.sweep.name)
	}
	for _, sw := range long {
		assert.Equal(t, sw.period >= longPeriod, fired[sw.name], "%s (every %s) is fired once if its period is an hour or more", sw.name, sw.period)
	}
	assert.Positive(t, r.ours.events["shoot"].events, "the shoot function was delivered the Shoots' events")
	assert.Contains(t, out.String(), "N=50, Gardener, per process")
}
