// Package kubernetesservicehost injects KUBERNETES_SERVICE_HOST with the API server's FQDN into
// every container of new Pods, so that they reach their API server directly instead of
// through the apiserver-proxy hop (GRM's kubernetes-service-host webhook).
package kubernetesservicehost

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
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
	// Host overrides webhooks.kubernetesServiceHost.host of the component configuration.
	Host string `envconfig:"KUBERNETES_SERVICE_HOST_WEBHOOK_HOST"`
}

// Webhook is the constructor the server registers.
var Webhook = webhook.Configured[Config]{
	Name:     Name,
	Enabled:  func(c *componentconfig.ResourceManagerFile) bool { return c.Webhooks.KubernetesServiceHost.Enabled },
	Defaults: func(deps webhook.Deps) Config { return Config{Host: deps.Config.Webhooks.KubernetesServiceHost.Host} },
	Build: func(deps webhook.Deps, cfg Config) (webhook.Webhook, error) {
		if cfg.Host == "" {
			return webhook.Webhook{}, errors.New("no host: set KUBERNETES_SERVICE_HOST_WEBHOOK_HOST or webhooks.kubernetesServiceHost.host")
		}
		return webhook.Admission(Name, Path, Handler(cfg.Host), deps.Log), nil
	},
}.Constructor()

// Handler injects host into every container and init container that does not set the
// variable already.
func Handler(host string) admission.Handler {
	return webhook.Mutator(func() *corev1.Pod { return &corev1.Pod{} }, func(_ context.Context, _ admission.Request, pod *corev1.Pod) error {
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
