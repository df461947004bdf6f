package webhook

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/kelseyhightower/envconfig"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	kubernetesscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	rmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"

	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/kube"
)

// Config is the webhook server's configuration, read from the environment (see
// docs/webhooks.md).
type Config struct {
	Port int `envconfig:"PORT" default:"8080"`
	// TLSCertFile and TLSKeyFile serve TLS with this certificate (reloaded on change);
	// unset serves plain HTTP for TLS terminated by the Knative ingress.
	TLSCertFile string `envconfig:"TLS_CERT_FILE"`
	TLSKeyFile  string `envconfig:"TLS_KEY_FILE"`
	// The source cluster (where the server runs): KUBECONFIG, else in-cluster.
	kube.ClientConfig
	// TargetKubeconfig reaches the target cluster (whose requests are admitted); unset means
	// the source cluster is the target.
	TargetKubeconfig string `envconfig:"TARGET_KUBECONFIG"`
	// ResourceManagerConfig is a ResourceManagerConfiguration file (webhooks section).
	ResourceManagerConfig string `envconfig:"RESOURCE_MANAGER_CONFIG"`
	// Webhooks names the webhooks to serve; unset serves those the component configuration
	// enables.
	Webhooks        []string      `envconfig:"WEBHOOKS"`
	RequestTimeout  time.Duration `envconfig:"REQUEST_TIMEOUT" default:"10s"`
	ShutdownTimeout time.Duration `envconfig:"SHUTDOWN_TIMEOUT" default:"25s"`
	LogLevel        slog.Level    `envconfig:"LOG_LEVEL" default:"info"`
}

// Main serves the selected webhooks of all until SIGTERM; a webhook server's main package
// calls only this.
func Main(all []Constructor) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := Run(ctx, all, nil); err != nil {
		slog.Error("webhook server failed", "error", err)
		os.Exit(1)
	}
}

// Run serves the webhooks the configuration selects until ctx ends; ready, when set, is told
// the listening address.
func Run(ctx context.Context, all []Constructor, ready func(net.Addr)) error {
	var cfg Config
	if err := envconfig.Process("", &cfg); err != nil {
		return fmt.Errorf("reading configuration: %w", err)
	}
	log := slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: cfg.LogLevel}))
	// controller-runtime logs through its own logger; without one it complains once, loudly.
	ctrllog.SetLogger(logr.FromSlogHandler(log.Handler()))
	rmConfig, err := componentconfig.ResourceManager(cfg.ResourceManagerConfig)
	if err != nil {
		return err
	}
	selected, err := Select(all, cfg.Webhooks, rmConfig)
	if err != nil {
		return err
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	requests := kube.NewRequestCounter(reg)
	source, err := newClient(cfg.ClientConfig, requests)
	if err != nil {
		return fmt.Errorf("source cluster: %w", err)
	}
	target := source
	if cfg.TargetKubeconfig != "" {
		targetCfg := cfg.ClientConfig
		targetCfg.Kubeconfig = cfg.TargetKubeconfig
		if target, err = newClient(targetCfg, requests); err != nil {
			return fmt.Errorf("target cluster: %w", err)
		}
	}
	deps := Deps{Source: source, Target: target, Config: rmConfig, Clock: clock.RealClock{}, Log: log}
	var webhooks []Webhook
	for _, c := range selected {
		wh, err := c.New(deps)
		if err != nil {
			return fmt.Errorf("webhook %s: %w", c.Name, err)
		}
		webhooks = append(webhooks, wh)
	}
	return Serve(ctx, ServeOptions{
		Addr:     net.JoinHostPort("", strconv.Itoa(cfg.Port)),
		CertFile: cfg.TLSCertFile, KeyFile: cfg.TLSKeyFile,
		RequestTimeout: cfg.RequestTimeout, ShutdownTimeout: cfg.ShutdownTimeout,
		Ready: ready,
	}, webhooks, reg, log)
}

func newClient(cfg kube.ClientConfig, requests *kube.RequestCounter) (client.Client, error) {
	restCfg, err := cfg.RESTConfig()
	if err != nil {
		return nil, err
	}
	requests.Instrument(restCfg)
	// Webhooks read only built-in kinds (and Machines, as unstructured): client-go's scheme,
	// which controller-runtime links anyway, keeps the Gardener API groups out of start-up.
	return kube.NewClient(restCfg, kubernetesscheme.Scheme)
}

// Select picks the webhooks to serve: those named, else those the configuration enables.
func Select(all []Constructor, names []string, cfg *rmv1alpha1.ResourceManagerConfiguration) ([]Constructor, error) {
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
