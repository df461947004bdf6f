// Package localsources runs Knative's real ApiServerSource adapter and PingSource runner
// in-process, configured from the feeds in sources/, so that a local landscape and the
// end-to-end tests deliver exactly the events a Knative cluster would, with the same
// encoding, attributes, retries and (lack of) replay.
package localsources

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"

	"github.com/robfig/cron/v3"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"knative.dev/eventing/pkg/adapter/apiserver"
	"knative.dev/eventing/pkg/adapter/mtping"
	"knative.dev/eventing/pkg/adapter/v2"
	sourcesv1 "knative.dev/eventing/pkg/apis/sources/v1"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"
	kubeclient "knative.dev/pkg/client/injection/kube/client"
	"knative.dev/pkg/injection/clients/dynamicclient"
	"knative.dev/pkg/logging"

	"github.com/gardener-knative/gardener-knative/sources"
)

// Namespace is where the local sources pretend to live (it appears in PingSource event sources).
const Namespace = "gardener-knative"

// Options configure the local sources.
type Options struct {
	// Config reaches the kube-apiserver the ApiServerSource adapters watch.
	Config *rest.Config
	// Sinks maps a function's name to the URL its events are sent to.
	Sinks map[string]string
	// Schedules overrides ping schedules, keyed "<function>/<sweep>" (tests sweep every second).
	Schedules map[string]string
	Logger    *zap.SugaredLogger
}

// Sources are running local sources.
type Sources struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	errMu  sync.Mutex
	errs   []error
}

// Start starts one ApiServerSource adapter per feed with resources and one PingSource runner
// for all pings, until ctx ends or Stop is called.
func Start(ctx context.Context, feeds []sources.Feed, opts Options) (*Sources, error) {
	kube, err := kubernetes.NewForConfig(opts.Config)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(opts.Config)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	ctx = logging.WithLogger(ctx, opts.Logger)
	ctx = context.WithValue(ctx, kubeclient.Key{}, kubernetes.Interface(kube))
	ctx = context.WithValue(ctx, dynamicclient.Key{}, dynamic.Interface(dyn))
	ctx = context.WithValue(ctx, apiserver.Key{}, opts.Config.Host)
	s := &Sources{cancel: cancel}

	runner := mtping.NewCronJobsRunner(adapter.ClientConfig{}, kube, opts.Logger,
		cron.WithParser(cron.NewParser(cron.SecondOptional|cron.Minute|cron.Hour|cron.Dom|cron.Month|cron.Dow|cron.Descriptor)))
	for _, feed := range feeds {
		sink, ok := opts.Sinks[feed.Function]
		if !ok {
			cancel()
			return nil, fmt.Errorf("no sink for function %s", feed.Function)
		}
		if len(feed.Resources) > 0 {
			a, err := newAPIServerSourceAdapter(ctx, feed, sink)
			if err != nil {
				cancel()
				return nil, err
			}
			s.run(func() error { return a.Start(ctx) })
		}
		for _, ping := range feed.Pings {
			source, err := pingSource(feed, ping, sink, opts.Schedules)
			if err != nil {
				cancel()
				return nil, err
			}
			if runner.AddSchedule(source) < 0 {
				cancel()
				return nil, fmt.Errorf("ping %s/%s: invalid schedule %q", feed.Function, ping.Sweep, source.Spec.Schedule)
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

// SourceConfig is the adapter configuration (K_SOURCE_CONFIG) the ApiServerSource controller
// would derive from the feed: every namespace, the feed's resources and mode.
func SourceConfig(feed sources.Feed) apiserver.Config {
	cfg := apiserver.Config{AllNamespaces: true, EventMode: string(feed.Mode)}
	for _, r := range feed.Resources {
		cfg.Resources = append(cfg.Resources, apiserver.ResourceWatch{
			GVR:           schema.GroupVersionResource{Group: r.Group(), Version: r.Version(), Resource: r.Plural},
			LabelSelector: r.LabelSelector,
		})
	}
	return cfg
}

// envMu serialises the environment juggling below: Knative's adapters read their settings
// only through envconfig from the process environment.
var envMu sync.Mutex

func newAPIServerSourceAdapter(ctx context.Context, feed sources.Feed, sink string) (adapter.Adapter, error) {
	sourceConfig, err := json.Marshal(SourceConfig(feed))
	if err != nil {
		return nil, err
	}
	overrides, err := json.Marshal(ceOverrides(feed))
	if err != nil {
		return nil, err
	}
	envMu.Lock()
	defer envMu.Unlock()
	vars := map[string]string{
		"NAME":            feed.Function,
		"NAMESPACE":       Namespace,
		"K_SOURCE_CONFIG": string(sourceConfig),
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
		return nil, fmt.Errorf("ApiServerSource %s: %w", feed.Function, err)
	}
	return apiserver.NewAdapter(ctx, env, ceClient), nil
}

// ceOverrides tag every event with the function it is for, as config/ does.
func ceOverrides(feed sources.Feed) *duckv1.CloudEventOverrides {
	return &duckv1.CloudEventOverrides{Extensions: map[string]string{"gardenerfunction": feed.Function}}
}

// pingSource is the PingSource object config/ declares for the ping, as the PingSource
// controller would hand it to the runner (with its sink resolved).
func pingSource(feed sources.Feed, ping sources.Ping, sink string, schedules map[string]string) (*sourcesv1.PingSource, error) {
	sinkURL, err := url.Parse(sink)
	if err != nil {
		return nil, fmt.Errorf("sink of %s: %w", feed.Function, err)
	}
	schedule := ping.Schedule
	if override, ok := schedules[feed.Function+"/"+ping.Sweep]; ok {
		schedule = override
	}
	source := &sourcesv1.PingSource{
		ObjectMeta: metav1.ObjectMeta{Name: strings.Join([]string{feed.Function, ping.Sweep}, "-"), Namespace: Namespace},
		Spec: sourcesv1.PingSourceSpec{
			SourceSpec:  duckv1.SourceSpec{CloudEventOverrides: ceOverrides(feed)},
			Schedule:    schedule,
			Timezone:    ping.Timezone,
			ContentType: "application/json",
			Data:        ping.Data(),
		},
	}
	source.Status.SinkURI = (*apis.URL)(sinkURL)
	return source, nil
}
