package webhooks_test

import (
	"context"
	"testing"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/webhook/tokeninvalidator"
)

func init() { register(tokeninvalidator.Webhook, nil) }

// tokenSecret is a static ServiceAccount token Secret with the given labels and token.
func tokenSecret(namespace string, labels map[string]string, token string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: "sa-token-", Namespace: namespace, Labels: labels,
			Annotations: map[string]string{corev1.ServiceAccountNameKey: "app"},
		},
		Type: corev1.SecretTypeServiceAccountToken,
		Data: map[string][]byte{corev1.ServiceAccountTokenKey: []byte(token), "ca.crt": []byte("ca")},
	}
}

// In a shoot, Gardener v1.113 registered the webhook for the Secrets its controller labels
// (purpose token-invalidator), in the namespaces whose gardener.cloud/purpose is kube-system
// or kubernetes-dashboard: a considered Secret's token is invalid however it is written, and
// comes back (removed, for kube-controller-manager to issue anew) once the label goes.
func TestTokenInvalidator(t *testing.T) {
	ctx := context.Background()
	namespace := targetNamespace(t, map[string]string{"gardener.cloud/purpose": metav1.NamespaceSystem})
	considered := map[string]string{
		resourcesv1alpha1.ResourceManagerPurpose: tokeninvalidator.PurposeTokenInvalidation,
		tokeninvalidator.LabelConsider:           "true",
	}
	waitForWebhook(t, func(ctx context.Context) bool {
		s := tokenSecret(namespace, considered, "probe")
		return target.Client.Create(ctx, s, client.DryRunAll) == nil && string(s.Data[corev1.ServiceAccountTokenKey]) == string(tokeninvalidator.InvalidToken)
	})

	secret := tokenSecret(namespace, considered, "static-jwt")
	require.NoError(t, target.Client.Create(ctx, secret))
	assert.Equal(t, tokeninvalidator.InvalidToken, secret.Data[corev1.ServiceAccountTokenKey], "invalidated on creation")

	secret.Data[corev1.ServiceAccountTokenKey] = []byte("regenerated-jwt")
	require.NoError(t, target.Client.Update(ctx, secret))
	assert.Equal(t, tokeninvalidator.InvalidToken, secret.Data[corev1.ServiceAccountTokenKey], "invalid again on regeneration")

	delete(secret.Labels, tokeninvalidator.LabelConsider)
	require.NoError(t, target.Client.Update(ctx, secret))
	assert.NotContains(t, secret.Data, corev1.ServiceAccountTokenKey, "the invalid token is removed once the Secret is not considered")
	assert.Equal(t, []byte("ca"), secret.Data["ca.crt"])

	unlabelled := tokenSecret(namespace, map[string]string{tokeninvalidator.LabelConsider: "true"}, "static-jwt")
	require.NoError(t, target.Client.Create(ctx, unlabelled))
	assert.Equal(t, []byte("static-jwt"), unlabelled.Data[corev1.ServiceAccountTokenKey], "without the purpose label the webhook is not called")

	other := tokenSecret(targetNamespace(t, nil), considered, "static-jwt")
	require.NoError(t, target.Client.Create(ctx, other))
	assert.Equal(t, []byte("static-jwt"), other.Data[corev1.ServiceAccountTokenKey], "a shoot's other namespaces are not registered")
}
