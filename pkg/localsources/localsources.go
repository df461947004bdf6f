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

	"github.com/robfig/cron/v3"
	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

	"github.com/gardener-knative/gardener-knative/pkg/function"
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
	objs, err := sources.Objects(fns)
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

	runner := mtping.NewCronJobsRunner(adapter.ClientConfig{}, kube, opts.Logger,
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
	cfg := apiserver.Config{AllNamespaces: true, EventMode: source.Spec.EventMode}
	for _, r := range source.Spec.Resources {
		gvr, _ := meta.UnsafeGuessKindToResource(schema.FromAPIVersionAndKind(r.APIVersion, r.Kind))
		selector := ""
		if r.LabelSelector != nil {
			s, err := metav1.LabelSelectorAsSelector(r.LabelSelector)
			if err != nil {
				return apiserver.Config{}, err
			}
			selector = s.String()
		}
		cfg.Resources = append(cfg.Resources, apiserver.ResourceWatch{GVR: gvr, LabelSelector: selector})
	}
	return cfg, nil
}

// envMu serialises the environment juggling below: Knative's adapters read their settings
// only through envconfig from the process environment.
var envMu sync.Mutex

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
	envMu.Lock()
	defer envMu.Unlock()
	vars := map[string]string{
		"NAME":            source.Name,
		"NAMESPACE":       source.Namespace,
		"K_SOURCE_CONFIG": string(configJSON),
		"K_SINK":          sink,
		"K_CE_OVERRIDES":  string(overrides),
	}
	for k, v := range vars {
		if old, had := os.LookupEnv(k); had {
			defer os.Setenv(k, old)
		} else {
			defer os.Unsetenv(k)
		}
		if err := os.Setenv(k, v); err != nil {
			return nil, err
		}
	}
	env := adapter.ConstructEnvOrDie(apiserver.NewEnvConfig)
	ceClient, err := adapter.NewClient(adapter.ClientConfig{Env: env})
	if err != nil {
		return nil, fmt.Errorf("ApiServerSource %s: %w", source.Name, err)
	}
	return apiserver.NewAdapter(ctx, env, ceClient), nil
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
