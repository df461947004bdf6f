package benchkit

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
	"os/signal"
	"syscall"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/google/uuid"
	"go.uber.org/zap"
	sourcesv1 "knative.dev/eventing/pkg/apis/sources/v1"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/client/config"

	"github.com/gardener-knative/gardener-knative/functions"
	"github.com/gardener-knative/gardener-knative/pkg/bootstrap"
	"github.com/gardener-knative/gardener-knative/pkg/clustersource"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kube"
	"github.com/gardener-knative/gardener-knative/pkg/localsources"
	"github.com/gardener-knative/gardener-knative/pkg/scheme"
	"github.com/gardener-knative/gardener-knative/pkg/serve"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/clients"
)

// ProfileRate makes a process sample one allocation per 64 KiB for its heap profile instead of
// Go's 512 KiB: a process with a live heap of 2 MiB would otherwise hold no sample at all now and
// then, and call sites could not be told apart between runs.
const ProfileRate = "GODEBUG=memprofilerate=65536"

// ServeProfiles serves Go's profiles at addr until the process ends, as our functions do with
// ENABLE_PROFILING.
func ServeProfiles(addr string) {
	mux := http.NewServeMux()
	serve.HandleProfiles(mux)
	server := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = server.ListenAndServe() }()
}

// QueueProxy stands for Knative's queue-proxy in front of a function's pod: at most
// concurrency requests reach it at once (containerConcurrency, as config/ sets it); the others
// wait here, not inside the function's time bound.
func QueueProxy(target string, concurrency int) (*http.Server, error) {
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

// The event plumbing of a side runs as processes of the benchmark's own binary, re-executed with
// a role: the source (the cluster sources' watchers and the PingSources: one pod per cluster in a
// landscape) and the Broker (Knative's, shared by every function; here pkg/localsources'
// stand-in with Knative's filter code). ServedAsPlumbing runs such a process.

// Role environment variables: when set, the binary is that process of the plumbing instead of
// the benchmark, and the variable holds its spec as JSON.
const (
	SourceRoleEnv = "BENCH_PLUMBING_SOURCE"
	BrokerRoleEnv = "BENCH_PLUMBING_BROKER"
)

// SourceSpec is a source process's: the functions whose sources it runs and their deployment
// mode, where it sends (the Broker's URL), the PingSources' schedules by name, and where it
// serves Go's profiles. Tenants makes it discover and watch the seed's tenants too (per seed:
// the seed is the cluster of its KUBECONFIG).
type SourceSpec struct {
	Functions []string          `json:"functions"`
	Mode      function.Mode     `json:"mode"`
	Broker    string            `json:"broker"`
	Schedules map[string]string `json:"schedules"`
	Debug     string            `json:"debug"`
	Tenants   bool              `json:"tenants"`
}

// BrokerSpec is a Broker process's: the functions whose Triggers it routes by and their mode,
// where it listens, the functions' URLs it delivers to, and where it serves Go's profiles.
type BrokerSpec struct {
	Functions []string          `json:"functions"`
	Mode      function.Mode     `json:"mode"`
	Sinks     map[string]string `json:"sinks"`
	Addr      string            `json:"addr"`
	Debug     string            `json:"debug"`
}

// BrokerHealthPath answers 200 once the Broker listens; every other path is its ingress.
const BrokerHealthPath = "/healthz"

// TenantDiscoveryInterval is the cluster source's default (TENANT_DISCOVERY_INTERVAL).
const TenantDiscoveryInterval = 10 * time.Second

// ServedAsPlumbing runs this program as a process of the event plumbing when it was started as
// one (SourceRoleEnv, BrokerRoleEnv), and says so: the benchmark re-executes itself for them.
func ServedAsPlumbing() bool {
	for env, run := range map[string]func(string) error{SourceRoleEnv: runSource, BrokerRoleEnv: runBroker} {
		spec, ok := os.LookupEnv(env)
		if !ok {
			continue
		}
		if err := run(spec); err != nil {
			fmt.Fprintln(os.Stderr, env+":", err)
			os.Exit(1)
		}
		return true
	}
	return false
}

// runBroker serves the Broker of the functions' Triggers (pkg/localsources, with Knative's
// filters and delivery) until SIGTERM.
func runBroker(raw string) error {
	var spec BrokerSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		return fmt.Errorf("%s: %w", BrokerRoleEnv, err)
	}
	ServeProfiles(spec.Debug)
	fns, err := Declarations(spec.Functions)
	if err != nil {
		return err
	}
	logger, err := zap.NewProduction(zap.IncreaseLevel(zap.WarnLevel))
	if err != nil {
		return err
	}
	broker, err := localsources.NewBrokerFor(fns, spec.Mode, spec.Sinks, logger.Sugar())
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc(BrokerHealthPath, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
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

// Declarations are the functions named, from the registry.
func Declarations(names []string) ([]*function.Function, error) {
	var fns []*function.Function
	for _, name := range names {
		fn, ok := functions.ByName(name)
		if !ok {
			return nil, errors.New("no function " + name)
		}
		fns = append(fns, fn)
	}
	return fns, nil
}

// runSource runs the cluster sources of the cluster of KUBECONFIG (and, with Tenants, of every
// tenant of that seed) and the PingSources (pkg/localsources), sending to the Broker, until
// SIGTERM.
func runSource(raw string) error {
	var spec SourceSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		return fmt.Errorf("%s: %w", SourceRoleEnv, err)
	}
	clustersource.SetGCPercent()
	ServeProfiles(spec.Debug)
	cfg, err := ctrlconfig.GetConfig()
	if err != nil {
		return err
	}
	bootstrap.Unthrottled(cfg)
	fns, err := Declarations(spec.Functions)
	if err != nil {
		return err
	}
	target := localsources.Target{Mode: spec.Mode}
	if spec.Tenants {
		seed, err := kube.NewClient(cfg, scheme.Gardener)
		if err != nil {
			return err
		}
		tenants, err := clients.New(clients.Options{Seed: seed, Scheme: scheme.Gardener, SharedMapper: seed.RESTMapper(), ConfigureREST: bootstrap.Unthrottled})
		if err != nil {
			return err
		}
		target = localsources.Target{Mode: spec.Mode, Seed: seed, Tenants: tenants, Prefix: tenant.DefaultPrefix, Interval: TenantDiscoveryInterval}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	logger, err := zap.NewProduction(zap.IncreaseLevel(zap.WarnLevel))
	if err != nil {
		return err
	}
	s, err := localsources.Start(ctx, fns, localsources.Options{
		Config: cfg, BrokerURL: spec.Broker, Schedules: spec.Schedules, Logger: logger.Sugar(), Target: target,
	})
	if err != nil {
		return err
	}
	<-ctx.Done()
	return s.Stop()
}

// SendPing sends the Broker at url a PingSource's tick as Knative's PingSource runner sends it:
// source is the PingSource's (sourcesv1.PingSourceSource), extension=value its CloudEvent
// override, data its payload. For firing a sweep whose schedule does not come within a run.
func SendPing(ctx context.Context, url, source, extension, value, data string) error {
	event := cloudevents.NewEvent()
	event.SetID(uuid.NewString())
	event.SetType(sourcesv1.PingSourceEventType)
	event.SetSource(source)
	event.SetExtension(extension, value)
	if err := event.SetData(cloudevents.ApplicationJSON, []byte(data)); err != nil {
		return err
	}
	c, err := cloudevents.NewClientHTTP(cloudevents.WithTarget(url))
	if err != nil {
		return err
	}
	if result := c.Send(ctx, event); !cloudevents.IsACK(result) {
		return fmt.Errorf("ping %s: %w", source, result)
	}
	return nil
}
