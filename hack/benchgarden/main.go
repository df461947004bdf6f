// Command benchgarden measures the controller-manager functions at a garden's size, beside
// Gardener's own controller manager: a garden (envtest's kube-apiserver and etcd with the stand-in
// CRDs) holding a landscape of N Shoots of real size and shape, with the other kinds in a large
// landscape's proportion, and the churn of its gardenlets and users (each Shoot's status written
// every minute, spec changes, Seed leases every 10 s, Events). Ours are the functions of
// config/runtime/ as processes, each held to the memory limit config/ gives it, fed through the
// event plumbing (the cluster source, Knative's PingSource runner and Broker filter code);
// Gardener's is gardener-controller-manager v1.150 (hack/peers.sh) with its default component
// configuration and leader election off. The sides run one after the other on the same garden.
//
// Every process reads the garden through a proxy of its own, which counts requests and response
// bytes (watch streams included) by verb and resource. For each side and N: RSS (mean and peak,
// per process and in all), CPU-seconds, requests and bytes per hour, and for ours the events
// delivered to each function and the share it acted on. The sweeps whose period is an hour or
// more are fired once each after the window and counted per hour by their period. Over the sizes
// it fits cost = a + b·N per figure and extrapolates to 30,000 Shoots. Run it with
// `make bench-garden`.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"

	"github.com/gardener-knative/gardener-knative/hack/internal/benchkit"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

// options are the command's flags.
type options struct {
	sizes          []int
	warmup, window time.Duration
	churn          churnRates
	// peer is Gardener's gardener-controller-manager binary; binDir holds ours, built once.
	peer, binDir string
	dir          string
	sides        map[string]bool
	oursEnv      []string
}

// extrapolateTo is the size the fits are extrapolated to.
const extrapolateTo = 30000

func main() {
	if benchkit.ServedAsPlumbing() {
		return
	}
	log.SetLogger(logr.Discard())
	var opts options
	var sizes, sides string
	flag.StringVar(&sizes, "n", "1000,3000,10000", "comma-separated numbers of Shoots, one run each")
	flag.DurationVar(&opts.warmup, "warmup", 3*time.Minute, "how long a side runs before its window: its start, first sweeps and what they set off")
	flag.DurationVar(&opts.window, "window", 10*time.Minute, "the measured window at steady state, per side")
	flag.DurationVar(&opts.churn.statusEvery, "status-every", time.Minute, "how often each Shoot's status is written")
	flag.IntVar(&opts.churn.specPerHour, "spec-per-hour", 300, "Shoot spec changes per hour, in all")
	flag.DurationVar(&opts.churn.leaseEvery, "lease-every", 10*time.Second, "how often each Seed's lease is renewed")
	flag.DurationVar(&opts.churn.seedStatusEvery, "seed-status-every", time.Minute, "how often each Seed's status is written")
	flag.StringVar(&opts.peer, "peer", "", "Gardener's gardener-controller-manager binary (hack/peers.sh gardener-controller-manager)")
	flag.StringVar(&opts.dir, "dir", "", "where logs and kubeconfigs go (default: a new temporary directory)")
	flag.StringVar(&sides, "sides", "ours,gardener", "the sides measured, comma-separated: ours, gardener")
	flag.Func("ours-env", "`NAME=value` set for every process of ours (repeatable)", func(v string) error {
		if name, _, ok := strings.Cut(v, "="); !ok || name == "" {
			return fmt.Errorf("%q is not NAME=value", v)
		}
		opts.oursEnv = append(opts.oursEnv, v)
		return nil
	})
	flag.Parse()
	opts.sides = map[string]bool{}
	for _, s := range strings.Split(sides, ",") {
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
			fmt.Fprintf(os.Stderr, "-n: %q is not a number of Shoots\n", s)
			os.Exit(2)
		}
		opts.sizes = append(opts.sizes, n)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if _, err := bench(ctx, opts, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench-garden:", err)
		os.Exit(1)
	}
}

// bench runs every size, printing the table after each, and returns the figures.
func bench(ctx context.Context, opts options, out io.Writer) ([]sizeResult, error) {
	if opts.peer == "" && opts.sides["gardener"] {
		return nil, fmt.Errorf("no -peer: Gardener's gardener-controller-manager (hack/peers.sh gardener-controller-manager) is the side ours is measured beside")
	}
	if opts.dir == "" {
		dir, err := os.MkdirTemp("", "bench-garden-")
		if err != nil {
			return nil, err
		}
		opts.dir = dir
	}
	opts.binDir = filepath.Join(opts.dir, "bin")
	if err := os.MkdirAll(opts.binDir, 0o755); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "bench-garden: logs in %s\n", opts.dir)
	if err := buildOurs(ctx, opts.binDir); err != nil {
		return nil, err
	}
	var results []sizeResult
	for _, n := range opts.sizes {
		r := &run{opts: opts, n: n, shape: shapeOf(n), dir: filepath.Join(opts.dir, fmt.Sprintf("n%05d", n)), log: out}
		fmt.Fprintf(out, "bench-garden: N=%d: %s\n", n, r.shape)
		res, err := r.run(ctx)
		if err != nil {
			return nil, fmt.Errorf("N=%d: %w", n, err)
		}
		results = append(results, res)
		report(out, opts, results)
	}
	return results, nil
}

// run is one size: a garden, its landscape and churn, each side in turn.
type run struct {
	opts         options
	n            int
	shape        shape
	dir          string
	log          io.Writer
	garden       *testenv.Env
	side         string
	warnedCgroup bool
}

// sizeResult is both sides' figures at one N.
type sizeResult struct {
	n int
	// sizes are the mean JSON sizes by kind as written, served as the server serves them.
	sizes, served map[string]int
	populate      time.Duration
	churn         float64 // writes per second the churn made
	ours, peer    sideResult
}

// sideResult is one side's figures.
type sideResult struct {
	processes int
	window    benchkit.Window
	peaks     map[string]int64
	oomKills  map[string]int64
	// startup are the requests and bytes of the side's start and warm-up, by process; reads
	// those of the window, by process.
	startup, reads map[string]benchkit.Counts
	// long are the requests and bytes of firing the long sweeps, by sweep, with their period.
	long []longSweep
	// events are what each of our functions was delivered and acted on in the window.
	events map[string]delivered
	// longCPU is the CPU time firing the long sweeps took, by sweep.
	perHour hourly
}

type longSweep struct {
	sweep  sweepSchedule
	reads  benchkit.Counts
	cpu    time.Duration
	window time.Duration
}

// hourly are a side's figures per hour: the window's scaled, the long sweeps' added by their
// period; with startup, Gardener's start-up reads are spread over the hour.
type hourly struct {
	cpu                  time.Duration
	requests, bytes      float64
	startRequests, start float64
}

func (r *run) run(ctx context.Context) (res sizeResult, err error) {
	res.n = r.n
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return res, err
	}
	if r.garden, err = testenv.Start(); err != nil {
		return res, fmt.Errorf("garden: %w", err)
	}
	defer func() { _ = r.garden.Stop() }()
	for _, ns := range []string{"garden", gardencorev1beta1.GardenerSeedLeaseNamespace} {
		if err := r.garden.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			return res, err
		}
	}
	started := time.Now()
	if res.sizes, err = populate(ctx, r.garden.Client, r.shape, started, 32); err != nil {
		return res, fmt.Errorf("landscape: %w", err)
	}
	res.populate = time.Since(started)
	if res.served, err = servedSizes(ctx, r.garden.Client); err != nil {
		return res, err
	}
	fmt.Fprintf(r.log, "bench-garden: N=%d: landscape created in %s; mean JSON size by kind as written: %s; as served (managed fields included): %s\n",
		r.n, res.populate.Round(time.Second), sizesLine(res.sizes), sizesLine(res.served))

	churnCtx, stopChurn := context.WithCancel(ctx)
	ch := &churn{c: r.garden.Client, s: r.shape, rates: r.opts.churn}
	churned := make(chan struct{})
	go func() { ch.run(churnCtx); close(churned) }()
	defer func() { stopChurn(); <-churned }()
	churnFrom, written := time.Now(), ch.written.Load()

	if r.opts.sides["ours"] {
		if res.ours, err = r.measureOurs(ctx); err != nil {
			return res, fmt.Errorf("ours: %w", err)
		}
	}
	if r.opts.sides["gardener"] {
		if res.peer, err = r.measureGardener(ctx); err != nil {
			return res, fmt.Errorf("Gardener's: %w", err)
		}
	}
	res.churn = float64(ch.written.Load()-written) / time.Since(churnFrom).Seconds()
	if failed := ch.failed.Load(); failed > 0 {
		fmt.Fprintf(r.log, "bench-garden: N=%d: %d churn writes failed\n", r.n, failed)
	}
	return res, nil
}

// measureOurs runs our side: start, warm-up, the window, then each long sweep fired once.
func (r *run) measureOurs(ctx context.Context) (res sideResult, err error) {
	r.side = "ours"
	all, err := schedules()
	if err != nil {
		return res, err
	}
	var long []sweepSchedule
	for _, sw := range all {
		if sw.period >= longPeriod {
			long = append(long, sw)
		}
	}
	s, err := r.startOurs(ctx, long)
	if err != nil {
		return res, err
	}
	defer s.stop()
	var before map[string]counters
	if res, err = r.measureWindow(ctx, s, func() { before = scrapeAll(ctx, s.metrics) }); err != nil {
		return res, err
	}
	res.events = deliveredBetween(before, scrapeAll(ctx, s.metrics))
	fmt.Fprintf(r.log, "bench-garden: N=%d: ours: window done; firing %d long sweeps\n", r.n, len(long))
	if res.long, err = r.fireLong(ctx, s, long); err != nil {
		return res, err
	}
	res.peaks, res.oomKills, err = peaksAndKills(s)
	if err != nil {
		return res, err
	}
	res.perHour = perHour(res, r.opts.window)
	return res, nil
}

// measureWindow runs a started side through its warm-up and its window: the reads of its start
// apart from the window's. atWindow runs as the window begins.
func (r *run) measureWindow(ctx context.Context, s *side, atWindow func()) (res sideResult, err error) {
	res.processes = len(s.procs)
	if err := wait(ctx, r.opts.warmup, s.procs); err != nil {
		return res, err
	}
	res.startup = s.counts()
	atWindow()
	if res.window, err = benchkit.Measure(ctx, s.procs, r.opts.window); err != nil {
		return res, err
	}
	res.reads = minus(s.counts(), res.startup)
	return res, nil
}

// longSettle bounds how long a fired long sweep is given: its sweep ends within SWEEP_TIMEOUT
// (4m), at these sizes within seconds; it is done once its function is idle (settled).
const longSettle = time.Minute

// fireLong fires the long sweeps in rounds, each round at most one sweep of each function at
// once, and measures each: what its function read and used until it was idle again.
func (r *run) fireLong(ctx context.Context, s *side, long []sweepSchedule) ([]longSweep, error) {
	var out []longSweep
	for pending := long; len(pending) > 0; {
		var round, later []sweepSchedule
		taken := map[string]bool{}
		for _, sw := range pending {
			if taken[sw.function] {
				later = append(later, sw)
				continue
			}
			taken[sw.function] = true
			round = append(round, sw)
		}
		pending = later
		results := make([]longSweep, len(round))
		errs := make([]error, len(round))
		var wg sync.WaitGroup
		for i, sw := range round {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i], errs[i] = r.fireAndMeasure(ctx, s, sw)
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
		out = append(out, results...)
	}
	return out, nil
}

// fireAndMeasure fires one long sweep and counts what its function read and used until it was
// idle again.
func (r *run) fireAndMeasure(ctx context.Context, s *side, sw sweepSchedule) (longSweep, error) {
	proxy := s.proxies[sw.function]
	var proc *benchkit.Process
	for _, p := range s.procs {
		if p.Name == sw.function {
			proc = p
		}
	}
	before := proxy.Counts()
	first, err := proc.Usage()
	if err != nil {
		return longSweep{}, err
	}
	from := time.Now()
	if err := fire(ctx, s.broker, sw); err != nil {
		return longSweep{}, err
	}
	last, err := settled(ctx, proc, longSettle)
	if err != nil {
		return longSweep{}, err
	}
	return longSweep{sweep: sw, reads: proxy.Counts().Minus(before), cpu: last.CPU - first.CPU, window: time.Since(from)}, nil
}

// settled waits until p used less than idleCPU in a second, twice in a row (at least three
// seconds), or until limit; it returns p's usage then.
func settled(ctx context.Context, p *benchkit.Process, limit time.Duration) (benchkit.Usage, error) {
	const idleCPU = 20 * time.Millisecond
	deadline := time.Now().Add(limit)
	previous, err := p.Usage()
	if err != nil {
		return previous, err
	}
	for calm, waited := 0, 0; ; waited++ {
		select {
		case <-ctx.Done():
			return previous, ctx.Err()
		case <-time.After(time.Second):
		}
		now, err := p.Usage()
		if err != nil {
			return now, err
		}
		if now.CPU-previous.CPU < idleCPU {
			calm++
		} else {
			calm = 0
		}
		previous = now
		if (calm >= 2 && waited >= 3) || time.Now().After(deadline) {
			return now, nil
		}
	}
}

// wait waits d while every process runs.
func wait(ctx context.Context, d time.Duration, procs []*benchkit.Process) error {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		for _, p := range procs {
			if err := p.Alive(); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(time.Second, time.Until(deadline))):
		}
	}
	return nil
}

// peaksAndKills are each process's peak RSS, and its restarts: for ours, the kernel's OOM kills
// for its memory limit; for any, every exit the supervisor restarted.
func peaksAndKills(s *side) (map[string]int64, map[string]int64, error) {
	peaks, kills := map[string]int64{}, map[string]int64{}
	for _, p := range s.procs {
		u, err := p.Usage()
		if err != nil {
			return nil, nil, err
		}
		peaks[p.Name] = u.Peak
		kills[p.Name] = int64(p.Restarts())
		if g, ok := s.cgroups[p.Name]; ok {
			if oom, err := g.OOMKills(); err != nil {
				return nil, nil, err
			} else if oom > kills[p.Name] {
				kills[p.Name] = oom
			}
		}
	}
	return peaks, kills, nil
}

func minus(now, earlier map[string]benchkit.Counts) map[string]benchkit.Counts {
	out := map[string]benchkit.Counts{}
	for name, c := range now {
		out[name] = c.Minus(earlier[name])
	}
	return out
}

func sum(per map[string]benchkit.Counts) benchkit.Counts {
	total := benchkit.Counts{}
	for _, c := range per {
		total.Add(c)
	}
	return total
}

// net is what firing long sweep l cost beyond the steady reads its function makes in the same
// time (the window's rate): requests and bytes, never below zero.
func (res sideResult) net(l longSweep, window time.Duration) (requests, bytes float64) {
	steady := res.reads[l.sweep.function].Total()
	share := float64(l.window) / float64(window)
	fired := l.reads.Total()
	return max(0, float64(fired.Requests)-share*float64(steady.Requests)), max(0, float64(fired.Bytes)-share*float64(steady.Bytes))
}

// perHour scales the window to an hour and adds each long sweep's net cost by its period.
func perHour(res sideResult, window time.Duration) hourly {
	scale := float64(time.Hour) / float64(window)
	total := sum(res.reads).Total()
	h := hourly{cpu: time.Duration(float64(res.window.CPU) * scale), requests: float64(total.Requests) * scale, bytes: float64(total.Bytes) * scale}
	for _, l := range res.long {
		requests, bytes := res.net(l, window)
		perHour := float64(time.Hour) / float64(l.sweep.period)
		h.requests += requests * perHour
		h.bytes += bytes * perHour
		h.cpu += time.Duration(float64(l.cpu) * perHour)
	}
	start := sum(res.startup).Total()
	h.startRequests, h.start = float64(start.Requests), float64(start.Bytes)
	return h
}

func sizesLine(sizes map[string]int) string {
	var parts []string
	for _, kind := range []string{"Shoot", "Seed", "Project", "CloudProfile", "ControllerRegistration", "ControllerInstallation", "SecretBinding", "CredentialsBinding", "Secret", "BackupBucket", "BackupEntry", "ManagedSeed", "Lease", "Namespace", "Event"} {
		if size, ok := sizes[kind]; ok {
			parts = append(parts, fmt.Sprintf("%s %s", kind, benchkit.Bytes(int64(size))))
		}
	}
	return strings.Join(parts, ", ")
}

// mustJSON is v as JSON; v is one of the API's types, which always marshal.
func mustJSON(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}
