package function

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/kelseyhightower/envconfig"
	"k8s.io/utils/clock"

	cmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/controllermanager/v1alpha1"

	"github.com/gardener-knative/gardener-knative/pkg/bootstrap"
	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/kube"
	"github.com/gardener-knative/gardener-knative/pkg/scheme"
)

// Config is the runtime's configuration, read from the environment (see docs/configuration.md):
// the settings every process shares, and the function's own.
type Config struct {
	bootstrap.Config
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
	bootstrap.Main("function "+fn.Name, func(ctx context.Context) error { return Run(ctx, fn) })
}

// Run serves fn with the configuration from the environment until ctx ends.
func Run(ctx context.Context, fn *Function) error {
	var cfg Config
	process, err := bootstrap.Start(&cfg, "function", fn.Name)
	if err != nil {
		return err
	}
	fnConfig, err := LoadConfig(fn, cfg.ControllerManagerConfig)
	if err != nil {
		return err
	}
	env := Env{Clock: clock.RealClock{}, Log: process.Log, Registry: process.Registry, Config: fnConfig}
	if env.Source, err = process.SourceClient(scheme.Gardener); err != nil {
		return err
	}
	if slices.Contains(fn.Clusters(), Target) {
		if env.TargetConfig, err = process.TargetRESTConfig(); err != nil {
			return fmt.Errorf("function %s works on a target cluster: %w", fn.Name, err)
		}
		if env.Target, err = kube.NewClient(env.TargetConfig, scheme.Gardener); err != nil {
			return err
		}
	}
	server, err := NewServer(fn, env, cfg.Options())
	if err != nil {
		return err
	}
	process.Log.Info("configured", "config", fnConfig)
	return process.Serve(ctx, server, bootstrap.ServeOptions{})
}
