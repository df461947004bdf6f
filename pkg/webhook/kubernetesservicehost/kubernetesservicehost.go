// Package kubernetesservicehost injects KUBERNETES_SERVICE_HOST with the API server's FQDN into
// every container of new Pods, so that they reach their API server directly instead of
// through the apiserver-proxy hop (GRM's kubernetes-service-host webhook).
package kubernetesservicehost

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/webhook"
)

const (
	// Name is the webhook's name.
	Name = "kubernetes-service-host"
	// Path is where Gardener serves it.
	Path = "/webhooks/kubernetes-service-host"
	// EnvVar is the variable injected.
	EnvVar = "KUBERNETES_SERVICE_HOST"
)

// Config is the webhook's configuration.
type Config struct {
	// Host overrides webhooks.kubernetesServiceHost.host of the component configuration: the
	// host injected into the Pods of the cluster the server runs for (unprefixed paths). A
	// tenant's Pods get their own shoot's (tenant.Settings). Empty injects nothing there, as for
	// the seed, whose resource manager Gardener does not run this webhook in.
	Host string `envconfig:"KUBERNETES_SERVICE_HOST_WEBHOOK_HOST"`
}

// Webhook is the constructor the server registers.
var Webhook = webhook.Configured[Config]{
	Name: Name,
	// Per tenant: where gardenlet enables it for the shoot (tenant.Settings); never for workerless shoots.
	AppliesTo: func(s *tenant.Settings) bool { return s.HasWorkers() && s.KubernetesServiceHost != "" },
	Enabled:   func(c *componentconfig.ResourceManagerFile) bool { return c.Webhooks.KubernetesServiceHost.Enabled },
	Defaults:  func(deps webhook.Deps) Config { return Config{Host: deps.Config.Webhooks.KubernetesServiceHost.Host} },
	Build: func(deps webhook.Deps, cfg Config) (webhook.Webhook, error) {
		return webhook.Admission(Name, Path, Handler(cfg.Host), deps.Log), nil
	},
}.Constructor()

// Handler injects the host into every container and init container that does not set the
// variable already: the tenant's API server host (tenant.Settings), or host outside a tenant's
// request (none when empty).
func Handler(host string) admission.Handler {
	return webhook.Mutator(func() *corev1.Pod { return &corev1.Pod{} }, func(ctx context.Context, _ admission.Request, pod *corev1.Pod) error {
		host := host
		if s, ok := tenant.SettingsFrom(ctx); ok {
			host = s.KubernetesServiceHost
		}
		if host == "" {
			return nil
		}
		inject(pod.Spec.InitContainers, host)
		inject(pod.Spec.Containers, host)
		return nil
	})
}

func inject(containers []corev1.Container, host string) {
	for i := range containers {
		if !hasEnv(containers[i], EnvVar) {
			containers[i].Env = append(containers[i].Env, corev1.EnvVar{Name: EnvVar, Value: host})
		}
	}
}

func hasEnv(c corev1.Container, name string) bool {
	for _, e := range c.Env {
		if e.Name == name {
			return true
		}
	}
	return false
}
