package gardencabundle_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/gardencabundle"
	"github.com/gardener-knative/gardener-knative/pkg/controller/webhookcertificates"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

var namespace = function.Runtime.Namespace()

// The function runs in the runtime cluster, where the serving certificate's Secret is, and works
// on the garden, where the registration naming it is: the registration gets the Secret's bundle,
// the Secret the record that the garden carries it, and through a rotation's steps (the bundle
// changed in the Secret, its event) both follow; nothing of one cluster lands in the other. A
// registration that stops naming the Secret takes the record with it (by the sweep, which its
// event cannot: it names only the Secret it names now).
func TestTheGardensRegistrationFollowsTheRuntimesCertificate(t *testing.T) {
	runtimeCluster, err := testenv.Start()
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, runtimeCluster.Stop()) })
	ensureNamespace(t, runtimeCluster.Client)
	h := functiontest.New(t, env, gardencabundle.Function, functiontest.AsFunction(), functiontest.WithTarget(runtimeCluster))
	ctx := context.Background()

	secret := servingSecret(t, runtimeCluster.Client, "two-clusters-tls")
	registration := gardenRegistration(t, env.Client, "two-clusters", namespace+"/"+secret.Name)
	h.Send("add", registration)
	bundle := secret.Data[webhookcertificates.KeyBundle]
	assert.Equal(t, [][]byte{bundle, bundle}, bundlesOf(t, env.Client, registration.Name))
	assert.Equal(t, webhookcertificates.Digest(bundle), recordOf(t, runtimeCluster.Client, secret.Name))
	assert.True(t, webhookcertificates.GardenTrusts(get(t, runtimeCluster.Client, secret.Name), bundle))

	// A rotation's first step: a second CA joins the bundle. Until the Secret's event is
	// reconciled the record no longer matches, and webhookcertificates waits.
	rotated := append(append([]byte{}, bundle...), newCA(t, "two-clusters-tls")...)
	secret = get(t, runtimeCluster.Client, secret.Name)
	secret.Data[webhookcertificates.KeyBundle] = rotated
	require.NoError(t, runtimeCluster.Client.Update(ctx, secret))
	assert.False(t, webhookcertificates.GardenTrusts(get(t, runtimeCluster.Client, secret.Name), rotated), "the garden has not been told yet")
	h.SendTarget("update", secret, "")
	assert.Equal(t, [][]byte{rotated, rotated}, bundlesOf(t, env.Client, registration.Name))
	assert.True(t, webhookcertificates.GardenTrusts(get(t, runtimeCluster.Client, secret.Name), rotated))

	// In line: the sweep writes nothing.
	counts := h.Measure(func() { h.Sweep(gardencabundle.ResyncSweepName) })
	assert.Zero(t, counts["patch"], "a sweep over what is in line patches nothing: %v", counts)

	// The registration names another Secret now: the sweep removes the record.
	registration = getRegistration(t, env.Client, registration.Name)
	registration.Annotations[webhookcertificates.AnnotationInjectFromSecret] = namespace + "/elsewhere-tls"
	require.NoError(t, env.Client.Update(ctx, registration))
	h.Sweep(gardencabundle.ResyncSweepName)
	_, recorded := get(t, runtimeCluster.Client, secret.Name).Annotations[webhookcertificates.AnnotationGardenBundle]
	assert.False(t, recorded, "no garden registration names the Secret any longer")
}

// Served as its own ServiceAccount with exactly config/'s RBAC, the garden and the runtime
// cluster being one: the operator's input (the ingress's CA, no serving certificate) goes into the
// registrations that name it, validating and mutating, and gets no record; a registration of another namespace's Secret or
// of none is left alone; the deletion's event removes the record.
func TestInputsAndDeletionAsItsServiceAccount(t *testing.T) {
	ensureNamespace(t, env.Client)
	h := functiontest.New(t, env, gardencabundle.Function, functiontest.AsFunction())
	ctx := context.Background()

	input := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: webhookcertificates.IngressCA},
		Data:       map[string][]byte{webhookcertificates.KeyBundle: newCA(t, "ingress")},
	}
	require.NoError(t, env.Client.Create(ctx, input))
	viaIngress := gardenRegistration(t, env.Client, "via-ingress", namespace+"/"+webhookcertificates.IngressCA)
	mutating := gardenMutatingRegistration(t, env.Client, "via-ingress-m", namespace+"/"+webhookcertificates.IngressCA)
	other := gardenRegistration(t, env.Client, "other-namespace", "gardener-knative/grm-webhooks-tls")
	h.Send("add", viaIngress)
	h.Send("add", other)
	ingressCA := input.Data[webhookcertificates.KeyBundle]
	assert.Equal(t, [][]byte{ingressCA, ingressCA}, bundlesOf(t, env.Client, viaIngress.Name))
	got := &admissionregistrationv1.MutatingWebhookConfiguration{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(mutating), got))
	assert.Equal(t, ingressCA, got.Webhooks[0].ClientConfig.CABundle, "a mutating registration naming the Secret too")
	assert.Empty(t, get(t, env.Client, input.Name).Annotations, "an input gets no record")
	assert.Equal(t, [][]byte{nil, nil}, bundlesOf(t, env.Client, other.Name), "not a Secret of the runtime part's")

	secret := servingSecret(t, env.Client, "deleted-tls")
	registration := gardenRegistration(t, env.Client, "deleted", namespace+"/"+secret.Name)
	h.Send("add", registration)
	require.NotEmpty(t, recordOf(t, env.Client, secret.Name))
	require.NoError(t, env.Client.Delete(ctx, registration))
	h.Send("delete", registration)
	_, recorded := get(t, env.Client, secret.Name).Annotations[webhookcertificates.AnnotationGardenBundle]
	assert.False(t, recorded, "the record went with the registration")

	// The sweep, as its ServiceAccount, keeps all of it as it is.
	h.Sweep(gardencabundle.ResyncSweepName)
	_, recorded = get(t, env.Client, secret.Name).Annotations[webhookcertificates.AnnotationGardenBundle]
	assert.False(t, recorded, "the sweep records nothing for a Secret no registration names")
	assert.Equal(t, [][]byte{ingressCA, ingressCA}, bundlesOf(t, env.Client, viaIngress.Name))
	assert.Empty(t, get(t, env.Client, input.Name).Annotations, "an input gets no record from the sweep either")
}

func ensureNamespace(t *testing.T, c client.Client) {
	t.Helper()
	err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
}

// newCA is a CA certificate (PEM) as webhookcertificates issues one.
func newCA(t *testing.T, service string) []byte {
	t.Helper()
	issued, err := webhookcertificates.IssueFor(context.Background(), service, namespace, time.Now().Add(24*time.Hour))
	require.NoError(t, err)
	return issued.CA
}

// servingSecret is a serving certificate's Secret as webhookcertificates makes one.
func servingSecret(t *testing.T, c client.Client, name string) *corev1.Secret {
	t.Helper()
	issued, err := webhookcertificates.IssueFor(context.Background(), name, namespace, time.Now().Add(24*time.Hour))
	require.NoError(t, err)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{
			"app.kubernetes.io/part-of": "gardener-knative", webhookcertificates.LabelServingCertificate: "true",
		}},
		Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: issued.Certificate, corev1.TLSPrivateKeyKey: issued.PrivateKey, webhookcertificates.KeyBundle: issued.CA},
	}
	require.NoError(t, c.Create(context.Background(), secret))
	return secret
}

// gardenRegistration registers two webhooks by url, their CA from the Secret ref names.
func gardenRegistration(t *testing.T, c client.Client, name, ref string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	t.Helper()
	none, ignore := admissionregistrationv1.SideEffectClassNone, admissionregistrationv1.Ignore
	webhook := func(n string) admissionregistrationv1.ValidatingWebhook {
		return admissionregistrationv1.ValidatingWebhook{
			Name: n + ".example.com", SideEffects: &none, FailurePolicy: &ignore, AdmissionReviewVersions: []string{"v1"},
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://" + name + "-tls." + namespace + ".svc/" + n)},
		}
	}
	obj := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{
			Name: "garden-" + name, Labels: map[string]string{"app.kubernetes.io/part-of": "gardener-knative"},
			Annotations: map[string]string{webhookcertificates.AnnotationInjectFromSecret: ref},
		},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{webhook("a"), webhook("b")},
	}
	require.NoError(t, c.Create(context.Background(), obj))
	return obj
}

// gardenMutatingRegistration registers a mutating webhook by url, its CA from the Secret ref names.
func gardenMutatingRegistration(t *testing.T, c client.Client, name, ref string) *admissionregistrationv1.MutatingWebhookConfiguration {
	t.Helper()
	none, ignore := admissionregistrationv1.SideEffectClassNone, admissionregistrationv1.Ignore
	obj := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{
			Name: "garden-" + name, Labels: map[string]string{"app.kubernetes.io/part-of": "gardener-knative"},
			Annotations: map[string]string{webhookcertificates.AnnotationInjectFromSecret: ref},
		},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "m.example.com", SideEffects: &none, FailurePolicy: &ignore, AdmissionReviewVersions: []string{"v1"},
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://" + name + "-tls." + namespace + ".svc/m")},
		}},
	}
	require.NoError(t, c.Create(context.Background(), obj))
	return obj
}

func getRegistration(t *testing.T, c client.Client, name string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	t.Helper()
	obj := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Name: name}, obj))
	return obj
}

func bundlesOf(t *testing.T, c client.Client, name string) [][]byte {
	t.Helper()
	var bundles [][]byte
	for _, w := range getRegistration(t, c, name).Webhooks {
		bundles = append(bundles, w.ClientConfig.CABundle)
	}
	return bundles
}

func get(t *testing.T, c client.Client, name string) *corev1.Secret {
	t.Helper()
	secret := &corev1.Secret{}
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, secret))
	return secret
}

func recordOf(t *testing.T, c client.Client, name string) string {
	t.Helper()
	return get(t, c, name).Annotations[webhookcertificates.AnnotationGardenBundle]
}
