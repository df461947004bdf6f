// Package seccompprofile gives new Pods the container runtime's default seccomp profile when
// they set none (GRM's seccomp-profile webhook, enabled with Gardener's DefaultSeccompProfile
// feature gate): the Pod's security context gets seccompProfile type RuntimeDefault, which its
// containers inherit unless they set their own.
package seccompprofile

import (
	"context"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	kubernetesscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/webhook"
)

const (
	// Name is the webhook's name (Gardener's handler name).
	Name = "seccomp-profile"
	// Path is where Gardener serves it.
	Path = "/webhooks/seccomp-profile"
)

// Webhook is the constructor the server registers.
var Webhook = webhook.Constructor{
	Name: Name,
	// gardenlet turns it off for workerless shoots.
	AppliesTo: (*tenant.Settings).HasWorkers,
	Enabled:   func(c *componentconfig.ResourceManagerFile) bool { return c.Webhooks.SeccompProfile.Enabled },
	New: func(deps webhook.Deps) (webhook.Webhook, error) {
		return webhook.Admission(Name, Path, Handler(deps.Log.With("webhook", Name)), deps.Log), nil
	},
}

// Handler sets the Pod's seccomp profile to RuntimeDefault unless the Pod sets a profile type.
func Handler(log *slog.Logger) admission.Handler {
	decoder := admission.NewDecoder(kubernetesscheme.Scheme)
	return webhook.Defaulter(decoder, func() *corev1.Pod { return &corev1.Pod{} }, func(ctx context.Context, req admission.Request, pod *corev1.Pod) error {
		if sc := pod.Spec.SecurityContext; sc != nil && sc.SeccompProfile != nil && sc.SeccompProfile.Type != "" {
			return nil
		}
		if pod.Spec.SecurityContext == nil {
			pod.Spec.SecurityContext = &corev1.PodSecurityContext{}
		}
		// A profile without a type is replaced whole (a localhostProfile of it goes too), as
		// Gardener does: it is invalid without a type anyway.
		pod.Spec.SecurityContext.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
		log.DebugContext(ctx, "defaulted the seccomp profile", "pod", webhook.ObjectKeyForCreate(pod, req))
		return nil
	})
}
