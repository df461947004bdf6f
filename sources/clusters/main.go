// Command clusters is the event source of the clusters the functions watch, deployed as a Knative
// ContainerSource (which gives it its sink and the cluster extension's override): our watchers,
// configured as Knative's ApiServerSource adapter is and sending its events (see
// pkg/clustersource), with WATCH=source for the cluster it runs in (source-cluster), with
// WATCH=target for every shoot of the seed (MULTI_TENANT) or for the one TARGET_KUBECONFIG names
// (target-clusters), with WATCH=garden for the garden of GARDEN_KUBECONFIG (garden-cluster).
package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"go.uber.org/zap"
	"knative.dev/eventing/pkg/adapter/v2"

	"github.com/gardener-knative/gardener-knative/pkg/bootstrap"
	"github.com/gardener-knative/gardener-knative/pkg/clustersource"
	"github.com/gardener-knative/gardener-knative/pkg/eventauth"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/scheme"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/clients"
)

// config is the process's own settings; the watches' (NAME, NAMESPACE, K_SINK,
// K_SOURCE_CONFIG, K_CE_OVERRIDES) are Knative's adapter's, with K_REFERENCES_CONFIG for the
// kinds watched in Reference mode.
type config struct {
	bootstrap.Config
	clients.Tenancy
	// Watch names the cluster watched (clustersource.WatchEnv): the Source (the one the pod runs
	// in), the Target or the garden.
	Watch function.Cluster `envconfig:"WATCH" required:"true"`
	// GardenKubeconfig reaches the garden a source with WATCH=garden watches.
	GardenKubeconfig string `envconfig:"GARDEN_KUBECONFIG"`
	// DiscoveryInterval is how often the seed's tenants are listed anew.
	DiscoveryInterval time.Duration `envconfig:"TENANT_DISCOVERY_INTERVAL" default:"10s"`
	ListPageSize      int64         `envconfig:"LIST_PAGE_SIZE" default:"500"`
}

func main() {
	clustersource.SetGCPercent()
	bootstrap.Main("cluster source", run)
}

func run(ctx context.Context) error {
	var cfg config
	process, err := bootstrap.Start(&cfg, "component", "cluster-source")
	if err != nil {
		return err
	}
	switch cfg.Watch {
	case function.Source, function.Target:
	case function.Garden:
		if cfg.GardenKubeconfig == "" {
			return fmt.Errorf("%s=%s needs the garden's kubeconfig: set GARDEN_KUBECONFIG", clustersource.WatchEnv, cfg.Watch)
		}
	default:
		return fmt.Errorf("%s=%q: watch the %s, the %s or the %s", clustersource.WatchEnv, cfg.Watch, function.Source, function.Target, function.Garden)
	}
	zapLog, err := zap.NewProduction()
	if err != nil {
		return err
	}
	envs, err := clustersource.AdapterEnvs()
	if err != nil {
		return err
	}
	// One client to the sink for both modes: the sink and overrides are the container's.
	// With Knative's authentication-oidc on, every event carries the source's OIDC token, which
	// Knative's SinkBinding keeps fresh in eventauth.SinkTokenFile.
	sink, err := adapter.NewClient(adapter.ClientConfig{Env: envs[0].Env, Options: []cehttp.Option{
		cehttp.WithRoundTripperDecorator(func(next http.RoundTripper) http.RoundTripper {
			return eventauth.TokenFileTransport(eventauth.SinkTokenFile, next)
		}),
	}})
	if err != nil {
		return err
	}
	opts := clustersource.Options{
		Adapters: envs, Sink: sink, Prefix: cfg.TenantPrefix, Interval: cfg.DiscoveryInterval, PageSize: cfg.ListPageSize,
		Log: zapLog.Sugar(), Registry: process.Registry,
	}
	switch {
	case cfg.Watch == function.Source:
		if opts.Single, err = process.SourceRESTConfig(); err != nil {
			return err
		}
	case cfg.Watch == function.Garden:
		if opts.Single, err = process.RESTConfigOf(cfg.GardenKubeconfig); err != nil {
			return err
		}
	case cfg.MultiTenant:
		seed, err := process.SourceClient(scheme.Gardener)
		if err != nil {
			return err
		}
		opts.Seed = seed
		if opts.Tenants, err = clients.New(clients.Options{
			Seed: seed, Scheme: scheme.Gardener, AccessSecret: cfg.TenantAccessSecret, SharedMapper: seed.RESTMapper(),
			Size: cfg.TenantCacheSize, TTL: cfg.TenantCacheTTL, Log: process.Log, ConfigureREST: process.CountedAndLimited,
		}); err != nil {
			return err
		}
	default:
		if opts.Single, err = process.TargetRESTConfig(); err != nil {
			return err
		}
	}
	// The source ends only with ctx, or when the client of its one cluster cannot be built (failed
	// LISTs and watches are retried, unserved kinds asked for again): then the process exits, so
	// that Kubernetes restarts it rather than keep a Ready pod that watches nothing.
	running, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	go func() {
		err := clustersource.Run(running, opts)
		if running.Err() == nil {
			stop(fmt.Errorf("cluster source stopped: %v", err))
		}
	}()
	// Health and metrics; the source receives nothing.
	if err := process.Serve(running, http.NotFoundHandler(), bootstrap.ServeOptions{}); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return nil
	}
	return context.Cause(running)
}
