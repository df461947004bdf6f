// Package webhookcertificates_test serves the webhookcertificates function in-process
// (functiontest, as its own ServiceAccount with exactly config/'s RBAC) against one real
// kube-apiserver and etcd, and walks a serving certificate through its life on a fake clock:
// issued for the first registration, injected into every registration of its Service, rotated
// in two phases, its old CA pruned once expired.
package webhookcertificates_test

import (
	"context"
	"crypto/x509"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/webhookcertificates"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
	"github.com/gardener-knative/gardener-knative/sources"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

// start is the fake clock's start. It follows the wall clock because Knative's certificate maker
// stamps NotBefore with the real time of the issue; an hour ahead, every certificate issued in a
// test is already valid at start.
var start = time.Now().Add(time.Hour).Truncate(time.Second)

func newHarness(t *testing.T, options ...functiontest.Option) *functiontest.Harness {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: sources.Namespace}}
	if err := env.Client.Create(context.Background(), ns); !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	return functiontest.New(t, env, webhookcertificates.Function, append([]functiontest.Option{functiontest.AsFunction(), functiontest.At(start)}, options...)...)
}

var labels = map[string]string{"app.kubernetes.io/part-of": "gardener-knative"}

func reference(service string) admissionregistrationv1.WebhookClientConfig {
	path := "/webhooks/x"
	return admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: sources.Namespace, Name: service, Path: &path}}
}

// mutatingFor registers a mutating webhook of service (two webhooks: both get the bundle).
func mutatingFor(t *testing.T, name, service string, annotations map[string]string) *admissionregistrationv1.MutatingWebhookConfiguration {
	t.Helper()
	none, ignore := admissionregistrationv1.SideEffectClassNone, admissionregistrationv1.Ignore
	webhook := func(n string) admissionregistrationv1.MutatingWebhook {
		return admissionregistrationv1.MutatingWebhook{Name: n + ".example.com", ClientConfig: reference(service), SideEffects: &none, FailurePolicy: &ignore, AdmissionReviewVersions: []string{"v1"}}
	}
	obj := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations},
		Webhooks:   []admissionregistrationv1.MutatingWebhook{webhook("a"), webhook("b")},
	}
	create(t, obj)
	return obj
}

func validatingFor(t *testing.T, name, service string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	t.Helper()
	none, ignore := admissionregistrationv1.SideEffectClassNone, admissionregistrationv1.Ignore
	obj := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "v.example.com", ClientConfig: reference(service), SideEffects: &none, FailurePolicy: &ignore, AdmissionReviewVersions: []string{"v1"},
		}},
	}
	create(t, obj)
	return obj
}

func create(t *testing.T, obj client.Object) {
	t.Helper()
	require.NoError(t, env.Client.Create(context.Background(), obj))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
}

func secretOf(t *testing.T, service string) *corev1.Secret {
	t.Helper()
	secret := &corev1.Secret{}
	require.NoError(t, env.Client.Get(context.Background(), client.ObjectKey{Namespace: sources.Namespace, Name: service}, secret))
	return secret
}

// bundles are the caBundles of a registration's webhooks.
func bundles(t *testing.T, obj client.Object) [][]byte {
	t.Helper()
	require.NoError(t, env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj))
	var out [][]byte
	switch o := obj.(type) {
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		for _, w := range o.Webhooks {
			out = append(out, w.ClientConfig.CABundle)
		}
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		for _, w := range o.Webhooks {
			out = append(out, w.ClientConfig.CABundle)
		}
	}
	return out
}

// served is the certificate the servers mount (tls.crt), and pending the one waiting.
func served(t *testing.T, secret *corev1.Secret) *x509.Certificate {
	t.Helper()
	state := webhookcertificates.Read(secret.Data)
	require.NotNil(t, state.Current, "the Secret holds no served certificate")
	return state.Current
}

func host(service string) string { return service + "." + sources.Namespace + ".svc" }
