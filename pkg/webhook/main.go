package webhook

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	kubernetesscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/bootstrap"
	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/clients"
	"github.com/gardener-knative/gardener-knative/pkg/tenantproof"
)

// Config is the webhook server's configuration, read from the environment (see
// docs/webhooks.md).
type Config struct {
	// PORT, KUBECONFIG, TARGET_KUBECONFIG (the target cluster, whose requests are admitted;
	// unset means the source cluster is the target), LOG_LEVEL and SHUTDOWN_TIMEOUT.
	bootstrap.Config
	// TLSCertFile and TLSKeyFile serve TLS with this certificate (reloaded on change);
	// unset serves plain HTTP for TLS terminated by the Knative ingress.
	TLSCertFile string `envconfig:"TLS_CERT_FILE"`
	TLSKeyFile  string `envconfig:"TLS_KEY_FILE"`
	// TLSPort, with the certificate, serves TLS on this port and plain HTTP on PORT: Knative's
	// queue-proxy calls PORT, kube-apiserver TLS_PORT through a Service of its own.
	TLSPort int `envconfig:"TLS_PORT"`
	// DrainDelay is how long, with TLS_PORT, the server goes on serving after SIGTERM, closing
	// each connection after its response, so that kube-apiserver's kept-alive connections through
	// the plain Service move to another pod before this one closes them (serve.Options.DrainDelay;
	// Knative's queue-proxy drains PORT itself).
	DrainDelay time.Duration `envconfig:"DRAIN_DELAY" default:"5s"`
	// ResourceManagerConfig is a ResourceManagerConfiguration file (webhooks section).
	ResourceManagerConfig string `envconfig:"RESOURCE_MANAGER_CONFIG"`
	// Webhooks names the webhooks to serve; unset serves those the component configuration
	// enables.
	Webhooks       []string      `envconfig:"WEBHOOKS"`
	RequestTimeout time.Duration `envconfig:"REQUEST_TIMEOUT" default:"10s"`
	Tenancy
	// MAX_REQUEST_BYTES, TENANT_MAX_IN_FLIGHT, TENANT_MAX_BYTES_IN_FLIGHT, MAX_BYTES_IN_FLIGHT,
	// READ_TIMEOUT, WRITE_TIMEOUT and IDLE_TIMEOUT: each tenant's share of the server.
	Fairness
}

// Tenancy configures the multi-tenant mode: one server per seed for the seed and every shoot
// control plane on it (docs/webhooks.md).
type Tenancy struct {
	// MULTI_TENANT also serves every webhook at /<shoot control-plane namespace>.<proof>/<path>,
	// for the shoot whose access Secrets that namespace holds; the same settings as the
	// functions'.
	clients.Tenancy
	// Namespace is the servers' namespace, whose Secret tenantproof.SecretName holds the keys
	// that the tenants' proofs are verified with.
	Namespace string `envconfig:"GARDENER_KNATIVE_NAMESPACE" default:"gardener-knative"`
}

// GCPercent is a webhook server's GOGC unless its environment sets one. A request allocates
// tens of kilobytes over a live heap of a few MiB, so at Go's 100 a collection ran every few
// hundred requests and its pauses and assists showed in the tail: side by side with Gardener's
// resource manager (make webhookload), p99 was up to 1.2× Gardener's at 100 and at most 0.93×
// at 400, for a peak RSS of 48 MiB instead of 35 (Gardener's: 87 MiB).
const GCPercent = 400

// Main serves the selected webhooks of all until SIGTERM; a webhook server's main package
// calls only this.
func Main(all []Constructor) {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(GCPercent)
	}
	bootstrap.Main("webhook server", func(ctx context.Context) error { return Run(ctx, all, nil) })
}

// Run serves the webhooks the configuration selects until ctx ends; ready, when set, is told
// the listening address.
func Run(ctx context.Context, all []Constructor, ready func(net.Addr)) error {
	var cfg Config
	process, err := bootstrap.Start(&cfg)
	if err != nil {
		return err
	}
	log := process.Log
	// Without a file, the defaults of the resource manager the server stands in for, as the
	// functions': a shoot's where it serves shoots, else the seed's.
	rmFile, err := componentconfig.ResourceManagerFor(componentconfig.RoleOf(cfg.MultiTenant, cfg.TargetKubeconfig != ""), cfg.ResourceManagerConfig)
	if err != nil {
		return err
	}
	for _, unknown := range rmFile.Unknown {
		log.Warn("component configuration: field ignored", "file", cfg.ResourceManagerConfig, "error", unknown)
	}
	for _, renamed := range rmFile.Renamed {
		log.Warn("component configuration: the specification's key honoured", "file", cfg.ResourceManagerConfig, "key", renamed)
	}
	rmConfig := rmFile.ResourceManagerConfiguration
	selected, err := Select(all, cfg.Webhooks, rmFile)
	if err != nil {
		return err
	}

	// Webhooks read only built-in kinds (and Machines, as unstructured): client-go's scheme,
	// which controller-runtime links anyway, keeps the Gardener API groups out of start-up.
	// Their clients are unthrottled: every admission request reads at most a few objects, and a
	// client-side token bucket would queue requests the kube-apiserver is waiting on.
	source, err := process.SourceClient(kubernetesscheme.Scheme, bootstrap.Unthrottled)
	if err != nil {
		return fmt.Errorf("source cluster: %w", err)
	}
	var target client.Client = source
	if cfg.TargetKubeconfig != "" {
		if target, err = process.TargetClient(kubernetesscheme.Scheme, bootstrap.Unthrottled); err != nil {
			return fmt.Errorf("target cluster: %w", err)
		}
	}
	var tenants *clients.Clients
	var proofs *tenantproof.Ring
	if cfg.MultiTenant {
		proofs = tenantproof.NewRing(source, cfg.Namespace, clock.RealClock{})
		if tenants, err = clients.New(clients.Options{
			Seed: source, Scheme: kubernetesscheme.Scheme, AccessSecret: cfg.TenantAccessSecret,
			// Kubernetes' own kinds map alike in every cluster: the seed's discovery serves all
			// tenants, which cuts a tenant's memory by an order of magnitude.
			SharedMapper: source.RESTMapper(),
			Size:         cfg.TenantCacheSize, TTL: cfg.TenantCacheTTL, Log: log,
			ConfigureREST: func(c *rest.Config) { process.Requests.Instrument(c); bootstrap.Unthrottled(c) },
		}); err != nil {
			return fmt.Errorf("tenant clients: %w", err)
		}
		target = clients.NewRouting(target, tenants)
	}
	deps := Deps{Source: source, Target: target, Config: rmConfig, Clock: clock.RealClock{}, Log: log}
	var webhooks []Webhook
	for _, c := range selected {
		wh, err := c.Build(deps)
		if err != nil {
			return fmt.Errorf("webhook %s: %w", c.Name, err)
		}
		webhooks = append(webhooks, wh)
	}
	var tlsAddr string
	if cfg.TLSPort != 0 {
		tlsAddr = net.JoinHostPort("", strconv.Itoa(cfg.TLSPort))
	}
	var drainDelay time.Duration
	if tlsAddr != "" {
		drainDelay = cfg.DrainDelay
	}
	return Serve(ctx, ServeOptions{
		Addr: net.JoinHostPort("", strconv.Itoa(cfg.Port)), TLSAddr: tlsAddr,
		CertFile: cfg.TLSCertFile, KeyFile: cfg.TLSKeyFile,
		RequestTimeout: cfg.RequestTimeout, ShutdownTimeout: cfg.ShutdownTimeout, DrainDelay: drainDelay,
		Ready: ready, Profiling: cfg.EnableProfiling,
		Tenants: tenants, TenantPrefix: cfg.TenantPrefix, Proofs: proofs,
		Fairness: cfg.Fairness,
	}, webhooks, process.Registry, log)
}

// Select picks the webhooks to serve: those named, else those the configuration enables.
func Select(all []Constructor, names []string, cfg *componentconfig.ResourceManagerFile) ([]Constructor, error) {
	var selected []Constructor
	known := make([]string, 0, len(all))
	for _, c := range all {
		known = append(known, c.Name)
		if (len(names) == 0 && c.Enabled(cfg)) || slices.Contains(names, c.Name) {
			selected = append(selected, c)
		}
	}
	for _, n := range names {
		if !slices.Contains(known, n) {
			return nil, fmt.Errorf("unknown webhook %q in WEBHOOKS; known: %s", n, strings.Join(known, ", "))
		}
	}
	if len(selected) == 0 {
		return nil, fmt.Errorf("no webhook selected: set WEBHOOKS (one or more of %s) or enable webhooks in RESOURCE_MANAGER_CONFIG", strings.Join(known, ", "))
	}
	return selected, nil
}
