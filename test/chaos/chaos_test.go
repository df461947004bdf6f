// Package chaos runs the whole local landscape (every function as a process, the real cluster
// sources and Knative's PingSource runner) through faults between the sources and the Broker, in
// its processes and in its cluster sources, drives the same script of creates, updates and
// deletes through every function in each run, and compares the state of every object after one
// sweep period with a fault-free run of the script (`make chaos`; docs/testing.md).
package chaos

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math/rand"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gardener-knative/gardener-knative/functions"
	"github.com/gardener-knative/gardener-knative/pkg/landscape"
	"github.com/gardener-knative/gardener-knative/pkg/landscape/samples"
	"github.com/gardener-knative/gardener-knative/pkg/localsources"
	"github.com/gardener-knative/gardener-knative/sources"
	"github.com/go-logr/logr"
)

// The script's timeline, from the samples' creation: the updates and deletes come once every
// sweep has run after the creation (so that a deletion does not race a function's first
// reconciliation, whose outcome Gardener freezes once an object is on its way out: a
// CloudProfile's status), the faults end faultsLast later, but not before faultsEnd. Every run's
// snapshot is taken before snapshotBy, before the samples' first timed change: the seed sample's
// gardenlet falls silent at its creation and its condition turns Unknown monitorPeriod later (the
// next, a Kubernetes version's expiry, comes 2 min after the creation).
const (
	sweepSchedule = "*/2 * * * * *"
	faultsLast    = 8 * time.Second
	faultsEnd     = 22 * time.Second
	// monitorPeriod is the seed function's here, not make run's 40 s: a run slowed by its faults
	// on two CPUs needs more than 38 s to settle (the duplicates' and all faults' runs did).
	monitorPeriod = 100 * time.Second
	snapshotBy    = monitorPeriod - 5*time.Second
	// maxSettleRounds bounds the sweep rounds after the first that a run may take to settle;
	// settleRound bounds one.
	maxSettleRounds = 3
	settleRound     = 4 * time.Second
)

// knownDivergent are divergences found by this suite and not fixed yet: debt, reported in every
// run and not failed. (The managedseedset function's second replica while the first was pending,
// found here, is fixed: docs/functions/managedseedset.md.)
var knownDivergent = map[string]string{}

// registry is the address of every run's chart registry.
var registry string

// binDir holds the function binaries, linked by the first run for all.
var binDir string

// scenario is one run's faults.
type scenario struct {
	// name names its subtest; what, its row of the report.
	name, what string
	faults     localsources.Faults
	// restartSources restarts the cluster sources twice while the faults last.
	restartSources bool
	// killMidSweep SIGKILLs each function once while it is sweeping, and starts it again.
	killMidSweep bool
	// replicas of every function behind its URL.
	replicas int
}

var scenarios = []scenario{
	{name: "control", what: "none (a second fault-free run: the comparison's own noise)"},
	{name: "drop", what: "drop 30 %", faults: localsources.Faults{Drop: 0.3}},
	{name: "duplicate", what: "duplicate up to 3 times", faults: localsources.Faults{MaxDuplicates: 3}},
	{name: "reorder", what: "reorder within 2 s", faults: localsources.Faults{Reorder: 2 * time.Second}},
	{name: "delay", what: "delay up to 5 s", faults: localsources.Faults{Delay: 5 * time.Second}},
	{name: "source-restarts", what: "restart the cluster sources twice", restartSources: true},
	{name: "sigkill-mid-sweep", what: "SIGKILL each function mid-sweep, then start it", killMidSweep: true},
	{name: "two-replicas", what: "two replicas of every function", replicas: 2},
	{name: "all", what: "all combined", faults: localsources.Faults{Drop: 0.3, MaxDuplicates: 3, Reorder: 2 * time.Second, Delay: 5 * time.Second},
		restartSources: true, killMidSweep: true, replicas: 2},
}

func TestMain(m *testing.M) {
	// client-go logs through klog, envtest's clients through controller-runtime.
	klog.SetOutput(io.Discard)
	klog.LogToStderr(false)
	ctrllog.SetLogger(logr.Discard())
	os.Exit(m.Run())
}

// TestWholeLandscapeConvergesUnderFaults is issue 16's event chaos: every function, fed by
// the real cluster sources through a fault-injecting relay in front of the Broker, ends where a
// fault-free run of the same script ends.
func TestWholeLandscapeConvergesUnderFaults(t *testing.T) {
	if os.Getenv("CHAOS") == "" {
		t.Skip("the whole landscape under faults takes minutes: `make chaos` runs it (CHAOS=1)")
	}
	seed := time.Now().UnixNano()
	if s := os.Getenv("CHAOS_SEED"); s != "" {
		var err error
		seed, err = strconv.ParseInt(s, 10, 64)
		require.NoError(t, err, "CHAOS_SEED")
	}
	t.Logf("fault schedules seeded with %d (CHAOS_SEED=%d repeats the random choices)", seed, seed)

	// Every run's chart registry listens on the same port: the samples name it, and so do the
	// hashes of the installations' values.
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	registry = listener.Addr().String()
	require.NoError(t, listener.Close())
	binDir = t.TempDir()

	baseline := run(t, scenario{name: "fault-free"}, seed)
	require.Empty(t, baseline.incomplete, "the fault-free run shows every function's samples complete")
	require.False(t, baseline.late, "the fault-free run's snapshot comes before the samples' timed change (%s): nothing can be compared with it; the machine is too slow for this schedule", snapshotBy)
	var report []string
	for i, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			if sc.name == "control" && os.Getenv("CHAOS_CONTROL") == "0" {
				// .ci/run's choice, for its time budget: noise in the comparison would show as
				// divergences of the fault runs too; the control run only tells it apart.
				t.Skip("CHAOS_CONTROL=0: no second fault-free run")
			}
			got := run(t, sc, seed+int64(i)+1)
			if got.late {
				// Not a divergence the faults caused: the run was too slow to be compared.
				t.Errorf("not compared: the snapshot came after the samples' timed change (%s)", snapshotBy)
				report = append(report, fmt.Sprintf("| %s | not compared (late) | | | %d | %s |", sc.what, got.deadLettered, got.faultsDone))
				return
			}
			compared, diffs := divergence(baseline.snapshot, got.snapshot)
			known := 0
			for _, d := range diffs {
				key, _, _ := strings.Cut(d, ":")
				if reason, ok := knownDivergent[strings.TrimSuffix(key, " (-fault-free +this run)")]; ok {
					known++
					t.Logf("diverged, known (%s): %s", reason, d)
					continue
				}
				t.Errorf("diverged: %s", d)
			}
			report = append(report, fmt.Sprintf("| %s | %d | %d | %d | %d | %s |", sc.what, compared, len(diffs)-known, known, got.deadLettered, got.faultsDone))
		})
	}
	t.Logf("objects compared with the fault-free run (%d objects):\n| faults | objects compared | diverged | diverged, known | dead-lettered | what the faults did |\n|---|---:|---:|---:|---:|---|\n%s",
		len(baseline.snapshot), strings.Join(report, "\n"))
}

// outcome is one run's end.
type outcome struct {
	snapshot     snapshot
	deadLettered int64
	faultsDone   string
	// incomplete are the live lines of make run not complete at the snapshot.
	incomplete []string
	// late says the snapshot came after snapshotBy, when the samples' timed change (the seed's
	// condition turning Unknown) may have happened: it cannot be compared with one taken before.
	late bool
}

// settings are make run's settings of the functions, with the seed function's monitor periods
// (the shoots' five times the seeds', as Gardener's defaults) set from monitorPeriod.
func settings() map[string][]string {
	env := maps.Clone(landscape.Settings)
	env["seed"] = append(slices.Clone(env["seed"]),
		"SEED_MONITOR_PERIOD="+monitorPeriod.String(), "SEED_SHOOT_MONITOR_PERIOD="+(5*monitorPeriod).String())
	return env
}

// run brings up a landscape, drives the script through it with sc's faults, heals them, waits
// one sweep period and takes the snapshot.
func run(t *testing.T, sc scenario, seed int64) outcome {
	t.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewSource(seed))
	dir, err := os.MkdirTemp("", "gardener-knative-chaos-")
	require.NoError(t, err)
	logs, err := os.Create(filepath.Join(dir, "functions.log"))
	require.NoError(t, err)
	defer logs.Close()

	pings := newPingWatch(sc.killMidSweep, seed)
	starting := time.Now()
	land, err := landscape.Start(ctx, landscape.Options{
		Dir:                  dir,
		BinDir:               binDir,
		Env:                  settings(),
		FunctionOutput:       func(string) io.Writer { return logs },
		Replicas:             sc.replicas,
		Front:                pings.front,
		Faults:               sc.faults,
		FaultSeed:            seed,
		ChartRegistryAddress: registry,
	})
	require.NoError(t, err, "%s: the landscape", sc.name)
	t.Logf("%s: landscape started in %s", sc.name, time.Since(starting).Round(time.Millisecond))
	pings.land = land
	failed := true
	defer func() {
		if err := land.Stop(); err != nil {
			t.Logf("%s: stopping the landscape: %v", sc.name, err)
		}
		if failed {
			t.Logf("%s: the functions' logs are kept in %s", sc.name, dir)
			return
		}
		_ = os.RemoveAll(dir)
	}()
	schedules := map[string]string{}
	for _, fn := range functions.All {
		for _, sw := range fn.Sweeps {
			schedules[sources.PingSourceName(fn.Name, sw.Name)] = sweepSchedule
			pings.expect(fn.Name, sw.Name)
		}
	}
	require.NoError(t, land.StartSources(ctx, schedules))

	kubelet, err := land.Shoot.As("system:node:"+samples.NodeName, "system:nodes")
	require.NoError(t, err)
	s := newScript(land, kubelet)
	start := time.Now()
	require.NoError(t, s.create(ctx), "%s: creating the samples", sc.name)
	t.Logf("%s: samples created in %s", sc.name, time.Since(start).Round(time.Millisecond))
	stopFollowing := s.follow()
	restarts := 0
	restartSources := func(window time.Duration) {
		if sc.restartSources {
			time.Sleep(time.Duration(rng.Int63n(int64(window))))
			land.Sources().RestartSources()
			restarts++
		}
	}
	created := time.Now()
	restartSources(4 * time.Second)
	if err := pings.waitSwept(created, 20*time.Second); err != nil {
		t.Logf("%s: %v", sc.name, err) // the script goes on: a run that is late shows in its snapshot
	}
	t.Logf("%s: every function swept %s after the samples' creation", sc.name, time.Since(created).Round(time.Millisecond))
	require.NoError(t, s.change(ctx), "%s: updating and deleting", sc.name)
	end := max(faultsEnd, time.Since(start)+faultsLast)
	restartSources(end - time.Since(start))
	time.Sleep(end - time.Since(start))

	// The faults end; one sweep period later every object must be where the fault-free run left it.
	stopFollowing()
	relay := land.Sources().Relay
	relay.Heal()
	pings.heal()
	healed := time.Now()
	relay.Wait()
	require.NoError(t, pings.waitSwept(healed, 20*time.Second), "%s: a sweep of every function after the faults", sc.name)
	t.Logf("%s: swept %s after healing", sc.name, time.Since(healed).Round(time.Millisecond))
	broker := land.Sources().Broker
	for deadline := time.Now().Add(20 * time.Second); broker.InFlight() > 0 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("%s: %d deliveries in flight %s after healing", sc.name, broker.InFlight(), time.Since(healed).Round(time.Millisecond))
	// The state after one sweep period, and then after each further sweep round until two
	// agree: what a run settles on, and how many rounds that took (1: it had settled after one).
	clusters := map[string]*rest.Config{"garden": land.Env.Config, "seed": land.Seed.Config, "shoot": land.Shoot.Config}
	snap, err := take(ctx, clusters, s.created)
	require.NoError(t, err)
	rounds, settled := 1, false
	for ; rounds <= maxSettleRounds && time.Since(start) < snapshotBy-settleRound; rounds++ {
		taken := time.Now()
		if err := pings.waitSwept(taken, settleRound); err != nil {
			break
		}
		next, err := take(ctx, clusters, s.created)
		require.NoError(t, err)
		_, changed := divergence(snap, next)
		snap = next
		if settled = len(changed) == 0; settled {
			break
		}
	}
	took := time.Since(start)
	for _, err := range pings.restartFailures() {
		t.Errorf("%s: %v", sc.name, err)
	}

	stats := relay.Stats()
	done := fmt.Sprintf("%d events: %d dropped, %d duplicates, %d held back", stats.Received, stats.Dropped, stats.Duplicates, stats.Held)
	if sc.restartSources {
		done += fmt.Sprintf("; cluster sources restarted %d times", restarts)
	}
	if sc.killMidSweep {
		done += fmt.Sprintf("; %d of %d functions killed mid-sweep (%d kills)", pings.killedMidSweep(), len(functions.All), pings.kills.Load())
	}
	if sc.replicas > 1 {
		done += fmt.Sprintf("; %d replicas each", sc.replicas)
	}
	settling := fmt.Sprintf("settled after %d sweep rounds", rounds)
	if !settled {
		settling = fmt.Sprintf("still changing after %d sweep rounds", rounds)
	}
	t.Logf("%s: snapshot %s after the samples, %s after the faults ended, %s: %d objects; %s; %d dead-lettered",
		sc.name, took.Round(time.Millisecond), time.Since(healed).Round(time.Millisecond), settling, len(snap), done, broker.DeadLettered.Load())
	done += "; " + settling
	failed = t.Failed()
	return outcome{snapshot: snap, deadLettered: broker.DeadLettered.Load(), faultsDone: done, incomplete: s.incomplete(), late: took >= snapshotBy}
}
