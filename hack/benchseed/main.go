// Command benchseed measures one seed serving N shoots, ours beside Gardener's: our per-seed
// deployment (every function config/ deploys per seed, the webhook server, and the event
// plumbing: the cluster sources for the seed and every shoot, and a Broker with Knative's Trigger
// filters) against gardener-resource-manager v1.150 (hack/peers.sh), one process per shoot
// configured as gardenlet configures a shoot's.
//
// For each N it starts a seed (envtest's kube-apiserver and etcd) and N shoots (real
// kube-apiservers sharing one etcd, each under a prefix of its own), and gives every shoot
// ManagedResources shaped like a shoot's (-managed-resources of 10 objects each, some
// Brotli-compressed). The sides run one after the other on the same clusters, each with
// namespaces and objects of its own, so that neither's CPU time or requests fall on the other:
// the time until every ManagedResource of every shoot is applied and healthy (the full sync),
// then one sync period at steady state (always-on processes, their summed RSS, mean and peak,
// CPU-seconds, requests to the seed and to each shoot by verb from the kube-apiservers' audit
// logs), then -edits edits of managed ConfigMaps in one shoot and how long each took to be
// reverted. Over the sizes it fits cost = a + b·N per figure and extrapolates to 250 shoots
// (gardenlet's default seed capacity). Run it with `make bench-seed`.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gardener-knative/gardener-knative/hack/internal/benchkit"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

// options are the command's flags.
type options struct {
	sizes            []int
	managedResources int
	period           time.Duration
	edits            int
	// peer is Gardener's gardener-resource-manager binary; binDir holds ours, built once.
	peer, binDir string
	dir          string
	// sides are the sides measured (both by default; one alone when working on it).
	sides map[string]bool
	// oursEnv are variables set for every process of ours (not the Broker stand-in, which is
	// Knative's in a cluster) besides their own (e.g. GOGC), for trying a setting before config/
	// ships it.
	oursEnv []string
}

// watchesUp is how long a side's processes run before the ManagedResources are created: what
// the event plumbing and the informers need to list and watch.
const watchesUp = 5 * time.Second

// minPeriod is the shortest sync period gardener-resource-manager accepts.
const minPeriod = 15 * time.Second

// extrapolateTo is gardenlet's default seed capacity (resources.capacity.shoots).
const extrapolateTo = 250

func main() {
	if benchkit.ServedAsPlumbing() {
		return
	}
	// controller-runtime's envtest logs through its global logger: nothing of it is wanted.
	log.SetLogger(logr.Discard())
	var opts options
	var sizes string
	flag.StringVar(&sizes, "n", "10,25,50", "comma-separated numbers of shoots, one run each")
	flag.IntVar(&opts.managedResources, "managed-resources", 20, "ManagedResources per shoot, of 10 objects each")
	flag.DurationVar(&opts.period, "period", time.Minute, "sync period of the ManagedResource and health controllers, both sides (gardenlet's: 1h and 1m)")
	flag.IntVar(&opts.edits, "edits", 100, "edits of managed ConfigMaps in one shoot, each timed until reverted")
	flag.StringVar(&opts.peer, "peer", "", "Gardener's gardener-resource-manager binary (hack/peers.sh)")
	flag.StringVar(&opts.dir, "dir", "", "where the logs, kubeconfigs and audit logs go (default: a new temporary directory)")
	flag.Func("ours-env", "`NAME=value` set for every process of ours but the Broker stand-in (repeatable), e.g. GOGC=50", func(v string) error {
		if name, _, ok := strings.Cut(v, "="); !ok || name == "" {
			return fmt.Errorf("%q is not NAME=value", v)
		}
		opts.oursEnv = append(opts.oursEnv, v)
		return nil
	})
	sides := flag.String("sides", "ours,gardener", "the sides measured, comma-separated: ours, gardener (one alone has no side to compare with)")
	flag.Parse()
	opts.sides = map[string]bool{}
	for _, s := range strings.Split(*sides, ",") {
		s = strings.TrimSpace(s)
		if s != "ours" && s != "gardener" {
			fmt.Fprintf(os.Stderr, "-sides: %q is neither ours nor gardener\n", s)
			os.Exit(2)
		}
		opts.sides[s] = true
	}
	for _, s := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "-n: %q is not a number of shoots\n", s)
			os.Exit(2)
		}
		opts.sizes = append(opts.sizes, n)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if _, err := bench(ctx, opts, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench-seed:", err)
		os.Exit(1)
	}
}

// bench runs every size, prints the table and the fits, and returns the figures.
func bench(ctx context.Context, opts options, out io.Writer) ([]sizeResult, error) {
	if opts.period < minPeriod {
		return nil, fmt.Errorf("-period %s: Gardener's resource manager takes no sync period under %s", opts.period, minPeriod)
	}
	if opts.sides == nil {
		opts.sides = map[string]bool{"ours": true, "gardener": true}
	}
	if opts.peer == "" && opts.sides["gardener"] {
		return nil, fmt.Errorf("no -peer: Gardener's gardener-resource-manager (hack/peers.sh) is the side ours is measured beside")
	}
	if err := checkInotifyInstances(inotifyInstancesPath, slices.Max(opts.sizes)); err != nil {
		return nil, err
	}
	if opts.dir == "" {
		dir, err := os.MkdirTemp("", "bench-seed-")
		if err != nil {
			return nil, err
		}
		opts.dir = dir
	}
	opts.binDir = filepath.Join(opts.dir, "bin")
	if err := os.MkdirAll(opts.binDir, 0o755); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "bench-seed: logs in %s\n", opts.dir)
	if err := buildOurs(ctx, opts.binDir); err != nil {
		return nil, err
	}
	var results []sizeResult
	for _, n := range opts.sizes {
		fmt.Fprintf(out, "bench-seed: N=%d …\n", n)
		r := &run{opts: opts, n: n, dir: filepath.Join(opts.dir, fmt.Sprintf("n%03d", n)), log: out}
		res, err := r.run(ctx)
		if err != nil {
			return nil, fmt.Errorf("N=%d: %w", n, err)
		}
		results = append(results, res)
		// Each size's figures as soon as they are measured: a later size may fail or be stopped.
		report(out, opts, results)
	}
	return results, nil
}

// run is one size: a seed, N shoots, both sides in turn.
type run struct {
	opts   options
	n      int
	dir    string
	log    io.Writer
	seed   *testenv.Env
	audit  string
	shoots *shoots
	// fronts are the queue-proxies in front of our functions; functionURLs their functions'
	// own addresses (for their metrics).
	fronts       []*http.Server
	functionURLs map[string]string
	// profileURLs are where our processes serve Go's profiles (/debug/pprof/), by process.
	profileURLs map[string]string
}

// sizeResult is both sides' figures at one N.
type sizeResult struct {
	n           int
	ours, peer  sideResult
	startShoots time.Duration
}

// sideResult is one side's figures.
type sideResult struct {
	processes int
	fullSync  time.Duration
	// settled is how long after the full sync the processes became quiet.
	settled time.Duration
	window  benchkit.Window
	// peaks is the sum of the processes' own peaks (VmHWM) over the whole run.
	peaks         int64
	seedRequests  map[string]int
	shootRequests map[string]int
	drift         []time.Duration
	// live is each of our processes' heap of live objects right after the window, by name.
	live map[string]int64
}

func (r *run) run(ctx context.Context) (res sizeResult, err error) {
	res.n = r.n
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return res, err
	}
	// The seed writes its audit log here: testenv reads the directory from the environment.
	seedAudit := filepath.Join(r.dir, "seed-audit")
	previous, had := os.LookupEnv(testenv.AuditLogDirEnv)
	os.Setenv(testenv.AuditLogDirEnv, seedAudit)
	r.seed, err = testenv.Start()
	if had {
		os.Setenv(testenv.AuditLogDirEnv, previous)
	} else {
		os.Unsetenv(testenv.AuditLogDirEnv)
	}
	if err != nil {
		return res, fmt.Errorf("seed: %w", err)
	}
	defer func() { _ = r.seed.Stop() }()
	logs, err := filepath.Glob(filepath.Join(seedAudit, "audit-*.log"))
	if err != nil || len(logs) != 1 {
		return res, fmt.Errorf("the seed's audit log in %s: %v %v", seedAudit, logs, err)
	}
	r.audit = logs[0]

	started := time.Now()
	if r.shoots, err = startEtcd(); err != nil {
		return res, err
	}
	defer func() { _ = r.shoots.stop() }()
	if err := r.shoots.add(r.dir, r.n); err != nil {
		return res, err
	}
	res.startShoots = time.Since(started)
	fmt.Fprintf(r.log, "bench-seed: N=%d: %d shoots started in %s\n", r.n, r.n, res.startShoots.Round(time.Second))

	if r.opts.sides["ours"] {
		if res.ours, err = r.side(ctx, "ours"); err != nil {
			return res, fmt.Errorf("ours: %w", err)
		}
	}
	if r.opts.sides["gardener"] {
		if res.peer, err = r.side(ctx, "gardener"); err != nil {
			return res, fmt.Errorf("Gardener's: %w", err)
		}
	}
	return res, nil
}

// side creates the side's workload, starts its processes, and measures them.
func (r *run) side(ctx context.Context, name string) (res sideResult, err error) {
	w := workload{managedResources: r.opts.managedResources, side: name}
	var namespaces []string
	for i, sh := range r.shoots.planes {
		ns := fmt.Sprintf("shoot--%s--s%03d", name, i)
		namespaces = append(namespaces, ns)
		if err := testenv.Enroll(ctx, r.seed.Client, tenant.Name(ns), sh.env); err != nil {
			return res, err
		}
	}
	var procs []*benchkit.Process
	var seedUsers, shootUsers []string
	if name == "ours" {
		procs, err = r.startOurs(ctx)
		seedUsers, shootUsers = []string{oursSeedUser, oursSourceUser}, []string{oursShootUser}
	} else {
		procs, err = r.startGardener(ctx, namespaces)
		seedUsers, shootUsers = []string{gardenerUser}, []string{oursShootUser}
	}
	defer func() {
		// What our functions counted (events by outcome, reconciles by trigger), for reading
		// where a figure's time went.
		for fn, url := range r.functionURLs {
			if err := benchkit.Save(ctx, url+"/metrics", filepath.Join(r.dir, "ours-"+fn+".metrics")); err != nil {
				fmt.Fprintf(r.log, "bench-seed: %s's metrics: %v\n", fn, err)
			}
		}
		r.functionURLs, r.profileURLs = nil, nil
		// The event plumbing (last) first: nothing is sent to what stopped.
		for _, p := range slices.Backward(procs) {
			p.Stop()
		}
		for _, f := range r.fronts {
			_ = f.Close()
		}
		r.fronts = nil
	}()
	if err != nil {
		return res, err
	}
	res.processes = len(procs)
	// The ManagedResources come once both sides watch, as a seed's do while it runs: the full
	// sync is the time to apply them all, not a restart's (our event plumbing sends no event
	// for what existed before it watched; the sync sweep finds that, within its period).
	select {
	case <-ctx.Done():
		return res, ctx.Err()
	case <-time.After(watchesUp):
	}
	started := time.Now()
	for i, sh := range r.shoots.planes {
		if err := w.create(ctx, r.seed.Client, sh.env.Client, namespaces[i]); err != nil {
			return res, err
		}
	}
	if err := waitSteady(ctx, r.seed.Client, namespaces, procs, 10*time.Minute); err != nil {
		return res, err
	}
	res.fullSync = time.Since(started)
	fmt.Fprintf(r.log, "bench-seed: N=%d: %s: every ManagedResource applied and healthy %s after the first was created\n", r.n, name, res.fullSync.Round(100*time.Millisecond))

	// What the start set off (its own writes' events, retries, the first sweeps) settles first.
	if res.settled, err = quiesce(ctx, procs); err != nil {
		return res, err
	}
	fmt.Fprintf(r.log, "bench-seed: N=%d: %s: quiet %s later\n", r.n, name, res.settled.Round(time.Second))
	if res.window, err = benchkit.Measure(ctx, procs, r.opts.period); err != nil {
		return res, err
	}
	// What each of our processes holds at steady state, for reading where its memory goes
	// (`go tool pprof -sample_index=inuse_space`; after a collection, so live objects only).
	res.live = map[string]int64{}
	for name, url := range r.profileURLs {
		path := filepath.Join(r.dir, "ours-"+name+".heap")
		if err := benchkit.Save(ctx, url+"/debug/pprof/heap?gc=1", path); err != nil {
			fmt.Fprintf(r.log, "bench-seed: %s's heap profile: %v\n", name, err)
			continue
		}
		if res.live[name], err = benchkit.LiveHeap(path); err != nil {
			return res, err
		}
	}
	// kube-apiserver writes an audit event once the response is complete: a moment's grace.
	time.Sleep(time.Second)
	if res.seedRequests, err = requests(r.audit, seedUsers, res.window.From, res.window.To); err != nil {
		return res, err
	}
	res.shootRequests = map[string]int{}
	for _, sh := range r.shoots.planes {
		counts, err := requests(sh.audit, shootUsers, res.window.From, res.window.To)
		if err != nil {
			return res, err
		}
		add(res.shootRequests, counts)
	}

	shoot, err := kubernetes.NewForConfig(r.shoots.planes[0].env.Config)
	if err != nil {
		return res, err
	}
	if res.drift, err = drift(ctx, shoot, w, r.opts.edits, 3*r.opts.period+time.Minute); err != nil {
		return res, fmt.Errorf("drift: %w", err)
	}
	if res.peaks, err = benchkit.SumPeaks(procs); err != nil {
		return res, err
	}
	return res, nil
}

// seedKubeconfig writes a kubeconfig of a new admin of the seed named user to path.
func (r *run) seedKubeconfig(user, path string) error {
	u, err := r.seed.AddUser(envtest.User{Name: user, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return err
	}
	data, err := u.KubeConfig()
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// report prints the table of every size and the fits over them.
func report(out io.Writer, opts options, results []sizeResult) {
	fmt.Fprintf(out, "\nOne seed, N shoots: %d ManagedResources of %d objects per shoot; sync period %s on both sides; one sync period measured at steady state.\n",
		opts.managedResources, objectsPerManagedResource, opts.period)
	fmt.Fprintln(out, "ours: the per-seed deployment ("+strconv.Itoa(len(perSeedFunctions))+" functions, the webhook server, the event plumbing: source and Broker stand-in). Gardener's: one gardener-resource-manager per shoot, one replica (Gardener runs two).")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "N\tside\tprocesses\tRSS mean\tRSS peak\tsum of peaks\tCPU-s/period\tseed requests/period\trequests/shoot/period\tfull sync\tdrift p50\tdrift p99")
	for _, r := range results {
		for _, s := range []struct {
			name string
			res  sideResult
		}{{"ours", r.ours}, {"Gardener", r.peer}} {
			if s.res.processes == 0 {
				continue // not measured (-sides)
			}
			fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\t%s\t%.2f\t%s\t%s\t%s\t%s\t%s\n", r.n, s.name, s.res.processes,
				benchkit.MiB(s.res.window.MeanRSS), benchkit.MiB(s.res.window.PeakRSS), benchkit.MiB(s.res.peaks), s.res.window.CPU.Seconds(),
				verbs(s.res.seedRequests, 1), verbs(s.res.shootRequests, r.n), s.res.fullSync.Round(100*time.Millisecond),
				benchkit.Percentile(s.res.drift, 50).Round(time.Millisecond), benchkit.Percentile(s.res.drift, 99).Round(time.Millisecond))
		}
	}
	_ = tw.Flush()
	everyProcess := append(servingProcesses(), sourceProcess, brokerProcess)
	printPerProcess(out, results, "Our processes' RSS, mean over the window", everyProcess,
		func(s sideResult) map[string]int64 { return s.window.RSS })
	printPerProcess(out, results, "Our processes' anonymous RSS (RssAnon: without their binaries' file pages), mean over the window", everyProcess,
		func(s sideResult) map[string]int64 { return s.window.Anon })
	printPerProcess(out, results, "Our processes' live heap right after the window (after a collection; RSS adds the runtime, the binary and what the collector keeps)", profiledProcesses(),
		func(s sideResult) map[string]int64 { return s.live })

	ns := make([]int, len(results))
	for i, r := range results {
		ns[i] = r.n
	}
	figures := []struct {
		name string
		unit string
		of   func(sideResult) float64
	}{
		{"RSS mean", "MiB", func(s sideResult) float64 { return float64(s.window.MeanRSS) / (1 << 20) }},
		{"RSS peak", "MiB", func(s sideResult) float64 { return float64(s.window.PeakRSS) / (1 << 20) }},
		{"CPU per period", "CPU-s", func(s sideResult) float64 { return s.window.CPU.Seconds() }},
		{"seed requests per period", "requests", func(s sideResult) float64 { return float64(total(s.seedRequests)) }},
		{"requests to all shoots per period", "requests", func(s sideResult) float64 { return float64(total(s.shootRequests)) }},
		{"full sync", "s", func(s sideResult) float64 { return s.fullSync.Seconds() }},
	}
	fmt.Fprintf(out, "\nFits cost = a + b·N over N = %v, extrapolated to %d shoots (an extrapolation: %d shoots were not run):\n", ns, extrapolateTo, extrapolateTo)
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "figure\tside\ta\tb (per shoot)\tat N=%d\n", extrapolateTo)
	for _, f := range figures {
		for _, side := range []struct {
			name string
			of   func(sizeResult) sideResult
		}{{"ours", func(r sizeResult) sideResult { return r.ours }}, {"Gardener", func(r sizeResult) sideResult { return r.peer }}} {
			if side.of(results[0]).processes == 0 {
				continue // not measured (-sides)
			}
			ys := make([]float64, len(results))
			for i, r := range results {
				ys[i] = f.of(side.of(r))
			}
			l, err := benchkit.Fit(ns, ys)
			if err != nil {
				fmt.Fprintf(tw, "%s (%s)\t%s\t%s\t\t\n", f.name, f.unit, side.name, err)
				continue
			}
			fmt.Fprintf(tw, "%s (%s)\t%s\t%.2f\t%.3f\t%.1f\n", f.name, f.unit, side.name, l.A, l.B, l.At(extrapolateTo))
		}
	}
	// Ours apart: what the functions and the webhook server need, the source, and the Broker
	// stand-in (in a cluster, Knative's Broker: not ours to size, but what it holds is our load).
	for _, part := range []struct {
		name  string
		procs []string
	}{
		{"our functions and webhook server", servingProcesses()},
		{"our source (watchers, PingSources)", []string{sourceProcess}},
		{"the Broker stand-in", []string{brokerProcess}},
	} {
		for _, measure := range []struct {
			name string
			of   func(sideResult) map[string]int64
		}{
			{"RSS mean", func(s sideResult) map[string]int64 { return s.window.RSS }},
			{"anonymous RSS mean", func(s sideResult) map[string]int64 { return s.window.Anon }},
			{"live heap", func(s sideResult) map[string]int64 { return s.live }},
		} {
			ys := make([]float64, len(results))
			for i, r := range results {
				for _, name := range part.procs {
					ys[i] += float64(measure.of(r.ours)[name]) / (1 << 20)
				}
			}
			if l, err := benchkit.Fit(ns, ys); err == nil {
				fmt.Fprintf(tw, "%s: %s (MiB)\tours\t%.2f\t%.3f\t%.1f\n", part.name, measure.name, l.A, l.B, l.At(extrapolateTo))
			}
		}
	}
	_ = tw.Flush()
}

// printPerProcess prints, under title, one line per size with of(our side) for each of names.
func printPerProcess(out io.Writer, results []sizeResult, title string, names []string, of func(sideResult) map[string]int64) {
	fmt.Fprintf(out, "\n%s:\n", title)
	for _, r := range results {
		parts := make([]string, 0, len(names))
		for _, name := range names {
			parts = append(parts, fmt.Sprintf("%s %s", name, benchkit.MiB(of(r.ours)[name])))
		}
		fmt.Fprintf(out, "  N=%d: %s\n", r.n, strings.Join(parts, ", "))
	}
}
