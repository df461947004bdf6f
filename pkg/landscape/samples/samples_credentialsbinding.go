package samples

import (
	"context"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	securityv1alpha1 "github.com/gardener/gardener/pkg/apis/security/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// credentialsbindingSamples creates a project namespace with a CredentialsBinding of a
// WorkloadIdentity that a Shoot uses and one of a Secret that nothing uses. The first sweep
// protects and labels them (the WorkloadIdentity without a provider label). Then try deleting
// them: "gcp" waits for Shoot "local"; "openstack" goes at once and releases its Secret.
func credentialsbindingSamples(ctx context.Context, c client.Client) error {
	const ns = "garden-credentialsbinding"
	return createReferenceSamples(ctx, c,
		referenceSamplesNamespace(ns),
		&securityv1alpha1.WorkloadIdentity{ObjectMeta: metav1.ObjectMeta{Name: "gcp-identity", Namespace: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "openstack", Namespace: ns}},
		&gardencorev1beta1.Quota{ObjectMeta: metav1.ObjectMeta{Name: "trial", Namespace: ns}},
		&securityv1alpha1.CredentialsBinding{
			ObjectMeta:     metav1.ObjectMeta{Name: "gcp", Namespace: ns},
			CredentialsRef: corev1.ObjectReference{APIVersion: "security.gardener.cloud/v1alpha1", Kind: "WorkloadIdentity", Name: "gcp-identity", Namespace: ns},
			Provider:       securityv1alpha1.CredentialsBindingProvider{Type: "gcp"},
			Quotas:         []corev1.ObjectReference{{Name: "trial", Namespace: ns}},
		},
		&securityv1alpha1.CredentialsBinding{
			ObjectMeta:     metav1.ObjectMeta{Name: "openstack", Namespace: ns},
			CredentialsRef: corev1.ObjectReference{APIVersion: "v1", Kind: "Secret", Name: "openstack", Namespace: ns},
			Provider:       securityv1alpha1.CredentialsBindingProvider{Type: "openstack"},
		},
		&gardencorev1beta1.Shoot{
			ObjectMeta: metav1.ObjectMeta{Name: "local", Namespace: ns},
			Spec:       gardencorev1beta1.ShootSpec{CredentialsBindingName: ptr.To("gcp")},
		},
	)
}
