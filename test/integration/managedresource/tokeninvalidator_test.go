package managedresource_test

import (
	"context"
	"net/http"
	"testing"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/tokeninvalidator"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
	webhook "github.com/gardener-knative/gardener-knative/pkg/webhook/tokeninvalidator"
)

// staticToken creates a static token Secret of ServiceAccount sa in namespace of the shoot.
func staticToken(t testing.TB, shoot *testenv.Env, namespace, name, sa string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Annotations: map[string]string{corev1.ServiceAccountNameKey: sa}},
		Type:       corev1.SecretTypeServiceAccountToken,
		Data:       map[string][]byte{corev1.ServiceAccountTokenKey: []byte("static-jwt")},
	}
	require.NoError(t, shoot.Client.Create(context.Background(), s))
	return s
}

// labels reads the Secret's labels from the shoot.
func labels(t testing.TB, shoot *testenv.Env, s *corev1.Secret) map[string]string {
	t.Helper()
	require.NoError(t, shoot.Client.Get(context.Background(), client.ObjectKeyFromObject(s), s))
	return s.Labels
}

// Per seed, through the target source's events (Secrets in Reference mode): a static token of a
// ServiceAccount that opts out of automounting is labelled for the webhook to invalidate, once no
// Pod mounts it; the label goes when the ServiceAccount stops opting out or is labelled skip; a
// Secret whose event was lost is labelled by the sweep; another tenant's shoot is never touched.
func TestTokenInvalidator(t *testing.T) {
	ctx := context.Background()
	h := functiontest.New(t, seed, tokeninvalidator.Function, functiontest.AsFunction(), functiontest.WithTenants(),
		functiontest.WithConfig(&tokeninvalidator.Config{Enabled: true}))
	ns := targetNamespace(t)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}, AutomountServiceAccountToken: ptr.To(false)}
	require.NoError(t, shootA.Client.Create(ctx, sa))
	considered := map[string]string{resourcesv1alpha1.ResourceManagerPurpose: webhook.PurposeTokenInvalidation, webhook.LabelConsider: "true"}

	secret := staticToken(t, shootA, ns, "app-token", "app")
	h.SendTarget("add", secret, tenantA)
	assert.Equal(t, considered, labels(t, shootA, secret))

	// A Pod mounting the token keeps it valid, and the event is retried (503) until it is gone.
	mounted := staticToken(t, shootA, ns, "app-token-mounted", "app")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "uses-static-token"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "main", Image: "busybox"}},
			Volumes:    []corev1.Volume{{Name: "token", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: mounted.Name}}}},
		},
	}
	require.NoError(t, shootA.Client.Create(ctx, pod))
	code, body := h.Post(h.TargetEvent("add", mounted, tenantA))
	assert.Equal(t, http.StatusServiceUnavailable, code, body)
	assert.Equal(t, map[string]string{resourcesv1alpha1.ResourceManagerPurpose: webhook.PurposeTokenInvalidation}, labels(t, shootA, mounted))
	require.NoError(t, shootA.Client.Delete(ctx, pod, client.GracePeriodSeconds(0)))
	h.SendTarget("add", mounted, tenantA)
	assert.Equal(t, considered, labels(t, shootA, mounted))

	// The ServiceAccount stops opting out: both Secrets are restored through one event.
	sa.AutomountServiceAccountToken = ptr.To(true)
	require.NoError(t, shootA.Client.Update(ctx, sa))
	h.SendTarget("update", sa, tenantA)
	assert.NotContains(t, labels(t, shootA, secret), webhook.LabelConsider)
	assert.NotContains(t, labels(t, shootA, mounted), webhook.LabelConsider)

	// Opting out again, but labelled skip: nothing is considered.
	sa.AutomountServiceAccountToken = ptr.To(false)
	sa.Labels = map[string]string{webhook.LabelSkip: "true"}
	require.NoError(t, shootA.Client.Update(ctx, sa))
	h.SendTarget("update", sa, tenantA)
	assert.NotContains(t, labels(t, shootA, secret), webhook.LabelConsider)

	// Without skip; the events are lost: the sweep converges.
	sa.Labels = nil
	require.NoError(t, shootA.Client.Update(ctx, sa))
	lost := staticToken(t, shootA, ns, "app-token-lost", "app")
	other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "not-a-token"}, StringData: map[string]string{"k": "v"}}
	require.NoError(t, shootA.Client.Create(ctx, other))
	h.Sweep("resync")
	assert.Equal(t, considered, labels(t, shootA, lost))
	assert.Equal(t, considered, labels(t, shootA, secret))
	assert.Empty(t, labels(t, shootA, other), "a Secret of no ServiceAccount is left alone")

	// A second sweep with nothing to do writes nothing.
	h.ResetRequests()
	h.Sweep("resync")
	assert.Zero(t, h.Requests("patch"))

	// Tenant B's shoot has the same names; an event of tenant A never reaches it.
	saB := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}, AutomountServiceAccountToken: ptr.To(false)}
	require.NoError(t, shootB.Client.Create(ctx, saB))
	secretB := staticToken(t, shootB, ns, "app-token", "app")
	h.SendTarget("add", secretB, tenantA)
	assert.Empty(t, labels(t, shootB, secretB))
	h.SendTarget("add", secretB, tenantB)
	assert.Equal(t, considered, labels(t, shootB, secretB))
}

// With targetClientConnection.namespaces (a shoot's resource manager has kube-system,
// kubernetes-dashboard and kube-node-lease), only those namespaces' Secrets are labelled, as
// Gardener's controller, whose target cache is confined to them, sees no other: a shoot owner's
// ServiceAccount elsewhere keeps its static token, by event and by sweep.
func TestTokenInvalidatorOnlyInTheTargetNamespaces(t *testing.T) {
	ctx := context.Background()
	served := targetNamespace(t)
	h := functiontest.New(t, seed, tokeninvalidator.Function, functiontest.AsFunction(), functiontest.WithTenants(),
		functiontest.WithConfig(&tokeninvalidator.Config{Enabled: true, Namespaces: []string{served}}))
	ns := targetNamespace(t)
	for _, namespace := range []string{served, ns} {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "app"}, AutomountServiceAccountToken: ptr.To(false)}
		require.NoError(t, shootA.Client.Create(ctx, sa))
	}
	inServed := staticToken(t, shootA, served, "app-token", "app")
	elsewhere := staticToken(t, shootA, ns, "app-token", "app")
	h.SendTarget("add", elsewhere, tenantA)
	h.SendTarget("add", inServed, tenantA)
	h.Sweep("resync")
	assert.Empty(t, labels(t, shootA, elsewhere))
	assert.Equal(t, webhook.PurposeTokenInvalidation, labels(t, shootA, inServed)[resourcesv1alpha1.ResourceManagerPurpose])
}
