// Package bootstrap is how every process of gardener-knative starts, functions and webhook
// servers alike: its configuration from the environment, a JSON logger (controller-runtime's
// included), a Prometheus registry that counts every API request, uncached API clients, and an
// HTTP server with health, metrics and a graceful shutdown on SIGTERM.
package bootstrap

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/kelseyhightower/envconfig"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gardener-knative/gardener-knative/pkg/kube"
	"github.com/gardener-knative/gardener-knative/pkg/serve"
)

// Version is the release a binary was built for: ko sets it from GARDENER_KNATIVE_VERSION
// (ko.yaml's ldflags; `make release VERSION=…` sets that), "devel" for any other build. A var,
// not a const: the linker's -X can only set variables.
var Version = "devel"

// Config is what every process reads from the environment (docs/configuration.md).
type Config struct {
	// Port is where the process serves; Knative sets it.
	Port int `envconfig:"PORT" default:"8080"`
	// The source cluster: KUBECONFIG, else the in-cluster configuration.
	kube.ClientConfig
	// TargetKubeconfig reaches the target cluster of the processes that have one.
	TargetKubeconfig string     `envconfig:"TARGET_KUBECONFIG"`
	LogLevel         slog.Level `envconfig:"LOG_LEVEL" default:"info"`
	// ShutdownTimeout bounds how long in-flight requests may finish after SIGTERM; Knative's
	// default termination grace period is 30s.
	ShutdownTimeout time.Duration `envconfig:"SHUTDOWN_TIMEOUT" default:"25s"`
	// EnableProfiling serves Go's profiles at /debug/pprof/ on the process's port, as a Gardener
	// component's debugging.enableProfiling does; off, since they tell whoever reaches the port
	// about the process's memory.
	EnableProfiling bool `envconfig:"ENABLE_PROFILING"`
}

// Base returns the common part of a configuration that embeds Config.
func (c *Config) Base() *Config { return c }

// Configuration is a process's configuration type: a struct that embeds Config.
type Configuration interface{ Base() *Config }

// Process is a started process: its configuration, logger and metrics.
type Process struct {
	Config   *Config
	Log      *slog.Logger
	Registry *prometheus.Registry
	// Requests counts every request of every client the process made with Client.
	Requests *kube.RequestCounter
}

// Main runs run until SIGTERM or SIGINT and exits 1 when it fails; all a main package calls.
// `<binary> --version` prints the component and its version instead.
func Main(component string, run func(ctx context.Context) error) {
	if len(os.Args) == 2 && os.Args[1] == "--version" {
		fmt.Println(component, Version)
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx); err != nil {
		slog.Error(component+" failed", "error", err)
		os.Exit(1)
	}
}

// Start reads the environment into cfg and sets up logging and metrics. attrs are added to
// every log line (e.g. "function", name).
func Start(cfg Configuration, attrs ...any) (*Process, error) {
	if err := envconfig.Process("", cfg); err != nil {
		return nil, fmt.Errorf("reading configuration: %w", err)
	}
	base := cfg.Base()
	log := slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: base.LogLevel})).With(attrs...)
	log.Info("starting", "version", Version)
	// controller-runtime logs through its own logger; without one it complains once, loudly.
	ctrllog.SetLogger(logr.FromSlogHandler(log.Handler()))
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return &Process{Config: base, Log: log, Registry: reg, Requests: kube.NewRequestCounter(reg)}, nil
}

// ClientOption adapts a client's REST configuration.
type ClientOption func(*rest.Config)

// Unthrottled turns client-go's client-side rate limit (KUBE_API_QPS, KUBE_API_BURST) off: for
// clients on a request path, such as admission webhooks, where each request reads once and
// the caller's own rate is the bound; queueing behind a token bucket only adds latency. The API
// server's priority and fairness still protects it.
func Unthrottled(cfg *rest.Config) { cfg.QPS, cfg.Burst, cfg.RateLimiter = -1, 0, nil }

// CountedAndLimited configures a REST configuration the process builds itself (a tenant's) as
// its own clients are: requests counted, and the client-side rate limit of KUBE_API_QPS and
// KUBE_API_BURST (client-go's default of 5 per second would queue a reconcile's reads).
func (p *Process) CountedAndLimited(cfg *rest.Config) {
	p.CountedAndLimitedTo(kube.Rate{QPS: p.Config.QPS, Burst: p.Config.Burst})(cfg)
}

// CountedAndLimitedTo is CountedAndLimited with a rate limit of its own (a tenant's).
func (p *Process) CountedAndLimitedTo(r kube.Rate) ClientOption {
	return func(cfg *rest.Config) {
		p.Requests.Instrument(cfg)
		cfg.QPS, cfg.Burst = r.QPS, r.Burst
	}
}

// SourceRESTConfig is the counted REST configuration of the source cluster, for clients the
// runtime does not build itself.
func (p *Process) SourceRESTConfig(opts ...ClientOption) (*rest.Config, error) {
	return p.restConfig(p.Config.ClientConfig, opts)
}

// SourceClient is an uncached, counted client of the source cluster.
func (p *Process) SourceClient(scheme *runtime.Scheme, opts ...ClientOption) (client.Client, error) {
	return p.client(p.Config.ClientConfig, scheme, opts)
}

// TargetClient is an uncached, counted client of the target cluster (TARGET_KUBECONFIG).
func (p *Process) TargetClient(scheme *runtime.Scheme, opts ...ClientOption) (client.Client, error) {
	restCfg, err := p.TargetRESTConfig(opts...)
	if err != nil {
		return nil, err
	}
	return kube.NewClient(restCfg, scheme)
}

// TargetRESTConfig is the counted REST configuration of the target cluster (TARGET_KUBECONFIG),
// for clients the runtime does not build itself (Helm's).
func (p *Process) TargetRESTConfig(opts ...ClientOption) (*rest.Config, error) {
	if p.Config.TargetKubeconfig == "" {
		return nil, fmt.Errorf("no target cluster: set TARGET_KUBECONFIG")
	}
	return p.RESTConfigOf(p.Config.TargetKubeconfig, opts...)
}

// RESTConfigOf is the counted REST configuration of the cluster of a kubeconfig file other than
// KUBECONFIG (the garden's, say), with the process's client settings.
func (p *Process) RESTConfigOf(kubeconfig string, opts ...ClientOption) (*rest.Config, error) {
	cfg := p.Config.ClientConfig
	cfg.Kubeconfig = kubeconfig
	return p.restConfig(cfg, opts)
}

// RESTConfigOfData is RESTConfigOf for a kubeconfig given as its content, not as a file.
func (p *Process) RESTConfigOfData(kubeconfig []byte, opts ...ClientOption) (*rest.Config, error) {
	cfg := p.Config.ClientConfig
	cfg.KubeconfigData = kubeconfig
	return p.restConfig(cfg, opts)
}

func (p *Process) client(cfg kube.ClientConfig, scheme *runtime.Scheme, opts []ClientOption) (client.Client, error) {
	restCfg, err := p.restConfig(cfg, opts)
	if err != nil {
		return nil, err
	}
	return kube.NewClient(restCfg, scheme)
}

func (p *Process) restConfig(cfg kube.ClientConfig, opts []ClientOption) (*rest.Config, error) {
	restCfg, err := cfg.RESTConfig()
	if err != nil {
		return nil, err
	}
	p.Requests.Instrument(restCfg)
	for _, opt := range opts {
		opt(restCfg)
	}
	return restCfg, nil
}

// ServeOptions add to what Serve serves by default (plain HTTP on PORT).
type ServeOptions struct {
	// TLSConfig serves TLS; nil serves plain HTTP.
	TLSConfig *tls.Config
	// Ready is told the listener's address once the server accepts connections.
	Ready func(net.Addr)
}

// Serve serves app beside /healthz, /readyz and /metrics until ctx ends, then shuts down
// gracefully.
func (p *Process) Serve(ctx context.Context, app http.Handler, opts ServeOptions, attrs ...any) error {
	mux := http.NewServeMux()
	mux.Handle("/", app)
	return serve.Run(ctx, serve.Options{
		Addr:            net.JoinHostPort("", strconv.Itoa(p.Config.Port)),
		TLSConfig:       opts.TLSConfig,
		ShutdownTimeout: p.Config.ShutdownTimeout,
		Profiling:       p.Config.EnableProfiling,
		Ready:           opts.Ready,
	}, mux, p.Registry, p.Log, attrs...)
}
