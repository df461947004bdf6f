// Package localsources runs the event plumbing config/ deploys (sources.Objects) in-process:
// the cluster sources (pkg/clustersource, as sources/clusters runs them: our watchers, sending
// Knative's ApiServerSource events) and Knative's real PingSource runner, sending to an in-process
// Broker that routes with the generated Triggers through Knative's own filter code, so that a
// local landscape and the end-to-end tests deliver exactly the events a Knative cluster would,
// with the same encoding, attributes, routing, retries and (lack of) replay.
package localsources

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
	"go.uber.org/zap"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"knative.dev/eventing/pkg/adapter/mtping"
	"knative.dev/eventing/pkg/adapter/v2"
	eventingv1 "knative.dev/eventing/pkg/apis/eventing/v1"
	sourcesv1 "knative.dev/eventing/pkg/apis/sources/v1"
	"knative.dev/pkg/apis"
	"knative.dev/pkg/logging"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/clustersource"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/clients"
	"github.com/gardener-knative/gardener-knative/sources"
)

// Options configure the local sources.
type Options struct {
	// Config reaches the kube-apiserver of the Source, which the source-cluster source watches.
	Config *rest.Config
	// Garden reaches the garden, which the garden-cluster source watches for the functions that
	// work on it; Config's cluster when nil.
	Garden *rest.Config
	// Sinks maps a function's name to the URL its Trigger delivers to.
	Sinks map[string]string
	// Tokens authenticate the in-process Broker's deliveries (Broker.Tokens); none when nil.
	Tokens *TriggerTokens
	// Schedules overrides ping schedules by PingSource name, e.g. "bastion-resync" (tests
	// sweep every second).
	Schedules map[string]string
	Logger    *zap.SugaredLogger
	// Target is how the functions' Targets are served; its Mode picks the plumbing
	// (sources.ObjectsFor). Empty without Target watches.
	Target Target
	// Faults are injected between the sources and the Broker (Sources.Relay), their random
	// choices seeded by FaultSeed; none by default.
	Faults    Faults
	FaultSeed int64
	// GardenInputs are the values the parts' garden access gives the functions that work on the
	// garden and their sources, by variable (function.Function.GardenInputs): e.g. SEED_NAME.
	GardenInputs map[string]string
	// BrokerURL is a Broker the sources send to instead of an in-process one (then
	// Sources.Broker and Sources.Relay are nil, and Faults are not injected): a process of its
	// own, as Knative's Broker is not part of a source's pod.
	BrokerURL string
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
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	errMu  sync.Mutex
	errs   []error
	// Broker is the in-process Broker the sources send to, through Relay; both nil when they
	// send to Options.BrokerURL.
	Broker *Broker
	Relay  *FaultRelay

	// The cluster sources (pkg/clustersource) run apart, so that they can be restarted as their
	// pod is.
	clusterSources []clustersource.Options
	adaptersMu     sync.Mutex
	stopAdapters   context.CancelFunc
	adapters       sync.WaitGroup
}

// Start runs the event plumbing of fns (sources.Objects) until ctx ends or Stop is called:
// the cluster sources (pkg/clustersource) and Knative's PingSource runner, both sending to an
// in-process Broker that routes by the generated Triggers with Knative's own filter code.
func Start(ctx context.Context, fns []*function.Function, opts Options) (*Sources, error) {
	mode := opts.Target.Mode
	if mode == "" {
		mode = function.PerSeed
	}
	objs, err := sources.ObjectsFor(fns, mode, sources.DefaultPlumbing())
	if err != nil {
		return nil, err
	}
	if opts.BrokerURL != "" && !opts.Faults.Zero() {
		return nil, fmt.Errorf("faults are injected in front of the in-process Broker, not in front of %s", opts.BrokerURL)
	}
	kube, err := kubernetes.NewForConfig(opts.Config)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	ctx = logging.WithLogger(ctx, opts.Logger)
	s := &Sources{ctx: ctx, cancel: cancel}
	brokerURL := opts.BrokerURL
	if brokerURL == "" {
		if s.Broker, err = brokerOf(objs, opts.Sinks, opts.Logger); err != nil {
			cancel()
			return nil, err
		}
		s.Broker.Tokens = opts.Tokens
		s.Relay = NewFaultRelay(s.Broker, opts.Faults, opts.FaultSeed)
		var stopBroker func() error
		if brokerURL, stopBroker, err = s.Broker.Serve(s.Relay); err != nil {
			cancel()
			return nil, err
		}
		s.run(func() error { <-ctx.Done(); return stopBroker() })
	}

	// No sink timeout, as the adapter's controller configures it (the runner warns otherwise).
	runner := mtping.NewCronJobsRunner(adapter.ClientConfig{Env: &adapter.EnvConfig{EnvSinkTimeout: "-1"}}, kube, opts.Logger,
		cron.WithParser(cron.NewParser(cron.SecondOptional|cron.Minute|cron.Hour|cron.Dom|cron.Month|cron.Dow|cron.Descriptor)))
	for _, obj := range objs {
		switch source := obj.(type) {
		case *sourcesv1.PingSource:
			if err := addPingSource(runner, source, brokerURL, opts.Schedules); err != nil {
				cancel()
				return nil, err
			}
		case *sourcesv1.ContainerSource:
			sourceOpts, err := clusterSourceOptions(source, brokerURL, opts)
			if err != nil {
				cancel()
				return nil, err
			}
			s.clusterSources = append(s.clusterSources, sourceOpts)
		}
	}
	s.startAdapters()
	s.run(func() error { runner.Start(ctx.Done()); runner.Stop(); return nil })
	return s, nil
}

// NewBrokerFor is the Broker of fns' plumbing in mode (sources.ObjectsFor), delivering to sinks:
// for a process that serves only the Broker, beside sources started with Options.BrokerURL.
func NewBrokerFor(fns []*function.Function, mode function.Mode, sinks map[string]string, log *zap.SugaredLogger) (*Broker, error) {
	objs, err := sources.ObjectsFor(fns, mode, sources.DefaultPlumbing())
	if err != nil {
		return nil, err
	}
	return brokerOf(objs, sinks, log)
}

// brokerOf is the Broker that routes by the Broker and Triggers among objs.
func brokerOf(objs []client.Object, sinks map[string]string, log *zap.SugaredLogger) (*Broker, error) {
	var spec *eventingv1.Broker
	var triggers []*eventingv1.Trigger
	for _, obj := range objs {
		switch o := obj.(type) {
		case *eventingv1.Broker:
			spec = o
		case *eventingv1.Trigger:
			triggers = append(triggers, o)
		}
	}
	return NewBroker(spec, triggers, sinks, log)
}

// startAdapters starts the cluster sources.
func (s *Sources) startAdapters() {
	ctx, stop := context.WithCancel(s.ctx)
	s.stopAdapters = stop
	for _, opts := range s.clusterSources {
		s.adapters.Add(1)
		s.run(func() error {
			defer s.adapters.Done()
			return clustersource.Run(ctx, opts)
		})
	}
}

// RestartSources stops the cluster sources and starts them again, as Kubernetes restarts a
// source's pod: the events of changes in between are lost, the new watchers replay nothing.
func (s *Sources) RestartSources() {
	s.adaptersMu.Lock()
	defer s.adaptersMu.Unlock()
	s.stopAdapters()
	s.adapters.Wait()
	s.startAdapters()
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

// envMu serialises the environment juggling of withEnv: Knative's adapter code reads the cluster
// sources' settings (adapter.EnvConfigAccessor) only through envconfig from the process
// environment.
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

// AdapterEnvs are the settings of a cluster source's pod, in Knative's adapter format (one per
// mode it watches in): their own variables from the ContainerSource's container, the sink and
// overrides as Knative's SinkBinding injects them. gardenInputs are the values the part's
// garden access holds for the variables it gives (function.Function.GardenInputs), which the
// configurations may refer to as Kubernetes expands them.
func AdapterEnvs(source *sourcesv1.ContainerSource, sink string, gardenInputs map[string]string) ([]clustersource.Adapter, error) {
	// No sink timeout, as Knative's controller configures the adapter (it warns otherwise).
	vars := map[string]string{"K_SINK": sink, "K_SINK_TIMEOUT": "-1", clustersource.ResourcesConfigEnv: "", clustersource.ReferencesConfigEnv: ""}
	defined := map[string]string{} // the container's variables so far, as the kubelet defines them
	for _, e := range source.Spec.Template.Spec.Containers[0].Env {
		value := expand(e.Value, defined)
		switch {
		case e.Name == "NAMESPACE":
			value = source.Namespace // a fieldRef in the pod
		case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name == function.GardenAccessSecret:
			v, ok := gardenInputs[e.Name]
			if !ok {
				return nil, fmt.Errorf("ContainerSource %s: no garden input %s", source.Name, e.Name)
			}
			value = v
		}
		defined[e.Name] = value
		switch e.Name {
		case "NAME", "NAMESPACE", clustersource.ResourcesConfigEnv, clustersource.ReferencesConfigEnv:
			vars[e.Name] = value
		}
	}
	overrides, err := json.Marshal(source.Spec.CloudEventOverrides)
	if err != nil {
		return nil, err
	}
	vars["K_CE_OVERRIDES"] = string(overrides)
	var envs []clustersource.Adapter
	if err := withEnv(vars, func() (err error) {
		envs, err = clustersource.AdapterEnvs()
		return err
	}); err != nil {
		return nil, err
	}
	return envs, nil
}

// expand replaces each $(VAR) of s whose variable is defined, as the kubelet expands a container's
// variables in the later ones; $$ stands for $, and a reference to a variable not defined stays.
func expand(s string, defined map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch next := s[i+1]; {
		case next == '$':
			b.WriteByte('$')
			i++
		case next == '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteByte(s[i])
				continue
			}
			name := s[i+2 : i+2+end]
			if v, ok := defined[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// clusterSourceOptions configures a cluster source as its ContainerSource would run it: the
// watches' settings from the container's, the sink and overrides as Knative's SinkBinding
// injects them; the Source's source watches opts.Config's cluster.
func clusterSourceOptions(source *sourcesv1.ContainerSource, sink string, opts Options) (clustersource.Options, error) {
	envs, err := AdapterEnvs(source, sink, opts.GardenInputs)
	if err != nil {
		return clustersource.Options{}, err
	}
	ceClient, err := adapter.NewClient(adapter.ClientConfig{Env: envs[0].Env})
	if err != nil {
		return clustersource.Options{}, fmt.Errorf("ContainerSource %s: %w", source.Name, err)
	}
	t := opts.Target
	interval := t.Interval
	if interval == 0 {
		interval = time.Second
	}
	sourceOpts := clustersource.Options{Adapters: envs, Sink: ceClient, Log: opts.Logger, Interval: interval, PageSize: 500}
	switch {
	case watchOf(source) == function.Source:
		sourceOpts.Single = opts.Config
	case watchOf(source) == function.Garden:
		sourceOpts.Single = opts.Garden
		if opts.Garden == nil {
			sourceOpts.Single = opts.Config
		}
	case t.Mode == function.SingleTarget:
		sourceOpts.Single = t.Single
	default:
		sourceOpts.Seed, sourceOpts.Tenants, sourceOpts.Prefix = t.Seed, t.Tenants, t.Prefix
	}
	if sourceOpts.Single == nil && sourceOpts.Tenants == nil {
		return clustersource.Options{}, fmt.Errorf("functions watch the target cluster: configure its %s mode", t.Mode)
	}
	return sourceOpts, nil
}

// watchOf is the cluster a cluster source's container watches.
func watchOf(source *sourcesv1.ContainerSource) function.Cluster {
	for _, e := range source.Spec.Template.Spec.Containers[0].Env {
		if e.Name == clustersource.WatchEnv {
			return function.Cluster(e.Value)
		}
	}
	return ""
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
