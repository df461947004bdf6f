package samples

import (
	"context"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	securityv1alpha1 "github.com/gardener/gardener/pkg/apis/security/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// quotaSamples creates the Quota "trial" that the SecretBinding "cloud" lists: it gains the
// finalizer. "retired" is being deleted while the CredentialsBinding "legacy" lists it and
// stays; "unused" is being deleted and goes. (The bindings' Secret is there for the binding
// functions, which protect it.)
func quotaSamples(ctx context.Context, c client.Client) error {
	const ns = "garden-quota"
	quota := func(name string, finalizers ...string) *gardencorev1beta1.Quota {
		q := &gardencorev1beta1.Quota{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Finalizers: finalizers}}
		q.Spec.Scope = corev1.ObjectReference{APIVersion: "v1", Kind: "Secret"}
		q.Spec.Metrics = corev1.ResourceList{"cpu": resource.MustParse("200")}
		return q
	}
	return createProtectionSamples(ctx, c,
		protectionSample{obj: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"gardener.cloud/role": "project"}}}},
		protectionSample{obj: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cloud", Namespace: ns}}},
		protectionSample{obj: quota("trial")},
		protectionSample{obj: &gardencorev1beta1.SecretBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "cloud", Namespace: ns},
			SecretRef:  corev1.SecretReference{Name: "cloud", Namespace: ns},
			Provider:   &gardencorev1beta1.SecretBindingProvider{Type: "local"},
			Quotas:     []corev1.ObjectReference{{Name: "trial", Namespace: ns}},
		}},
		protectionSample{obj: quota("retired", "gardener"), deleted: true},
		protectionSample{obj: &securityv1alpha1.CredentialsBinding{
			ObjectMeta:     metav1.ObjectMeta{Name: "legacy", Namespace: ns},
			CredentialsRef: corev1.ObjectReference{APIVersion: "v1", Kind: "Secret", Name: "cloud", Namespace: ns},
			Provider:       securityv1alpha1.CredentialsBindingProvider{Type: "local"},
			Quotas:         []corev1.ObjectReference{{Name: "retired", Namespace: ns}},
		}},
		protectionSample{obj: quota("unused", "gardener"), deleted: true},
	)
}
