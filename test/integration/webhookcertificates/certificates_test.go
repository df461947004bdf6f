package webhookcertificates_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/webhookcertificates"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
	"github.com/gardener-knative/gardener-knative/sources"
)

// The first registration of a Service gets its certificate issued, and every webhook of every
// registration of that Service the same bundle, which verifies it for the Service's host; a
// registration's second event changes nothing.
func TestIssuesOnceAndInjectsEveryRegistration(t *testing.T) {
	f := newHarness(t)
	const service = "issue-tls"
	m := mutatingFor(t, "certs-issue-m", service, nil)
	v := validatingFor(t, "certs-issue-v", service)

	f.Send("add", m)
	secret := secretOf(t, service)
	assert.Equal(t, corev1.SecretTypeTLS, secret.Type)
	assert.Equal(t, "true", secret.Labels[webhookcertificates.LabelServingCertificate])
	cert := served(t, secret)
	bundle := secret.Data[webhookcertificates.KeyBundle]
	assert.True(t, webhookcertificates.Verifies(bundle, cert, host(service), start), "the bundle verifies the certificate for the Service")
	assert.Equal(t, [][]byte{bundle, bundle}, bundles(t, m))

	f.Send("add", v)
	assert.Equal(t, [][]byte{bundle}, bundles(t, v), "the second registration trusts the same certificate")
	assert.Equal(t, cert.Raw, served(t, secretOf(t, service)).Raw, "issued once")

	requests := f.Measure(func() { f.Send("update", functiontest.Touched(t, env.Client, m)) })
	assert.Equal(t, map[string]int{"get": 2}, requests, "a registration in line costs its read and its Secret's")
}

// A rotation never serves a certificate some registration does not trust: at 80% of the validity
// the new CA joins the bundle and its certificate waits; it is served only once every
// registration of the Service has trusted it for the promotion delay; the old CA stays trusted
// until it expires, and is pruned then.
func TestRotatesInTwoPhases(t *testing.T) {
	f := newHarness(t)
	const service = "rotate-tls"
	m := mutatingFor(t, "certs-rotate-m", service, nil)
	v := validatingFor(t, "certs-rotate-v", service)
	f.Send("add", m)
	f.Send("add", v)
	first := served(t, secretOf(t, service))

	f.Clock.SetTime(webhookcertificates.RenewAt(first).Add(time.Minute))
	f.Send("update", functiontest.Touched(t, env.Client, m))
	secret := secretOf(t, service)
	state := webhookcertificates.Read(secret.Data)
	require.NotNil(t, state.Pending, "the rotation started")
	assert.Equal(t, first.Raw, state.Current.Raw, "the old certificate is still served")
	assert.Len(t, state.Bundle, 2, "both CAs are trusted")
	assert.Equal(t, secret.Data[webhookcertificates.KeyBundle], bundles(t, m)[0])
	assert.False(t, webhookcertificates.Verifies(bundles(t, v)[0], state.Pending, host(service), f.Clock.Now()), "the validating registration has not been told yet")

	// One registration does not trust the new CA yet: nothing is promoted, nor is trust recorded.
	f.Clock.Step(2 * time.Minute)
	f.Send("update", functiontest.Touched(t, env.Client, m))
	assert.Equal(t, first.Raw, served(t, secretOf(t, service)).Raw, "no server presents a certificate a registration would refuse")
	assert.NotContains(t, secretOf(t, service).Annotations, webhookcertificates.AnnotationTrustedSince)

	// The sweep brings the validating registration the bundle, and then finds both trusting the
	// new CA, which is recorded; the promotion waits for the delay.
	f.Sweep(webhookcertificates.ResyncValidating)
	assert.Contains(t, secretOf(t, service).Annotations, webhookcertificates.AnnotationTrustedSince)
	assert.Equal(t, first.Raw, served(t, secretOf(t, service)).Raw, "trusted too briefly")
	f.Clock.Step(2 * time.Minute)
	f.Sweep(webhookcertificates.ResyncMutating)
	promoted := secretOf(t, service)
	second := served(t, promoted)
	assert.Equal(t, state.Pending.Raw, second.Raw, "the pending certificate is served")
	assert.NotContains(t, promoted.Data, webhookcertificates.KeyPendingCertificate)
	for _, b := range append(bundles(t, m), bundles(t, v)...) {
		assert.True(t, webhookcertificates.Verifies(b, second, host(service), f.Clock.Now()), "every registration verifies the new certificate")
		assert.True(t, webhookcertificates.Verifies(b, first, host(service), f.Clock.Now()), "and still the old one, which a pod may serve until kubelet updates its volume")
	}

	// Once the old CA has expired, it is pruned from the Secret and the registrations.
	f.Clock.SetTime(first.NotAfter.Add(time.Minute))
	f.Sweep(webhookcertificates.ResyncMutating)
	pruned := webhookcertificates.Read(secretOf(t, service).Data)
	assert.Len(t, pruned.Bundle, 1, "the expired CA is gone")
	assert.Equal(t, second.Raw, pruned.Current.Raw)
	assert.Len(t, webhookcertificates.ParseBundle(bundles(t, m)[0]), 1)
}

// An operator's gardener.cloud/operation: rotate-ca-start on the Secret starts a rotation now
// (through the Secret's event, mapped to the registrations it serves); the annotation is removed.
func TestOperatorStartsARotation(t *testing.T) {
	f := newHarness(t)
	const service = "operator-tls"
	m := mutatingFor(t, "certs-operator-m", service, nil)
	f.Send("add", m)
	secret := secretOf(t, service)
	metav1.SetMetaDataAnnotation(&secret.ObjectMeta, v1beta1constants.GardenerOperation, v1beta1constants.OperationRotateCAStart)
	require.NoError(t, env.Client.Update(context.Background(), secret))

	f.Send("update", secret)
	rotated := secretOf(t, service)
	assert.NotContains(t, rotated.Annotations, v1beta1constants.GardenerOperation, "the request is answered")
	assert.Contains(t, rotated.Data, webhookcertificates.KeyPendingCertificate)
	assert.Len(t, webhookcertificates.ParseBundle(bundles(t, m)[0]), 2)

	f.Send("update", m)
	f.Clock.Step(2 * time.Minute)
	f.Send("update", rotated)
	assert.NotContains(t, secretOf(t, service).Data, webhookcertificates.KeyPendingCertificate, "promoted once trusted for the delay")
}

// A registration that names an operator's Secret (the CA of an ingress in front of the servers)
// gets that Secret's ca.crt and no certificate is issued; while the Secret is missing the event
// is acknowledged (a sweep comes back), the registration untouched.
func TestInjectsAnOperatorsCA(t *testing.T) {
	f := newHarness(t)
	const service = "input-tls"
	m := mutatingFor(t, "certs-input-m", service, map[string]string{webhookcertificates.AnnotationInjectFromSecret: sources.Namespace + "/certs-input-ca"})

	code, body := f.Post(f.Event("add", m))
	assert.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, [][]byte{nil, nil}, bundles(t, m), "nothing to inject yet")

	issued, err := webhookcertificates.IssueFor(context.Background(), "ingress", "knative-serving", start.Add(time.Hour))
	require.NoError(t, err)
	input := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: sources.Namespace, Name: "certs-input-ca"}, Data: map[string][]byte{webhookcertificates.KeyBundle: issued.CA}}
	create(t, input)
	f.Sweep(webhookcertificates.ResyncMutating)
	assert.Equal(t, [][]byte{issued.CA, issued.CA}, bundles(t, m))
	assert.NotContains(t, func() []string {
		var names []string
		list := &corev1.SecretList{}
		require.NoError(t, env.Client.List(context.Background(), list))
		for _, s := range list.Items {
			names = append(names, s.Name)
		}
		return names
	}(), service, "no certificate issued for a registration that trusts an input")
}

// Two registrations of a new Service reconciled at once issue one certificate: the second create
// fails, its event is retried (503) and then trusts the first's.
func TestConcurrentFirstIssuesOnce(t *testing.T) {
	f := newHarness(t)
	const service = "race-tls"
	m := mutatingFor(t, "certs-race-m", service, nil)
	v := validatingFor(t, "certs-race-v", service)
	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i, event := range []func() (int, string){func() (int, string) { return f.Post(f.Event("add", m)) }, func() (int, string) { return f.Post(f.Event("add", v)) }} {
		wg.Add(1)
		go func() { defer wg.Done(); codes[i], _ = event() }()
	}
	wg.Wait()
	for _, code := range codes {
		assert.Contains(t, []int{http.StatusOK, http.StatusServiceUnavailable}, code)
	}
	// What the sender does with a 503: send again.
	f.Send("add", m)
	f.Send("add", v)
	cert := served(t, secretOf(t, service))
	for _, b := range append(bundles(t, m), bundles(t, v)...) {
		assert.True(t, webhookcertificates.Verifies(b, cert, host(service), start))
	}
}

// Each part of config/ runs its own instance, in one cluster when the runtime cluster is a seed:
// an instance leaves the registrations served from another part's namespace to that part's
// instance (no Secret, no patch, nothing counted), and refuses, terminally and counted, one whose
// webhooks are served from a namespace of no part, where it has no business.
func TestServesOnlyItsPartsRegistrations(t *testing.T) {
	f := newHarness(t)
	otherPart := mutatingFor(t, "certs-other-part", "other-tls", nil)
	otherPart.Webhooks[0].ClientConfig.Service.Namespace = function.Runtime.Namespace()
	otherPart.Webhooks[1].ClientConfig.Service.Namespace = function.Runtime.Namespace()
	require.NoError(t, env.Client.Update(context.Background(), otherPart))

	requests := f.Measure(func() { f.Send("add", otherPart) })
	assert.Equal(t, map[string]int{"get": 1}, requests, "the registration's read, then nothing")
	assert.Equal(t, [][]byte{nil, nil}, bundles(t, otherPart))
	for _, part := range function.AllParts {
		err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: part.Namespace(), Name: "other-tls"}, &corev1.Secret{})
		assert.True(t, apierrors.IsNotFound(err), "no certificate issued in %s: %v", part.Namespace(), err)
	}
	assert.Zero(t, f.Metric("gardener_knative_events_terminal_total", nil), "another part's is no failure")

	foreign := mutatingFor(t, "certs-foreign", "foreign-tls", nil)
	foreign.Webhooks[0].ClientConfig.Service.Namespace = "default"
	foreign.Webhooks[1].ClientConfig.Service.Namespace = "default"
	require.NoError(t, env.Client.Update(context.Background(), foreign))
	f.Send("add", foreign)
	assert.Equal(t, [][]byte{nil, nil}, bundles(t, foreign))
	assert.Equal(t, 1.0, f.Metric("gardener_knative_events_terminal_total", nil), "a namespace of no part is refused, counted")
}

// The garden's registrations of a Service (the runtime part's, kept by gardencabundle) hold a
// rotation up as the Service's own do: while the Secret's garden record names an older bundle,
// no trust is recorded and nothing is promoted; once it names the current bundle, the rotation
// goes on.
func TestARotationWaitsForTheGarden(t *testing.T) {
	f := newHarness(t)
	const service = "garden-tls"
	m := mutatingFor(t, "certs-garden-m", service, nil)
	f.Send("add", m)
	first := served(t, secretOf(t, service))
	setGardenRecord(t, service, webhookcertificates.Digest(secretOf(t, service).Data[webhookcertificates.KeyBundle]))

	f.Clock.SetTime(webhookcertificates.RenewAt(first).Add(time.Minute))
	f.Sweep(webhookcertificates.ResyncMutating)
	require.NotNil(t, webhookcertificates.Read(secretOf(t, service).Data).Pending, "the rotation started")
	f.Clock.Step(2 * time.Minute)
	f.Sweep(webhookcertificates.ResyncMutating)
	assert.NotContains(t, secretOf(t, service).Annotations, webhookcertificates.AnnotationTrustedSince, "the garden carries the old bundle")

	setGardenRecord(t, service, webhookcertificates.Digest(secretOf(t, service).Data[webhookcertificates.KeyBundle]))
	f.Sweep(webhookcertificates.ResyncMutating)
	assert.Contains(t, secretOf(t, service).Annotations, webhookcertificates.AnnotationTrustedSince)
	f.Clock.Step(2 * time.Minute)
	f.Sweep(webhookcertificates.ResyncMutating)
	assert.NotEqual(t, first.Raw, served(t, secretOf(t, service)).Raw, "promoted")
}

// setGardenRecord records on the Service's Secret which bundle the garden carries, as
// gardencabundle does.
func setGardenRecord(t *testing.T, service, digest string) {
	t.Helper()
	secret := secretOf(t, service)
	metav1.SetMetaDataAnnotation(&secret.ObjectMeta, webhookcertificates.AnnotationGardenBundle, digest)
	require.NoError(t, env.Client.Update(context.Background(), secret))
}
