package samples

import (
	"context"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// secretbindingSamples creates a project namespace with a SecretBinding that a Shoot uses and
// one that nothing uses, each with its Secret and a Quota. The first sweep protects and labels
// them. Then try deleting them: "aws" waits for Shoot "local" (a Warning event says so) until
// the Shoot is deleted; "unused" goes at once and releases its Secret.
func secretbindingSamples(ctx context.Context, c client.Client) error {
	const ns = "garden-secretbinding"
	return createReferenceSamples(ctx, c,
		referenceSamplesNamespace(ns),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cloud", Namespace: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "spare", Namespace: ns}},
		&gardencorev1beta1.Quota{ObjectMeta: metav1.ObjectMeta{Name: "trial", Namespace: ns}},
		&gardencorev1beta1.SecretBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "aws", Namespace: ns},
			SecretRef:  corev1.SecretReference{Name: "cloud", Namespace: ns},
			Provider:   &gardencorev1beta1.SecretBindingProvider{Type: "aws"},
			Quotas:     []corev1.ObjectReference{{Name: "trial", Namespace: ns}},
		},
		&gardencorev1beta1.SecretBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "unused", Namespace: ns},
			SecretRef:  corev1.SecretReference{Name: "spare", Namespace: ns},
			Provider:   &gardencorev1beta1.SecretBindingProvider{Type: "gcp"},
		},
		&gardencorev1beta1.Shoot{
			ObjectMeta: metav1.ObjectMeta{Name: "local", Namespace: ns},
			Spec:       gardencorev1beta1.ShootSpec{SecretBindingName: ptr.To("aws")},
		},
	)
}

// referenceSamplesNamespace is a namespace labelled as a project's, as Gardener's project controller
// labels them.
func referenceSamplesNamespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"gardener.cloud/role": "project"}}}
}

// createReferenceSamples creates objs in order; those that exist already are left as they are.
func createReferenceSamples(ctx context.Context, c client.Client, objs ...client.Object) error {
	for _, obj := range objs {
		if err := client.IgnoreAlreadyExists(c.Create(ctx, obj)); err != nil {
			return err
		}
	}
	return nil
}
