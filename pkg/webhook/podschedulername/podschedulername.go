// Package podschedulername sends new Pods to the scheduler a shoot's scheduling profile asks
// for (GRM's pod-scheduler-name webhook): Pods that leave the choice to the default scheduler
// get the configured one, typically bin-packing-scheduler for shoots with the bin-packing
// profile; Pods that name any other scheduler keep it.
package podschedulername

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	kubernetesscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/webhook"
)

const (
	// Name is the webhook's name (Gardener's handler name).
	Name = "pod-scheduler-name"
	// Path is where Gardener serves it.
	Path = "/webhooks/default-pod-scheduler-name"
)

// Config is the webhook's configuration.
type Config struct {
	// SchedulerName overrides webhooks.podSchedulerName.schedulerName of the component
	// configuration.
	SchedulerName string `envconfig:"POD_SCHEDULER_NAME_WEBHOOK_SCHEDULER_NAME"`
}

// Webhook is the constructor the server registers.
var Webhook = webhook.Configured[Config]{
	Name: Name,
	// Per tenant: where gardenlet enables it for the shoot (tenant.Settings); never for workerless shoots.
	AppliesTo: func(s *tenant.Settings) bool { return s.HasWorkers() && s.SchedulerName != "" },
	Enabled:   func(c *componentconfig.ResourceManagerFile) bool { return c.Webhooks.PodSchedulerName.Enabled },
	Defaults: func(deps webhook.Deps) Config {
		// Gardener's API defaults the name to default-scheduler, but only for a configuration
		// that enables the webhook; enabled through WEBHOOKS it gets the same default here.
		cfg := Config{SchedulerName: corev1.DefaultSchedulerName}
		if name := deps.Config.Webhooks.PodSchedulerName.SchedulerName; name != nil && *name != "" {
			cfg.SchedulerName = *name
		}
		return cfg
	},
	Build: func(deps webhook.Deps, cfg Config) (webhook.Webhook, error) {
		return webhook.Admission(Name, Path, Handler(cfg.SchedulerName), deps.Log), nil
	},
}.Constructor()

// Handler sets schedulerName on every Pod that names no scheduler or the default one: the
// scheduler of the tenant's profile (tenant.Settings), schedulerName outside a tenant's request.
func Handler(schedulerName string) admission.Handler {
	decoder := admission.NewDecoder(kubernetesscheme.Scheme)
	return webhook.Defaulter(decoder, func() *corev1.Pod { return &corev1.Pod{} }, func(ctx context.Context, _ admission.Request, pod *corev1.Pod) error {
		name := schedulerName
		if s, ok := tenant.SettingsFrom(ctx); ok {
			name = s.SchedulerName
		}
		if name != "" && (pod.Spec.SchedulerName == "" || pod.Spec.SchedulerName == corev1.DefaultSchedulerName) {
			pod.Spec.SchedulerName = name
		}
		return nil
	})
}
