// Package localsources runs Knative's real ApiServerSource adapter and PingSource runner
// in-process, configured from the very objects config/ deploys (sources.Objects), sending to an
// in-process Broker that routes with the generated Triggers through Knative's own filter code, so
// that a local landscape and the end-to-end tests deliver exactly the events a Knative cluster
// would, with the same encoding, attributes, routing, retries and (lack of) replay.
package localsources

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
	"go.uber.org/zap"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"knative.dev/eventing/pkg/adapter/apiserver"
	"knative.dev/eventing/pkg/adapter/mtping"
	"knative.dev/eventing/pkg/adapter/v2"
	eventingv1 "knative.dev/eventing/pkg/apis/eventing/v1"
	sourcesv1 "knative.dev/eventing/pkg/apis/sources/v1"
	"knative.dev/pkg/apis"
	kubeclient "knative.dev/pkg/client/injection/kube/client"
	"knative.dev/pkg/injection/clients/dynamicclient"
	"knative.dev/pkg/logging"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/targetsource"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/clients"
	"github.com/gardener-knative/gardener-knative/sources"
)

// Options configure the local sources.
type Options struct {
	// Config reaches the kube-apiserver the ApiServerSource adapter watches.
	Config *rest.Config
	// Sinks maps a function's name to the URL its Trigger delivers to.
	Sinks map[string]string
	// Schedules overrides ping schedules by PingSource name, e.g. "bastion-resync" (tests
	// sweep every second).
	Schedules map[string]string
	Logger    *zap.SugaredLogger
	// Target is how the functions' Targets are served; its Mode picks the plumbing
	// (sources.ObjectsFor). Empty without Target watches.
	Target Target
}

// Target is the functions' Target: the mode, and what the target source watches in it.
type Target struct {
	Mode function.Mode
	// Single is the cluster of a single-target deployment.
	Single *rest.Config
	// Seed, Tenants and Prefix find and reach the tenants per seed; Interval is how often they
	// are discovered anew.
	Seed     client.Reader
	Tenants  *clients.Clients
	Prefix   string
	Interval time.Duration
}

// Sources are running local sources.
type Sources struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	errMu  sync.Mutex
	errs   []error
	// Broker is the in-process Broker the sources send to.
	Broker *Broker
}

// Start runs the event plumbing of fns (sources.Objects) until ctx ends or Stop is called:
// Knative's ApiServerSource adapter for the cluster and its PingSource runner, both sending to
// an in-process Broker that routes by the generated Triggers with Knative's own filter code.
func Start(ctx context.Context, fns []*function.Function, opts Options) (*Sources, error) {
	mode := opts.Target.Mode
	if mode == "" {
		mode = function.PerSeed
	}
	objs, err := sources.ObjectsFor(fns, mode)
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(opts.Config)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(opts.Config)
	if err != nil {
		return nil, err
	}
	var triggers []*eventingv1.Trigger
	for _, obj := range objs {
		if t, ok := obj.(*eventingv1.Trigger); ok {
			triggers = append(triggers, t)
		}
	}
	broker, err := NewBroker(triggers, opts.Sinks, opts.Logger)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	ctx = logging.WithLogger(ctx, opts.Logger)
	ctx = context.WithValue(ctx, kubeclient.Key{}, kubernetes.Interface(kube))
	ctx = context.WithValue(ctx, dynamicclient.Key{}, dynamic.Interface(dyn))
	ctx = context.WithValue(ctx, apiserver.Key{}, opts.Config.Host)
	s := &Sources{cancel: cancel, Broker: broker}
	brokerURL, stopBroker, err := broker.Serve()
	if err != nil {
		cancel()
		return nil, err
	}
	s.run(func() error { <-ctx.Done(); return stopBroker() })

	// No sink timeout, as the adapter's controller configures it (the runner warns otherwise).
	runner := mtping.NewCronJobsRunner(adapter.ClientConfig{Env: &adapter.EnvConfig{EnvSinkTimeout: "-1"}}, kube, opts.Logger,
		cron.WithParser(cron.NewParser(cron.SecondOptional|cron.Minute|cron.Hour|cron.Dom|cron.Month|cron.Dow|cron.Descriptor)))
	for _, obj := range objs {
		switch source := obj.(type) {
		case *sourcesv1.ApiServerSource:
			a, err := newAPIServerSourceAdapter(ctx, source, brokerURL)
			if err != nil {
				cancel()
				return nil, err
			}
			s.run(func() error { return a.Start(ctx) })
		case *sourcesv1.PingSource:
			if err := addPingSource(runner, source, brokerURL, opts.Schedules); err != nil {
				cancel()
				return nil, err
			}
		case *sourcesv1.ContainerSource:
			targetOpts, err := targetSourceOptions(source, brokerURL, opts)
			if err != nil {
				cancel()
				return nil, err
			}
			s.run(func() error { return targetsource.Run(ctx, targetOpts) })
		}
	}
	s.run(func() error { runner.Start(ctx.Done()); runner.Stop(); return nil })
	return s, nil
}

func (s *Sources) run(f func() error) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := f(); err != nil {
			s.errMu.Lock()
			s.errs = append(s.errs, err)
			s.errMu.Unlock()
		}
	}()
}

// Stop stops every source and waits for them to finish.
func (s *Sources) Stop() error {
	s.cancel()
	s.wg.Wait()
	s.errMu.Lock()
	defer s.errMu.Unlock()
	if len(s.errs) > 0 {
		return fmt.Errorf("local sources: %v", s.errs)
	}
	return nil
}

// SourceConfig is the adapter configuration (K_SOURCE_CONFIG) Knative's ApiServerSource
// controller derives from the source: every namespace for an empty namespace selector, the
// resource of each kind guessed from the kind as Knative does, the mode.
func SourceConfig(source *sourcesv1.ApiServerSource) (apiserver.Config, error) {
	if source.Spec.NamespaceSelector == nil || len(source.Spec.NamespaceSelector.MatchLabels)+len(source.Spec.NamespaceSelector.MatchExpressions) > 0 {
		return apiserver.Config{}, fmt.Errorf("ApiServerSource %s: only an empty namespace selector (all namespaces) runs locally", source.Name)
	}
	return sources.AdapterConfig(source.Spec.Resources, source.Spec.EventMode)
}

// envMu serialises the environment juggling of withEnv: Knative's adapters read their settings
// only through envconfig from the process environment.
var envMu sync.Mutex

// withEnv runs f with vars set in the process environment, and restores it afterwards.
func withEnv(vars map[string]string, f func() error) error {
	envMu.Lock()
	defer envMu.Unlock()
	for k, v := range vars {
		if old, had := os.LookupEnv(k); had {
			defer os.Setenv(k, old)
		} else {
			defer os.Unsetenv(k)
		}
		if err := os.Setenv(k, v); err != nil {
			return err
		}
	}
	return f()
}

func newAPIServerSourceAdapter(ctx context.Context, source *sourcesv1.ApiServerSource, sink string) (adapter.Adapter, error) {
	sourceConfig, err := SourceConfig(source)
	if err != nil {
		return nil, err
	}
	configJSON, err := json.Marshal(sourceConfig)
	if err != nil {
		return nil, err
	}
	overrides, err := json.Marshal(source.Spec.CloudEventOverrides)
	if err != nil {
		return nil, err
	}
	var env adapter.EnvConfigAccessor
	if err := withEnv(map[string]string{
		"NAME":            source.Name,
		"NAMESPACE":       source.Namespace,
		"K_SOURCE_CONFIG": string(configJSON),
		"K_SINK":          sink,
		"K_CE_OVERRIDES":  string(overrides),
		"K_SINK_TIMEOUT":  "-1", // as Knative's controller configures it (it warns otherwise)
	}, func() error {
		env = adapter.ConstructEnvOrDie(apiserver.NewEnvConfig)
		return nil
	}); err != nil {
		return nil, err
	}
	ceClient, err := adapter.NewClient(adapter.ClientConfig{Env: env})
	if err != nil {
		return nil, fmt.Errorf("ApiServerSource %s: %w", source.Name, err)
	}
	return apiserver.NewAdapter(ctx, env, ceClient), nil
}

// AdapterEnvs are the environments of Knative's adapters in the target source's pod (one per
// mode it watches in): their own variables from the ContainerSource's container, the sink and
// overrides as Knative's SinkBinding injects them.
func AdapterEnvs(source *sourcesv1.ContainerSource, sink string) ([]adapter.EnvConfigAccessor, error) {
	// No sink timeout, as Knative's controller configures the adapter (it warns otherwise).
	vars := map[string]string{"K_SINK": sink, "K_SINK_TIMEOUT": "-1", targetsource.ResourcesConfigEnv: "", targetsource.ReferencesConfigEnv: ""}
	for _, e := range source.Spec.Template.Spec.Containers[0].Env {
		switch e.Name {
		case "NAME", targetsource.ResourcesConfigEnv, targetsource.ReferencesConfigEnv:
			vars[e.Name] = e.Value
		case "NAMESPACE":
			vars[e.Name] = source.Namespace // a fieldRef in the pod
		}
	}
	overrides, err := json.Marshal(source.Spec.CloudEventOverrides)
	if err != nil {
		return nil, err
	}
	vars["K_CE_OVERRIDES"] = string(overrides)
	var envs []adapter.EnvConfigAccessor
	if err := withEnv(vars, func() (err error) {
		envs, err = targetsource.AdapterEnvs()
		return err
	}); err != nil {
		return nil, err
	}
	return envs, nil
}

// targetSourceOptions configures the target source as its ContainerSource would run it: the
// adapter's environment from the container's, the sink and overrides as Knative's SinkBinding
// injects them.
func targetSourceOptions(source *sourcesv1.ContainerSource, sink string, opts Options) (targetsource.Options, error) {
	envs, err := AdapterEnvs(source, sink)
	if err != nil {
		return targetsource.Options{}, err
	}
	ceClient, err := adapter.NewClient(adapter.ClientConfig{Env: envs[0]})
	if err != nil {
		return targetsource.Options{}, fmt.Errorf("ContainerSource %s: %w", source.Name, err)
	}
	t := opts.Target
	interval := t.Interval
	if interval == 0 {
		interval = time.Second
	}
	targetOpts := targetsource.Options{Adapters: envs, Sink: ceClient, Log: opts.Logger, Interval: interval, PageSize: 500}
	switch t.Mode {
	case function.SingleTarget:
		targetOpts.Single = t.Single
	default:
		targetOpts.Seed, targetOpts.Tenants, targetOpts.Prefix = t.Seed, t.Tenants, t.Prefix
	}
	if targetOpts.Single == nil && targetOpts.Tenants == nil {
		return targetsource.Options{}, fmt.Errorf("functions watch the target cluster: configure its %s mode", t.Mode)
	}
	return targetOpts, nil
}

// addPingSource hands the PingSource to the runner with its sink resolved, as Knative's
// PingSource controller does; schedules may override its schedule by the PingSource's name.
func addPingSource(runner interface {
	AddSchedule(*sourcesv1.PingSource) cron.EntryID
}, source *sourcesv1.PingSource, sink string, schedules map[string]string) error {
	sinkURL, err := apis.ParseURL(sink)
	if err != nil {
		return fmt.Errorf("sink of PingSource %s: %w", source.Name, err)
	}
	source = source.DeepCopy()
	if override, ok := schedules[source.Name]; ok {
		source.Spec.Schedule = override
	}
	source.Status.SinkURI = sinkURL
	if runner.AddSchedule(source) < 0 {
		return fmt.Errorf("PingSource %s: invalid schedule %q", source.Name, source.Spec.Schedule)
	}
	return nil
}
