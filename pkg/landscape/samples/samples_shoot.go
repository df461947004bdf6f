package samples

import (
	"context"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// shootSamples creates a project namespace with a Shoot that references a DNS Secret, an audit
// policy ConfigMap and a resource Secret, and a Secret that carries the reference-protection
// finalizer though no Shoot references it. The first sweep protects the three and the Shoot,
// and releases the fourth. Then edit the Shoot's references, or delete it (it has no gardener
// finalizer here, as if gardenlet were done): what it no longer references is released.
func shootSamples(ctx context.Context, c client.Client) error {
	const ns = "garden-shoot-reference"
	shoot := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: "local", Namespace: ns}}
	shoot.Spec.DNS = &gardencorev1beta1.DNS{Providers: []gardencorev1beta1.DNSProvider{{
		Type:           ptr.To("aws-route53"),
		CredentialsRef: &autoscalingv1.CrossVersionObjectReference{APIVersion: "v1", Kind: "Secret", Name: "dns"},
	}}}
	shoot.Spec.Kubernetes.KubeAPIServer = &gardencorev1beta1.KubeAPIServerConfig{AuditConfig: &gardencorev1beta1.AuditConfig{
		AuditPolicy: &gardencorev1beta1.AuditPolicy{ConfigMapRef: &corev1.ObjectReference{Name: "audit-policy"}},
	}}
	shoot.Spec.Resources = []gardencorev1beta1.NamedResourceReference{{
		Name:        "extension-config",
		ResourceRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "v1", Kind: "Secret", Name: "extension-config"},
	}}
	return createReferenceSamples(ctx, c,
		referenceSamplesNamespace(ns),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "dns", Namespace: ns}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "audit-policy", Namespace: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "extension-config", Namespace: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "no-longer-referenced", Namespace: ns, Finalizers: []string{"gardener.cloud/reference-protection"}}},
		shoot,
	)
}
