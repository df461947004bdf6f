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
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gardener-knative/gardener-knative/pkg/kube"
	"github.com/gardener-knative/gardener-knative/pkg/scheme"
	"github.com/gardener-knative/gardener-knative/pkg/serve"
)

// Config is the runtime's configuration, read from the environment (see docs/configuration.md).
type Config struct {
	// Port is where CloudEvents, /healthz, /readyz and /metrics are served; Knative sets it.
	Port int `envconfig:"PORT" default:"8080"`
	kube.ClientConfig
	EventTimeout     time.Duration `envconfig:"EVENT_TIMEOUT" default:"30s"`
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

// Main runs fn until SIGTERM or SIGINT; it is all a function's main package calls.
func Main(fn Function) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := Run(ctx, fn); err != nil {
		slog.Error("function failed", "function", fn.Name(), "error", err)
		os.Exit(1)
	}
}

// Run serves fn with the configuration from the environment until ctx ends.
func Run(ctx context.Context, fn Function) error {
	var cfg Config
	if err := envconfig.Process("", &cfg); err != nil {
		return fmt.Errorf("reading configuration: %w", err)
	}
	log := NewLogger(cfg.LogLevel).With("function", fn.Name())
	// controller-runtime logs through its own logger; without one it complains once, loudly.
	ctrllog.SetLogger(logr.FromSlogHandler(log.Handler()))

	restCfg, err := cfg.RESTConfig()
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	kube.NewRequestCounter(reg).Instrument(restCfg)
	c, err := kube.NewClient(restCfg, scheme.Gardener)
	if err != nil {
		return err
	}
	reconciler, err := fn.New(Deps{Client: c, Clock: clock.RealClock{}, Log: log})
	if err != nil {
		return fmt.Errorf("configuring function %s: %w", fn.Name(), err)
	}
	server, err := NewServer(fn, reconciler, c, scheme.Gardener, cfg.Options(), log, reg)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/", server)
	return serve.Run(ctx, serve.Options{Addr: net.JoinHostPort("", strconv.Itoa(cfg.Port)), ShutdownTimeout: cfg.ShutdownTimeout}, mux, reg, log)
}

// NewLogger logs JSON lines to stdout, the way Knative's log collection expects them.
func NewLogger(level slog.Level) *slog.Logger {
	return slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: level}))
}
