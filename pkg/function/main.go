package function

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/kelseyhightower/envconfig"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	cmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/controllermanager/v1alpha1"

	"github.com/gardener-knative/gardener-knative/pkg/bootstrap"
	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/eventauth"
	"github.com/gardener-knative/gardener-knative/pkg/kube"
	"github.com/gardener-knative/gardener-knative/pkg/scheme"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/clients"
)

// Config is the runtime's configuration, read from the environment (see docs/configuration.md):
// the settings every process shares, and the function's own.
type Config struct {
	bootstrap.Config
	// ControllerManagerConfig is a ControllerManagerConfiguration file the functions read
	// their part of (Gardener's defaults apply to what it leaves out).
	ControllerManagerConfig string `envconfig:"CONTROLLER_MANAGER_CONFIG"`
	// ResourceManagerConfig is a ResourceManagerConfiguration file GRM's functions read their
	// part of, leniently (the webhook server reads the same file the same way).
	ResourceManagerConfig string `envconfig:"RESOURCE_MANAGER_CONFIG"`
	// GardenKubeconfig reaches the garden, the Source of a function that works on it
	// (Function.WorksOnGarden), as gardenlet's gardenClientConnection does; the cluster of
	// KUBECONFIG (else the one it runs in) is then its Target, as gardenlet's seed.
	GardenKubeconfig string `envconfig:"GARDEN_KUBECONFIG"`
	// GardenKubeconfigData is the garden's kubeconfig itself, in place of GARDEN_KUBECONFIG's
	// file: config/ passes it from the Secret garden-access as an environment variable, so that
	// the pod of a function that works on the garden mounts no volume. The kubelet starts a pod's
	// containers only after it has seen every volume mounted, which it checks every 0.3 s: a
	// wake from zero of a pod with a volume starts that much later (docs/cluster.md).
	GardenKubeconfigData string `envconfig:"GARDEN_KUBECONFIG_DATA"`
	// MULTI_TENANT and the other tenant settings serve a function with a Target per seed.
	clients.Tenancy
	// TenantIdleConnTimeout closes a tenant's connections after that long without a request. A
	// function reaches a shoot in bursts (its sweep's lists and writes, an event's reconcile), a
	// minute or more apart; a connection kept open between them costs about 150 KiB per shoot in
	// each per-seed function (docs/testing.md, "Idle tenant connections closed").
	TenantIdleConnTimeout time.Duration `envconfig:"TENANT_IDLE_CONN_TIMEOUT" default:"10s"`
	// EventTimeout is one event's budget. The Broker acknowledges the source at once and
	// delivers asynchronously, so a slow event holds back nothing but its own slot; a budget
	// shorter than a loaded reconcile only makes the Broker send it again and the work be done
	// twice. Gardener bounds a reconcile by its controller's ReconciliationTimeout (GRM's
	// ManagedResource and health controllers: their sync period, 1m for a shoot's health);
	// below the Service's timeoutSeconds (300 s), so that the Broker gets our 503, not
	// queue-proxy's.
	EventTimeout     time.Duration `envconfig:"EVENT_TIMEOUT" default:"1m"`
	SweepTimeout     time.Duration `envconfig:"SWEEP_TIMEOUT" default:"4m"`
	SweepConcurrency int           `envconfig:"SWEEP_CONCURRENCY" default:"8"`
	ListPageSize     int64         `envconfig:"LIST_PAGE_SIZE" default:"500"`
	ConflictRetries  int           `envconfig:"CONFLICT_RETRIES" default:"3"`
	// ReleaseMemoryAfterSweep: Options.ReleaseMemoryAfterSweep (docs/configuration.md).
	ReleaseMemoryAfterSweep bool `envconfig:"RELEASE_MEMORY_AFTER_SWEEP" default:"true"`
	// TenantMaxInFlight: Options.TenantMaxInFlight, per seed only (DefaultTenantMaxInFlight says
	// why 5; 0 turns the bound off).
	TenantMaxInFlight int `envconfig:"TENANT_MAX_IN_FLIGHT" default:"5"`
	// TenantLendBelow: Options.TenantLendBelow (DefaultTenantLendBelow says why 15).
	TenantLendBelow int `envconfig:"TENANT_LEND_BELOW" default:"15"`
	// EVENT_AUDIENCE and EVENT_SENDERS: who may send the function events (pkg/eventauth).
	eventauth.Policy
}

// Options returns the runtime options of the configuration.
func (c Config) Options() Options {
	return Options{
		EventTimeout:     c.EventTimeout,
		SweepTimeout:     c.SweepTimeout,
		SweepConcurrency: c.SweepConcurrency,
		ListPageSize:     c.ListPageSize,
		ConflictRetries:  c.ConflictRetries,

		ReleaseMemoryAfterSweep: c.ReleaseMemoryAfterSweep,
		TenantMaxInFlight:       c.TenantMaxInFlight,
		TenantLendBelow:         c.TenantLendBelow,
	}
}

// ControllerManagerConfig is implemented by function configurations that take their defaults
// from Gardener's ControllerManagerConfiguration.
type ControllerManagerConfig interface {
	FromControllerManager(cm *cmv1alpha1.ControllerManagerConfiguration)
}

// ResourceManagerConfig is implemented by function configurations that take their defaults
// from Gardener's ResourceManagerConfiguration (GRM's functions).
type ResourceManagerConfig interface {
	FromResourceManager(rm *componentconfig.ResourceManagerFile)
}

// ComponentConfigs name the Gardener component configuration files a function reads its part
// of; empty names give Gardener's defaults.
type ComponentConfigs struct {
	ControllerManager, ResourceManager string
	// Role is the resource manager a GRM function stands in for: without a ResourceManager file,
	// its defaults are those gardenlet gives that resource manager (a shoot's or the seed's),
	// or with NoRole those of Gardener's API.
	Role componentconfig.Role
}

// ComponentConfigsOf names the files of the configuration, with the role of a process in this
// configuration's mode: serving shoots (per seed, or one target), else the seed itself.
func (c Config) ComponentConfigsOf() ComponentConfigs {
	return ComponentConfigs{
		ControllerManager: c.ControllerManagerConfig, ResourceManager: c.ResourceManagerConfig,
		Role: componentconfig.RoleOf(c.MultiTenant, c.TargetKubeconfig != "" || c.onGarden()),
	}
}

// LoadConfig returns the function's configuration: a fresh value of its Config's type, filled
// from its part of the component configuration file its type reads (Gardener's defaults
// applied; the defaults alone when the file is not named), then from the environment, whose
// variables win. Nil when the function declares no Config.
func LoadConfig(fn *Function, files ComponentConfigs) (any, error) {
	cfg := newConfig(fn.Config)
	if cfg == nil {
		return nil, nil
	}
	if fromCM, ok := cfg.(ControllerManagerConfig); ok {
		cm, err := componentconfig.ControllerManager(files.ControllerManager)
		if err != nil {
			return nil, err
		}
		fromCM.FromControllerManager(cm)
	}
	if fromRM, ok := cfg.(ResourceManagerConfig); ok {
		rm, err := componentconfig.ResourceManagerFor(files.Role, files.ResourceManager)
		if err != nil {
			return nil, err
		}
		for _, unknown := range rm.Unknown {
			slog.Warn("component configuration: field ignored", "file", files.ResourceManager, "error", unknown)
		}
		for _, renamed := range rm.Renamed {
			slog.Warn("component configuration: the specification's key honoured", "file", files.ResourceManager, "key", renamed)
		}
		fromRM.FromResourceManager(rm)
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
	fnConfig, err := LoadConfig(fn, cfg.ComponentConfigsOf())
	if err != nil {
		return err
	}
	env := Env{Clock: clock.RealClock{}, Log: process.Log, Registry: process.Registry, Config: fnConfig}
	var rates tenantRates
	var sourceOpts []bootstrap.ClientOption
	if cfg.MultiTenant {
		if rates, err = tenantRatesOf(cfg); err != nil {
			return err
		}
		sourceOpts = append(sourceOpts, rates.seed.Apply)
	}
	if cfg.onGarden() {
		return runOnGarden(ctx, fn, env, process, cfg)
	}
	if env.Source, err = process.SourceClient(scheme.Gardener, sourceOpts...); err != nil {
		return err
	}
	if slices.Contains(fn.Clusters(), Target) {
		if err := targetEnv(&env, process, cfg, rates.shoot); err != nil {
			return fmt.Errorf("function %s works on a target cluster: %w", fn.Name, err)
		}
	}
	return serve(ctx, fn, env, process, cfg)
}

// onGarden says that the process is given the garden's kubeconfig, as a file or as its content.
func (c Config) onGarden() bool { return c.GardenKubeconfig != "" || c.GardenKubeconfigData != "" }

// gardenRESTConfig is the counted REST configuration of the garden of GARDEN_KUBECONFIG or
// GARDEN_KUBECONFIG_DATA, which exclude each other. The first 401 Unauthorized the garden answers
// stops the process (stop, with errGardenRefusedCredentials).
func (c Config) gardenRESTConfig(process *bootstrap.Process, stop context.CancelCauseFunc) (*rest.Config, error) {
	var garden *rest.Config
	var err error
	switch {
	case c.GardenKubeconfig != "" && c.GardenKubeconfigData != "":
		return nil, fmt.Errorf("both GARDEN_KUBECONFIG and GARDEN_KUBECONFIG_DATA are set: give the garden's kubeconfig one way")
	case c.GardenKubeconfigData != "":
		garden, err = process.RESTConfigOfData([]byte(c.GardenKubeconfigData))
	default:
		garden, err = process.RESTConfigOf(c.GardenKubeconfig)
	}
	if err != nil {
		return nil, err
	}
	kube.OnUnauthorized(garden, func() { stop(errGardenRefusedCredentials) })
	return garden, nil
}

// errGardenRefusedCredentials ends a function whose garden no longer takes its credentials. The
// function reads its garden kubeconfig once, when its container starts, and the kubelet resolves
// the environment from the Secret garden-access at every start of a container: exiting is how a
// pod that outlives an operator's rotation of that Secret takes the new kubeconfig, where serving
// on would refuse every event until the pod went away.
var errGardenRefusedCredentials = errors.New("the garden answered 401 Unauthorized: exiting, so that the container starts again with the current kubeconfig of the Secret " + GardenAccessSecret)

// runOnGarden serves a function that works on the garden with the garden (GARDEN_KUBECONFIG or
// GARDEN_KUBECONFIG_DATA) as its Source and, if it has a Target, the cluster of KUBECONFIG (else
// the one it runs in) as that.
func runOnGarden(ctx context.Context, fn *Function, env Env, process *bootstrap.Process, cfg Config) error {
	if !fn.WorksOnGarden {
		return fmt.Errorf("the garden's kubeconfig is set (GARDEN_KUBECONFIG or GARDEN_KUBECONFIG_DATA), but function %s does not work on the garden: its Source is the cluster of KUBECONFIG", fn.Name)
	}
	if cfg.MultiTenant || cfg.TargetKubeconfig != "" {
		return fmt.Errorf("function %s works on the garden: its Target is the cluster of KUBECONFIG, unset MULTI_TENANT and TARGET_KUBECONFIG", fn.Name)
	}
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	garden, err := cfg.gardenRESTConfig(process, stop)
	if err != nil {
		return fmt.Errorf("the garden: %w", err)
	}
	if env.Source, err = kube.NewClient(garden, scheme.Gardener); err != nil {
		return fmt.Errorf("the garden: %w", err)
	}
	if slices.Contains(fn.Clusters(), Target) {
		if env.TargetConfig, err = process.SourceRESTConfig(); err != nil {
			return err
		}
		if env.Target, err = kube.NewClient(env.TargetConfig, scheme.Gardener); err != nil {
			return err
		}
	}
	if err := serve(ctx, fn, env, process, cfg); err != nil {
		return err
	}
	if cause := context.Cause(ctx); errors.Is(cause, errGardenRefusedCredentials) {
		return cause
	}
	return nil
}

func serve(ctx context.Context, fn *Function, env Env, process *bootstrap.Process, cfg Config) error {
	server, err := NewServer(fn, env, cfg.Options())
	if err != nil {
		return err
	}
	process.Log.Info("configured", "config", env.Config, "mode", server.Mode(), "onGarden", cfg.onGarden())
	handler, err := authenticated(server, process, cfg.Policy)
	if err != nil {
		return err
	}
	return process.Serve(ctx, handler, bootstrap.ServeOptions{})
}

// authenticated serves app only to the senders of config, whose tokens the cluster the process
// runs in (where Knative issues them) reviews; all senders when config names no audience.
func authenticated(app http.Handler, process *bootstrap.Process, config eventauth.Policy) (http.Handler, error) {
	if !config.Enabled() {
		process.Log.Warn("event senders are not authenticated: EVENT_AUDIENCE is not set")
		return app, nil
	}
	cfg, err := process.SourceRESTConfig()
	if err != nil {
		return nil, err
	}
	reviews, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	auth, err := eventauth.New(config, func(ctx context.Context, tr *authenticationv1.TokenReview) (*authenticationv1.TokenReview, error) {
		return reviews.AuthenticationV1().TokenReviews().Create(ctx, tr, metav1.CreateOptions{})
	}, clock.RealClock{}, process.Registry)
	if err != nil {
		return nil, err
	}
	process.Log.Info("event senders are authenticated", "audience", config.Audience, "senders", config.Senders)
	return auth.Wrap(app), nil
}

// tenantRates are the client-side rate limits of a per-seed deployment's tenants: each tenant's
// requests to the seed and to its shoot are limited as the shoot's own resource manager limits
// them (its sourceClientConnection and targetClientConnection: the ResourceManagerConfiguration
// file, else gardenlet's, whose QPS and burst are Gardener's defaults, 100 and 130), each
// tenant on its own; KUBE_API_QPS and KUBE_API_BURST bound all of the process's seed requests
// together.
type tenantRates struct {
	seed  kube.TenantRateLimits
	shoot kube.Rate
}

func tenantRatesOf(cfg Config) (tenantRates, error) {
	files := cfg.ComponentConfigsOf()
	rm, err := componentconfig.ResourceManagerFor(files.Role, files.ResourceManager)
	if err != nil {
		return tenantRates{}, err
	}
	source := rm.SourceClientConnection.ClientConnectionConfiguration
	// Without a targetClientConnection, Gardener's resource manager reaches its target with
	// the source's settings.
	target := source
	if rm.TargetClientConnection != nil {
		target = rm.TargetClientConnection.ClientConnectionConfiguration
	}
	return tenantRates{
		seed: kube.TenantRateLimits{
			PerTenant: kube.Rate{QPS: source.QPS, Burst: int(source.Burst)},
			Shared:    kube.Rate{QPS: cfg.QPS, Burst: cfg.Burst},
			IsTenant:  func(namespace string) bool { return tenant.Valid(namespace, cfg.TenantPrefix) },
		},
		shoot: kube.Rate{QPS: target.QPS, Burst: int(target.Burst)},
	}, nil
}

// targetEnv sets up the Target of env in the mode the configuration asks for: per seed with
// MULTI_TENANT (each tenant's shoot client limited to shootRate), single-target with
// TARGET_KUBECONFIG, else seed mode (the Source is the Target).
func targetEnv(env *Env, process *bootstrap.Process, cfg Config, shootRate kube.Rate) error {
	var err error
	switch {
	case cfg.MultiTenant:
		if cfg.TargetKubeconfig != "" {
			return fmt.Errorf("MULTI_TENANT serves every shoot of the seed; TARGET_KUBECONFIG names one target: set one of them")
		}
		env.TenantPrefix = cfg.TenantPrefix
		env.Tenants, err = clients.New(clients.Options{
			Seed: env.Source, Scheme: scheme.Gardener, AccessSecret: cfg.TenantAccessSecret,
			SharedMapper: env.Source.RESTMapper(), Size: cfg.TenantCacheSize, TTL: cfg.TenantCacheTTL,
			Log: process.Log, ConfigureREST: process.CountedAndLimitedTo(shootRate),
			IdleConnTimeout: cfg.TenantIdleConnTimeout,
		})
		return err
	case cfg.TargetKubeconfig != "":
		if env.TargetConfig, err = process.TargetRESTConfig(); err != nil {
			return err
		}
		env.Target, err = kube.NewClient(env.TargetConfig, scheme.Gardener)
		return err
	default:
		// Seed mode: Helm and the like get the Source's configuration as the Target's.
		env.TargetConfig, err = process.SourceRESTConfig()
		return err
	}
}
