package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"go.uber.org/zap"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/gardener-knative/gardener-knative/functions"
	"github.com/gardener-knative/gardener-knative/pkg/bootstrap"
	"github.com/gardener-knative/gardener-knative/pkg/clustersource"
	"github.com/gardener-knative/gardener-knative/pkg/configgen"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kube"
	"github.com/gardener-knative/gardener-knative/pkg/localsources"
	"github.com/gardener-knative/gardener-knative/pkg/scheme"
	"github.com/gardener-knative/gardener-knative/pkg/serve"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/clients"
)

// perSeedFunctions are the per-seed deployment's functions, as config/ deploys them: every
// function of the registry deployed per seed (GRM's controllers that serve the shoots of a seed,
// and the one that keeps their registrations' CA bundles).
var perSeedFunctions = func() []string {
	var names []string
	for _, fn := range functions.All {
		if fn.DeploymentMode() == function.PerSeed {
			names = append(names, fn.Name)
		}
	}
	return names
}()

// periodic are the PingSources of the sweeps whose period the benchmark sets (-period): the
// ManagedResource controller's sync and the health controller's. The others keep the shoot
// role's schedules, as Gardener's keep gardenlet's.
var periodic = []string{"managedresource-sync", "health-health", "health-progressing"}

// webhookServer is our resource manager's webhook server, served per seed too.
const webhookServer = "resource-manager"

// Our processes reach the seed as these users (the audit log tells them apart); at the shoots
// they are the shoot's resource manager's ServiceAccount, whose token gardenlet keeps in the
// tenant's access Secret.
const (
	oursSeedUser   = "gardener-knative"
	oursSourceUser = "gardener-knative-source"
	oursShootUser  = "system:serviceaccount:kube-system:gardener-resource-manager"
)

// buildOurs builds the per-seed functions and the webhook server into dir, as ko builds them.
func buildOurs(ctx context.Context, dir string) error {
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", dir+string(filepath.Separator))
	for _, name := range perSeedFunctions {
		build.Args = append(build.Args, configgen.ModulePath+"/functions/"+name)
	}
	build.Args = append(build.Args, configgen.ModulePath+"/webhooks/"+webhookServer)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %w\n%s", err, out)
	}
	return nil
}

// startOurs starts the per-seed deployment as processes: each function, the webhook server and
// the event plumbing (the Broker and the seed's cluster source, this program run as a process
// of its own for each), with the sync period for every sweep that has one.
func (r *run) startOurs(ctx context.Context) ([]*process, error) {
	var procs []*process
	fail := func(err error) ([]*process, error) {
		for _, p := range procs {
			p.stop()
		}
		return nil, err
	}
	seedKubeconfig := filepath.Join(r.dir, "ours-seed-kubeconfig")
	if err := r.seedKubeconfig(oursSeedUser, seedKubeconfig); err != nil {
		return nil, err
	}
	sinks := map[string]string{}
	for _, name := range perSeedFunctions {
		port, err := freePort()
		if err != nil {
			return fail(err)
		}
		cmd := exec.Command(filepath.Join(r.opts.binDir, name))
		cmd.Env = append(r.oursEnviron(), "PORT="+strconv.Itoa(port), "KUBECONFIG="+seedKubeconfig, "MULTI_TENANT=true", "LOG_LEVEL=warn", "ENABLE_PROFILING=true",
			"MANAGED_RESOURCE_SYNC_PERIOD="+r.opts.period.String(), "HEALTH_SYNC_PERIOD="+r.opts.period.String())
		p, err := start(name, cmd, filepath.Join(r.dir, "ours-"+name+".log"))
		if err != nil {
			return fail(err)
		}
		procs = append(procs, p)
		url := "http://127.0.0.1:" + strconv.Itoa(port)
		if r.functionURLs == nil {
			r.functionURLs = map[string]string{}
		}
		r.functionURLs[name] = url
		r.profile(name, url)
		if err := p.waitReady(ctx, url+"/readyz", time.Minute); err != nil {
			return fail(err)
		}
		front, err := queueProxy(url, configgen.FunctionContainerConcurrency)
		if err != nil {
			return fail(err)
		}
		r.fronts = append(r.fronts, front)
		sinks[name] = "http://" + front.Addr
	}

	serving := &envtest.WebhookInstallOptions{LocalServingHost: "127.0.0.1"}
	if err := serving.PrepWithoutInstalling(); err != nil {
		return fail(err)
	}
	cmd := exec.Command(filepath.Join(r.opts.binDir, webhookServer))
	cmd.Env = append(r.oursEnviron(), "PORT="+strconv.Itoa(serving.LocalServingPort), "KUBECONFIG="+seedKubeconfig, "MULTI_TENANT=true", "LOG_LEVEL=warn",
		"TLS_CERT_FILE="+filepath.Join(serving.LocalServingCertDir, "tls.crt"), "TLS_KEY_FILE="+filepath.Join(serving.LocalServingCertDir, "tls.key"))
	p, err := start(webhooksProcess, cmd, filepath.Join(r.dir, "ours-webhooks.log"))
	if err != nil {
		return fail(err)
	}
	procs = append(procs, p)

	self, err := os.Executable()
	if err != nil {
		return fail(err)
	}
	brokerPort, err := freePort()
	if err != nil {
		return fail(err)
	}
	brokerAddr := "127.0.0.1:" + strconv.Itoa(brokerPort)
	brokerDebug, err := r.debugAddr(brokerProcess)
	if err != nil {
		return fail(err)
	}
	spec, err := json.Marshal(brokerSpec{Sinks: sinks, Addr: brokerAddr, Debug: brokerDebug})
	if err != nil {
		return fail(err)
	}
	cmd = exec.Command(self)
	cmd.Env = append(os.Environ(), profileRate, brokerRoleEnv+"="+string(spec))
	p, err = start(brokerProcess, cmd, filepath.Join(r.dir, "ours-broker.log"))
	if err != nil {
		return fail(err)
	}
	procs = append(procs, p)
	if err := p.waitReady(ctx, "http://"+brokerAddr+brokerHealthPath, time.Minute); err != nil {
		return fail(err)
	}

	sourceKubeconfig := filepath.Join(r.dir, "ours-source-kubeconfig")
	if err := r.seedKubeconfig(oursSourceUser, sourceKubeconfig); err != nil {
		return fail(err)
	}
	schedules := map[string]string{}
	for _, name := range periodic {
		schedules[name] = function.ScheduleEvery(r.opts.period)
	}
	sourceDebug, err := r.debugAddr(sourceProcess)
	if err != nil {
		return fail(err)
	}
	spec, err = json.Marshal(sourceSpec{Broker: "http://" + brokerAddr, Schedules: schedules, Debug: sourceDebug})
	if err != nil {
		return fail(err)
	}
	cmd = exec.Command(self)
	cmd.Env = append(r.oursEnviron(), sourceRoleEnv+"="+string(spec), "KUBECONFIG="+sourceKubeconfig)
	p, err = start(sourceProcess, cmd, filepath.Join(r.dir, "ours-source.log"))
	if err != nil {
		return fail(err)
	}
	procs = append(procs, p)
	return procs, nil
}

// The names of our processes in the figures besides the functions': the webhook server, and the
// event plumbing's two, as in a cluster: the source (the cluster sources' watchers and the
// PingSources, one pod per seed) and the Broker (Knative's, shared by every function; here
// pkg/localsources' stand-in).
const (
	webhooksProcess = "webhooks"
	sourceProcess   = "source"
	brokerProcess   = "broker"
)

// servingProcesses are our processes that serve the shoots: the functions and the webhook server.
func servingProcesses() []string {
	return append(append([]string{}, perSeedFunctions...), webhooksProcess)
}

// profiledProcesses are the processes whose heap is profiled: the functions and the plumbing
// (the webhook server serves only TLS here, and its heap does not grow with shoots).
func profiledProcesses() []string {
	return append(append([]string{}, perSeedFunctions...), sourceProcess, brokerProcess)
}

// sourceRoleEnv and brokerRoleEnv, when set, make this program a process of our event plumbing
// (runSource, runBroker) instead of the benchmark; they hold its spec.
const (
	sourceRoleEnv = "BENCHSEED_SOURCE"
	brokerRoleEnv = "BENCHSEED_BROKER"
)

// sourceSpec is where the source sends (the Broker's URL), the PingSources' schedules, and
// where it serves Go's profiles.
type sourceSpec struct {
	Broker    string            `json:"broker"`
	Schedules map[string]string `json:"schedules"`
	Debug     string            `json:"debug"`
}

// brokerSpec is where the Broker listens, the functions' URLs it delivers to, and where it
// serves Go's profiles.
type brokerSpec struct {
	Sinks map[string]string `json:"sinks"`
	Addr  string            `json:"addr"`
	Debug string            `json:"debug"`
}

// profileRate makes a process sample one allocation per 64 KiB for its heap profile instead of
// Go's 512 KiB: a process with a live heap of 2 MiB would otherwise hold no sample at all now and
// then, and call sites could not be told apart between runs.
const profileRate = "GODEBUG=memprofilerate=65536"

// oursEnviron is the environment every process of ours starts from.
func (r *run) oursEnviron() []string {
	return append(append(os.Environ(), profileRate), r.opts.oursEnv...)
}

// profile records where process name serves Go's profiles.
func (r *run) profile(name, url string) {
	if r.profileURLs == nil {
		r.profileURLs = map[string]string{}
	}
	r.profileURLs[name] = url
}

// debugAddr is a loopback address for a plumbing process's profiles, recorded for it.
func (r *run) debugAddr(name string) (string, error) {
	port, err := freePort()
	if err != nil {
		return "", err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	r.profile(name, "http://"+addr)
	return addr, nil
}

// serveProfiles serves Go's profiles at addr until the process ends, as our functions do with
// ENABLE_PROFILING.
func serveProfiles(addr string) {
	mux := http.NewServeMux()
	serve.HandleProfiles(mux)
	server := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = server.ListenAndServe() }()
}

// brokerHealthPath answers 200 once the Broker listens; every other path is its ingress.
const brokerHealthPath = "/healthz"

// runBroker serves the Broker of the per-seed functions' Triggers (pkg/localsources, with
// Knative's filters and delivery) until SIGTERM.
func runBroker(raw string) error {
	var spec brokerSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		return fmt.Errorf("%s: %w", brokerRoleEnv, err)
	}
	serveProfiles(spec.Debug)
	fns, err := perSeed()
	if err != nil {
		return err
	}
	logger, err := zap.NewProduction(zap.IncreaseLevel(zap.WarnLevel))
	if err != nil {
		return err
	}
	broker, err := localsources.NewBrokerFor(fns, function.PerSeed, spec.Sinks, logger.Sugar())
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc(brokerHealthPath, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.Handle("/", broker)
	server := &http.Server{Addr: spec.Addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		<-ctx.Done()
		_ = server.Close()
	}()
	if err := server.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// perSeed is the declarations of perSeedFunctions.
func perSeed() ([]*function.Function, error) {
	var fns []*function.Function
	for _, name := range perSeedFunctions {
		fn, ok := functions.ByName(name)
		if !ok {
			return nil, errors.New("no function " + name)
		}
		fns = append(fns, fn)
	}
	return fns, nil
}

// runSource runs the cluster sources for the seed and every tenant (our watchers) and the
// PingSources (pkg/localsources), sending to the Broker, until SIGTERM: in a cluster, the one
// source pod per seed.
func runSource(raw string) error {
	var spec sourceSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		return fmt.Errorf("%s: %w", sourceRoleEnv, err)
	}
	clustersource.SetGCPercent()
	serveProfiles(spec.Debug)
	cfg, err := ctrlconfig.GetConfig()
	if err != nil {
		return err
	}
	bootstrap.Unthrottled(cfg)
	seed, err := kube.NewClient(cfg, scheme.Gardener)
	if err != nil {
		return err
	}
	tenants, err := clients.New(clients.Options{Seed: seed, Scheme: scheme.Gardener, SharedMapper: seed.RESTMapper(), ConfigureREST: bootstrap.Unthrottled})
	if err != nil {
		return err
	}
	fns, err := perSeed()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	logger, err := zap.NewProduction(zap.IncreaseLevel(zap.WarnLevel))
	if err != nil {
		return err
	}
	s, err := localsources.Start(ctx, fns, localsources.Options{
		Config: cfg, BrokerURL: spec.Broker, Schedules: spec.Schedules, Logger: logger.Sugar(),
		Target: localsources.Target{Mode: function.PerSeed, Seed: seed, Tenants: tenants, Prefix: tenant.DefaultPrefix, Interval: tenantDiscoveryInterval},
	})
	if err != nil {
		return err
	}
	<-ctx.Done()
	return s.Stop()
}

// tenantDiscoveryInterval is the cluster source's default (TENANT_DISCOVERY_INTERVAL).
const tenantDiscoveryInterval = 10 * time.Second

// queueProxy stands for Knative's queue-proxy in front of a function's pod: at most
// concurrency requests reach it at once (containerConcurrency, as config/ sets it); the others
// wait here, not inside the function's time bound.
func queueProxy(target string, concurrency int) (*http.Server, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	slots := make(chan struct{}, concurrency)
	server := &http.Server{Addr: listener.Addr().String(), ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		select {
		case slots <- struct{}{}:
		case <-req.Context().Done():
			return
		}
		defer func() { <-slots }()
		proxy.ServeHTTP(w, req)
	})}
	go func() { _ = server.Serve(listener) }()
	return server, nil
}
