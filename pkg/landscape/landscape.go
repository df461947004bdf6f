// Package landscape brings up a local gardener-knative landscape: a real kube-apiserver and
// etcd with the Gardener CRDs, every function of the registry built and run as a local process
// (exactly as `go build ./functions/<name>` gives it), and the real event sources in-process
// feeding them (pkg/localsources: our cluster sources, Knative's PingSource runner); for
// functions that work on a seed, a second control plane standing for it and an in-process OCI
// registry with a sample chart. `make run` and the end-to-end tests use it.
package landscape

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/gardener-knative/gardener-knative/functions"
	"github.com/gardener-knative/gardener-knative/pkg/bootstrap"
	"github.com/gardener-knative/gardener-knative/pkg/configgen"
	"github.com/gardener-knative/gardener-knative/pkg/controller/controllerinstallation/chart/ocitest"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/localsources"
	"github.com/gardener-knative/gardener-knative/pkg/scheme"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/clients"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
	"github.com/gardener-knative/gardener-knative/sources"
)

// Options configure a landscape.
type Options struct {
	// Dir holds the kubeconfigs, and the function binaries unless BinDir is set; it must exist.
	Dir string
	// BinDir, if set, holds the function binaries instead of Dir. Landscapes started one after
	// another with the same BinDir link the functions once: go build leaves a binary that is up
	// to date alone (a fresh directory costs linking all 26 again, about 33 s on 2 CPUs).
	BinDir string
	// Functions are the functions to run; nil means functions.All.
	Functions []*function.Function
	// Env adds environment variables (KEY=value) to the named function's process.
	Env map[string][]string
	// FunctionOutput receives the functions' log lines, each prefixed with its name.
	FunctionOutput func(function string) io.Writer
	// SourceLogger receives the event sources' logs.
	SourceLogger *zap.SugaredLogger
	// Replicas is the number of processes of each function behind its URL, taking requests in
	// turn, as Knative's scaling out puts several pods behind a Service; 0 means 1.
	Replicas int
	// Front, if set, wraps each function's handler behind its URL (the replicas' proxy), e.g.
	// to watch or disturb what the Broker delivers.
	Front func(function string, next http.Handler) http.Handler
	// Faults are injected between the sources and the Broker (localsources.FaultRelay), their
	// random choices seeded by FaultSeed.
	Faults    localsources.Faults
	FaultSeed int64
	// ChartRegistryAddress is where the sample chart's registry listens; empty means a free
	// loopback port.
	ChartRegistryAddress string
	// Webhooks also runs GRM's webhook server (multi-tenant, TLS on loopback) and a second shoot
	// that differs from the first (BinPackingTenant), and enrols both shoots with the server.
	Webhooks bool
}

// Settings are the functions' settings (KEY=value) in a demonstration landscape: `make run`'s,
// test/e2e's and test/chaos's. The features of the controller manager that Gardener leaves off
// by default are on, so that every function shows its work; the resource manager's functions
// need none, their defaults being those gardenlet gives a shoot's resource manager (or the
// seed's).
var Settings = map[string][]string{
	// Projects created now are younger than Gardener's minimum lifetime (30 days): without this,
	// the stale sweep could show none of its rules on the samples.
	"project": {"PROJECT_MINIMUM_LIFETIME_DAYS=0"},
	"event":   {"EVENT_TTL_NON_SHOOT_EVENTS=1h"}, // off unless configured, as in Gardener
}

// SeedName is the seed the second control plane stands for: functions that run in it get it as
// SEED_NAME (Options.Env may override it).
const SeedName = "local-seed"

// Tenant is the shoot control-plane namespace of the landscape's one shoot: GRM's functions,
// deployed per seed, serve it with the shoot's control plane (Shoot) as its target. The
// landscape's main control plane is that seed (as a garden runtime cluster may be one).
const Tenant tenant.Name = "shoot--local--demo"

// Landscape is a running local landscape.
type Landscape struct {
	Env        *testenv.Env
	Kubeconfig string
	// Seed is a second control plane standing for the seed SeedName, started when a function
	// works on the garden from a seed (gardenlet's part); those functions run in it (KUBECONFIG is
	// SeedKubeconfig, GARDEN_KUBECONFIG the main control plane's). A stand-in for the namespace
	// controller releases its deleted namespaces.
	Seed           *testenv.Env
	SeedKubeconfig string
	// ChartRegistry is an in-process OCI registry serving the sample chart at SampleChartRef
	// (SampleChartName:SampleChartVersion), started with Seed: the charts ControllerDeployments
	// name for installation on the seed.
	ChartRegistry  *ocitest.Registry
	SampleChartRef string
	// Shoot is a third control plane, the target of the tenant Tenant, started when a function
	// is deployed per seed (GRM's); ShootKubeconfig is its admin's kubeconfig.
	Shoot           *testenv.Env
	ShootKubeconfig string
	// BinPackingShoot is the control plane of BinPackingTenant, and WebhooksURL where the
	// webhook server serves (Options.Webhooks).
	BinPackingShoot           *testenv.Env
	BinPackingShootKubeconfig string
	WebhooksURL               string
	webhooks                  *webhookServer
	// URLs of the running functions, by name.
	URLs     map[string]string
	opts     Options
	services map[string]*service
	exited   chan error
	sources  *localsources.Sources
	stopSeed context.CancelFunc
	// tokens are the Triggers' tokens the Broker sends every event with (SenderToken).
	tokens *localsources.TriggerTokens
}

// SenderToken is a token of function name's Trigger for its audience, as the Broker sends its
// events with: what a test that sends a function events directly must send too.
func (l *Landscape) SenderToken(ctx context.Context, name string) (string, error) {
	if _, ok := l.services[name]; !ok {
		return "", fmt.Errorf("no function %s in the landscape", name)
	}
	return l.tokens.TokenFor(ctx, sources.Namespace, name, name, sources.EventAudience(sources.Namespace, name))
}

// service is a function's processes behind one URL, as a Knative Service's pods.
type service struct {
	fn       *function.Function
	replicas []*replica
	next     atomic.Uint64
	server   *http.Server
}

// replica is one process of a function, on its own port.
type replica struct {
	port int
	cmd  *exec.Cmd
	// done is closed when cmd has exited; killed tells that the landscape ended it on purpose.
	done   chan struct{}
	killed atomic.Bool
}

// Start starts the control plane and the functions; the sources start with StartSources, so
// that callers can create objects that exist before any source watches (they get no event).
func Start(ctx context.Context, opts Options) (l *Landscape, err error) {
	if opts.Functions == nil {
		opts.Functions = functions.All
	}
	if opts.Replicas < 1 {
		opts.Replicas = 1
	}
	if opts.BinDir == "" {
		opts.BinDir = opts.Dir
	}
	started := &Landscape{opts: opts, URLs: map[string]string{}, services: map[string]*service{}, exited: make(chan error, len(opts.Functions)*opts.Replicas+1)}
	l = started
	defer func() {
		if err != nil {
			_ = started.Stop() // l is nil by then: `return nil, err` assigns it
		}
	}()
	if l.Env, err = testenv.Start(); err != nil {
		return nil, err
	}
	if l.Kubeconfig, err = writeKubeconfig(l.Env, filepath.Join(opts.Dir, "kubeconfig")); err != nil {
		return nil, err
	}
	main, err := kubernetes.NewForConfig(l.Env.Config)
	if err != nil {
		return nil, err
	}
	var seedIssuer kubernetes.Interface
	// Each function's Trigger tokens come from the cluster it runs in, which reviews them.
	l.tokens = &localsources.TriggerTokens{ClusterOf: func(subscriber string) kubernetes.Interface {
		if fn, ok := functionNamed(opts.Functions, subscriber); ok && runsInSeed(fn) {
			return seedIssuer
		}
		return main
	}}
	if slices.ContainsFunc(opts.Functions, perSeed) {
		if l.Shoot, err = testenv.Start(); err != nil {
			return nil, fmt.Errorf("shoot: %w", err)
		}
		if l.ShootKubeconfig, err = writeKubeconfig(l.Shoot, filepath.Join(opts.Dir, "shoot-kubeconfig")); err != nil {
			return nil, err
		}
		if err := testenv.Enroll(ctx, l.Env.Client, Tenant, l.Shoot); err != nil {
			return nil, fmt.Errorf("enrolling the shoot %s: %w", Tenant, err)
		}
	}
	if slices.ContainsFunc(opts.Functions, runsInSeed) {
		if l.Seed, err = testenv.Start(); err != nil {
			return nil, fmt.Errorf("seed: %w", err)
		}
		if l.SeedKubeconfig, err = writeKubeconfig(l.Seed, filepath.Join(opts.Dir, "seed-kubeconfig")); err != nil {
			return nil, err
		}
		var seedClient kubernetes.Interface
		if seedClient, err = kubernetes.NewForConfig(l.Seed.Config); err != nil {
			return nil, err
		}
		seedIssuer = seedClient
		var seedCtx context.Context
		seedCtx, l.stopSeed = context.WithCancel(context.Background())
		go finalizeNamespaces(seedCtx, seedClient)
		address := opts.ChartRegistryAddress
		if address == "" {
			address = "127.0.0.1:0"
		}
		if l.ChartRegistry, l.SampleChartRef, err = StartChartRegistry(address); err != nil {
			return nil, err
		}
	}
	// One go build for all functions (and the webhook server): the packages they share compile
	// once and link in parallel.
	build := exec.CommandContext(ctx, "go", "build", "-o", opts.BinDir+string(filepath.Separator))
	for _, fn := range opts.Functions {
		build.Args = append(build.Args, configgen.ModulePath+"/functions/"+fn.Name)
	}
	if opts.Webhooks {
		build.Args = append(build.Args, configgen.ModulePath+"/webhooks/resource-manager")
	}
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build: %w\n%s", err, out)
	}
	if opts.Webhooks {
		if l.Shoot == nil {
			return nil, errors.New("the webhooks serve the shoots of GRM's functions: run one of them")
		}
		if err := l.startWebhooks(ctx); err != nil {
			return nil, err
		}
	}
	for _, fn := range opts.Functions {
		if err := l.startFunction(ctx, fn); err != nil {
			return nil, fmt.Errorf("function %s: %w", fn.Name, err)
		}
	}
	return l, nil
}

// runsInSeed: the function works on the garden (the main control plane, GARDEN_KUBECONFIG) from
// the seed control plane, its Target (KUBECONFIG), as config/ runs gardenlet's part in a seed.
func runsInSeed(fn *function.Function) bool {
	return fn.WorksOnGarden && slices.Contains(fn.Parts, function.Seed)
}

func functionNamed(fns []*function.Function, name string) (*function.Function, bool) {
	i := slices.IndexFunc(fns, func(fn *function.Function) bool { return fn.Name == name })
	if i < 0 {
		return nil, false
	}
	return fns[i], true
}

// perSeed: the function serves the landscape's shoot as a tenant (MULTI_TENANT).
func perSeed(fn *function.Function) bool {
	return fn.DeploymentMode() == function.PerSeed
}

func writeKubeconfig(env *testenv.Env, path string) (string, error) {
	user, err := env.AddUser(envtest.User{Name: "landscape-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", err
	}
	data, err := user.KubeConfig()
	if err != nil {
		return "", err
	}
	return path, os.WriteFile(path, data, 0o600)
}

func (l *Landscape) startFunction(ctx context.Context, fn *function.Function) error {
	svc := &service{fn: fn}
	l.services[fn.Name] = svc
	for range l.opts.Replicas {
		port, err := freePort()
		if err != nil {
			return err
		}
		r := &replica{port: port}
		svc.replicas = append(svc.replicas, r)
		if err := l.startReplica(ctx, fn, r); err != nil {
			return err
		}
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	var handler http.Handler = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			r := svc.replicas[svc.next.Add(1)%uint64(len(svc.replicas))]
			pr.SetURL(&url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(r.port)})
		},
		// A replica that is gone answers as an unreachable pod does behind Knative: 502, which
		// the Broker retries.
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			http.Error(w, err.Error(), http.StatusBadGateway)
		},
	}
	if l.opts.Front != nil {
		handler = l.opts.Front(fn.Name, handler)
	}
	svc.server = &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = svc.server.Serve(listener) }()
	l.URLs[fn.Name] = "http://" + listener.Addr().String()
	return nil
}

// startReplica starts one process of fn on r's port and waits until it is ready.
func (l *Landscape) startReplica(ctx context.Context, fn *function.Function, r *replica) error {
	name := fn.Name
	cmd := exec.Command(filepath.Join(l.opts.BinDir, name))
	// POD_NAME: the replica's own name, as each pod of a Knative Service has one; a restarted
	// replica keeps it, as a restarted container keeps its pod's.
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(r.port), "KUBECONFIG="+l.Kubeconfig, "POD_NAME="+name+"-"+strconv.Itoa(r.port))
	if fn.WorksOnGarden {
		// The main control plane is the garden, as config/ gives it the part's garden access.
		cmd.Env = append(cmd.Env, "GARDEN_KUBECONFIG="+l.Kubeconfig)
	}
	if runsInSeed(fn) {
		// The last of a duplicate variable wins: KUBECONFIG is the seed's.
		cmd.Env = append(cmd.Env, "KUBECONFIG="+l.SeedKubeconfig, "SEED_NAME="+SeedName)
	}
	if perSeed(fn) {
		cmd.Env = append(cmd.Env, "MULTI_TENANT=true")
	}
	// Only its Trigger's deliveries, as config/ runs it (the Broker sends them with TriggerTokens).
	cmd.Env = append(cmd.Env, "EVENT_AUDIENCE="+sources.EventAudience(sources.Namespace, name),
		"EVENT_SENDERS="+sources.TriggerSender(sources.Namespace, name))
	cmd.Env = append(cmd.Env, l.opts.Env[name]...)
	if l.opts.FunctionOutput != nil {
		cmd.Stdout = l.opts.FunctionOutput(name)
		cmd.Stderr = cmd.Stdout
	}
	if err := l.start(r, "function "+name, cmd); err != nil {
		return err
	}
	return l.waitReady(ctx, name, "http://127.0.0.1:"+strconv.Itoa(r.port))
}

// start starts cmd as the process of r; its exit, unless the landscape ended it, is reported
// on Exited as what's.
func (l *Landscape) start(r *replica, what string, cmd *exec.Cmd) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	r.cmd, r.done = cmd, done
	r.killed.Store(false)
	go func() {
		err := cmd.Wait()
		// Read before done is closed: once it is, Restart may start the next process on r and
		// clear the flag, and this process's kill would be reported as an unexpected exit.
		killed := r.killed.Load()
		close(done)
		if !killed {
			l.exited <- fmt.Errorf("%s exited: %w", what, err)
		}
	}()
	return nil
}

// Kill ends the first process of the named function with SIGKILL, as a node's failure or the
// OOM killer ends a pod: whatever it was doing stays half done. Its URL answers 502 for it
// until Restart.
func (l *Landscape) Kill(name string) error {
	svc, ok := l.services[name]
	if !ok {
		return fmt.Errorf("no function %s", name)
	}
	r := svc.replicas[0]
	r.killed.Store(true)
	if err := r.cmd.Process.Kill(); err != nil {
		return err
	}
	<-r.done
	return nil
}

// Restart starts the process Kill ended again, on its port, and waits until it is ready.
func (l *Landscape) Restart(ctx context.Context, name string) error {
	svc, ok := l.services[name]
	if !ok {
		return fmt.Errorf("no function %s", name)
	}
	return l.startReplica(ctx, svc.fn, svc.replicas[0])
}

func (l *Landscape) waitReady(ctx context.Context, name, url string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-l.exited:
			return err
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		resp, err := http.Get(url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
	return fmt.Errorf("function %s not ready at %s after 30s", name, url)
}

// StartSources starts the event sources for every function (pkg/localsources), with ping schedules
// overridden by schedules (PingSource name, e.g. "bastion-resync" → cron expression).
func (l *Landscape) StartSources(ctx context.Context, schedules map[string]string) error {
	if l.sources != nil {
		return errors.New("sources already started")
	}
	logger := l.opts.SourceLogger
	if logger == nil {
		logger = zap.NewNop().Sugar()
	}
	opts := localsources.Options{Config: l.Env.Config, Sinks: l.URLs, Schedules: schedules, Logger: logger, Faults: l.opts.Faults, FaultSeed: l.opts.FaultSeed,
		GardenInputs: map[string]string{"SEED_NAME": SeedName}, Tokens: l.tokens}
	if l.Shoot != nil {
		tenants, err := clients.New(clients.Options{Seed: l.Env.Client, Scheme: scheme.Gardener, SharedMapper: l.Env.Client.RESTMapper(), ConfigureREST: bootstrap.Unthrottled})
		if err != nil {
			return err
		}
		opts.Target = localsources.Target{Mode: function.PerSeed, Seed: l.Env.Client, Tenants: tenants, Interval: time.Second}
	}
	s, err := localsources.Start(ctx, l.opts.Functions, opts)
	if err != nil {
		return err
	}
	l.sources = s
	return nil
}

// Sources are the running sources (nil before StartSources).
func (l *Landscape) Sources() *localsources.Sources { return l.sources }

// StopSources stops the event sources.
func (l *Landscape) StopSources() error {
	if l.sources == nil {
		return nil
	}
	err := l.sources.Stop()
	l.sources = nil
	return err
}

// Exited reports a function process that ended while the landscape ran.
func (l *Landscape) Exited() <-chan error { return l.exited }

// Stop stops the sources, the functions (SIGTERM, as Knative does) and the control plane.
func (l *Landscape) Stop() error {
	errs := []error{l.StopSources()}
	var replicas []*replica
	if l.webhooks != nil && l.webhooks.cmd != nil {
		l.webhooks.killed.Store(true)
		_ = l.webhooks.cmd.Process.Signal(syscall.SIGTERM)
		replicas = append(replicas, &l.webhooks.replica)
	}
	for _, svc := range l.services {
		if svc.server != nil {
			_ = svc.server.Close()
		}
		for _, r := range svc.replicas {
			if r.cmd != nil {
				r.killed.Store(true) // an exit expected
				_ = r.cmd.Process.Signal(syscall.SIGTERM)
				replicas = append(replicas, r)
			}
		}
	}
	for _, r := range replicas {
		select {
		case <-r.done:
		case <-time.After(10 * time.Second):
		}
	}
	if l.stopSeed != nil {
		l.stopSeed()
	}
	if l.ChartRegistry != nil {
		l.ChartRegistry.Close()
	}
	if l.Env != nil {
		errs = append(errs, l.Env.Stop())
	}
	if l.Seed != nil {
		errs = append(errs, l.Seed.Stop())
	}
	if l.Shoot != nil {
		errs = append(errs, l.Shoot.Stop())
	}
	if l.BinPackingShoot != nil {
		errs = append(errs, l.BinPackingShoot.Stop())
	}
	if l.webhooks != nil {
		errs = append(errs, l.webhooks.serving.Cleanup())
	}
	return errors.Join(errs...)
}

func freePort() (int, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer listener.Close()
	return listener.Addr().(*net.TCPAddr).Port, nil
}
