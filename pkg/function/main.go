package function

import (
	"context"
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
	"k8s.io/utils/clock"

	cmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/controllermanager/v1alpha1"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/kube"
	"github.com/gardener-knative/gardener-knative/pkg/scheme"
	"github.com/gardener-knative/gardener-knative/pkg/serve"
)

// Config is the runtime's configuration, read from the environment (see docs/configuration.md).
type Config struct {
	// Port is where CloudEvents, /healthz, /readyz and /metrics are served; Knative sets it.
	Port int `envconfig:"PORT" default:"8080"`
	kube.ClientConfig
	// TargetKubeconfig reaches the target cluster of functions that declare one.
	TargetKubeconfig string `envconfig:"TARGET_KUBECONFIG"`
	// ControllerManagerConfig is a ControllerManagerConfiguration file the functions read
	// their part of (Gardener's defaults apply to what it leaves out).
	ControllerManagerConfig string `envconfig:"CONTROLLER_MANAGER_CONFIG"`
	// EventTimeout is one event's budget. It is short because the adapter delivers one event
	// at a time per kind: a slow event would hold back the events behind it.
	EventTimeout     time.Duration `envconfig:"EVENT_TIMEOUT" default:"5s"`
	SweepTimeout     time.Duration `envconfig:"SWEEP_TIMEOUT" default:"4m"`
	SweepConcurrency int           `envconfig:"SWEEP_CONCURRENCY" default:"8"`
	ListPageSize     int64         `envconfig:"LIST_PAGE_SIZE" default:"500"`
	ConflictRetries  int           `envconfig:"CONFLICT_RETRIES" default:"3"`
	LogLevel         slog.Level    `envconfig:"LOG_LEVEL" default:"info"`
	// ShutdownTimeout bounds how long in-flight events may finish after SIGTERM; Knative's
	// default termination grace period is 30s.
	ShutdownTimeout time.Duration `envconfig:"SHUTDOWN_TIMEOUT" default:"25s"`
}

// Options returns the runtime options of the configuration.
func (c Config) Options() Options {
	return Options{
		EventTimeout:     c.EventTimeout,
		SweepTimeout:     c.SweepTimeout,
		SweepConcurrency: c.SweepConcurrency,
		ListPageSize:     c.ListPageSize,
		ConflictRetries:  c.ConflictRetries,
	}
}

// ControllerManagerConfig is implemented by function configurations that take their defaults
// from Gardener's ControllerManagerConfiguration.
type ControllerManagerConfig interface {
	FromControllerManager(cm *cmv1alpha1.ControllerManagerConfiguration)
}

// LoadConfig returns the function's configuration: a fresh value of its Config's type, filled
// from its part of the ControllerManagerConfiguration file at path (Gardener's defaults applied;
// none when path is empty), then from the environment, whose variables win. Nil when the
// function declares no Config.
func LoadConfig(fn *Function, path string) (any, error) {
	cfg := newConfig(fn.Config)
	if cfg == nil {
		return nil, nil
	}
	if fromCM, ok := cfg.(ControllerManagerConfig); ok {
		cm, err := componentconfig.ControllerManager(path)
		if err != nil {
			return nil, err
		}
		fromCM.FromControllerManager(cm)
	}
	if err := envconfig.Process("", cfg); err != nil {
		return nil, fmt.Errorf("reading the configuration of function %s: %w", fn.Name, err)
	}
	return cfg, nil
}

// Main runs fn until SIGTERM or SIGINT; it is all a function's main package calls.
func Main(fn *Function) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := Run(ctx, fn); err != nil {
		slog.Error("function failed", "function", fn.Name, "error", err)
		os.Exit(1)
	}
}

// Run serves fn with the configuration from the environment until ctx ends.
func Run(ctx context.Context, fn *Function) error {
	var cfg Config
	if err := envconfig.Process("", &cfg); err != nil {
		return fmt.Errorf("reading configuration: %w", err)
	}
	log := NewLogger(cfg.LogLevel).With("function", fn.Name)
	// controller-runtime logs through its own logger; without one it complains once, loudly.
	ctrllog.SetLogger(logr.FromSlogHandler(log.Handler()))

	fnConfig, err := LoadConfig(fn, cfg.ControllerManagerConfig)
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	counter := kube.NewRequestCounter(reg)
	env := Env{Clock: clock.RealClock{}, Log: log, Registry: reg, Config: fnConfig}
	for _, c := range fn.Clusters() {
		clientCfg := cfg.ClientConfig
		if c == Target {
			if cfg.TargetKubeconfig == "" {
				return fmt.Errorf("function %s works on a target cluster: set TARGET_KUBECONFIG", fn.Name)
			}
			clientCfg.Kubeconfig = cfg.TargetKubeconfig
		}
		restCfg, err := clientCfg.RESTConfig()
		if err != nil {
			return err
		}
		counter.Instrument(restCfg)
		cl, err := kube.NewClient(restCfg, scheme.Gardener)
		if err != nil {
			return err
		}
		if c == Target {
			env.Target = cl
		} else {
			env.Source = cl
		}
	}
	server, err := NewServer(fn, env, cfg.Options())
	if err != nil {
		return err
	}
	log.Info("configured", "config", fnConfig)
	mux := http.NewServeMux()
	mux.Handle("/", server)
	return serve.Run(ctx, serve.Options{Addr: net.JoinHostPort("", strconv.Itoa(cfg.Port)), ShutdownTimeout: cfg.ShutdownTimeout}, mux, reg, log)
}

// NewLogger logs JSON lines to stdout, the way Knative's log collection expects them.
func NewLogger(level slog.Level) *slog.Logger {
	return slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: level}))
}
