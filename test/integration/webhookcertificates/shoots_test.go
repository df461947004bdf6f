package webhookcertificates_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/shootcabundle"
	"github.com/gardener-knative/gardener-knative/pkg/controller/webhookcertificates"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/tenantproof"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
	"github.com/gardener-knative/gardener-knative/sources"
)

// A shoot's registrations reach the seed's servers at their TLS Service by url. The per-seed
// function shootcabundle gives them the serving certificate's bundle and records it on the
// tenant's Cluster; a rotation of the certificate is not promoted before the shoot carries the
// new CA, and afterwards the shoot's registrations verify the served certificate. A webhook of
// another host keeps its bundle; one of a Knative Service of our namespace trusts the ingress's
// CA once the operator provides it.
func TestShootRegistrationsTrustTheServersThroughARotation(t *testing.T) {
	ctx := context.Background()
	const service, tn = "shoots-tls", tenant.Name("shoot--p--ca")
	shoot, err := testenv.Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = shoot.Stop() })
	require.NoError(t, testenv.Enroll(ctx, env.Client, tn, shoot))
	t.Cleanup(func() { _ = env.Client.Delete(ctx, clusterOf(tn)) }) // the other tests' rotations wait for no tenant

	certificates := newHarness(t)
	cabundle := functiontest.New(t, env, shootcabundle.Function, functiontest.AsFunction(), functiontest.WithTenants(), functiontest.At(start))
	m := mutatingFor(t, "certs-shoots-m", service, nil)
	certificates.Send("add", m)
	first := served(t, secretOf(t, service))

	stale, other := []byte("stale"), []byte("another server's CA")
	registration := shootRegistration(t, shoot, tn, []string{
		"https://" + service + "." + sources.Namespace + ".svc/" + string(tn) + "/webhooks/x",
		"https://elsewhere.example.com/webhooks/y",
		"https://best-effort." + sources.Namespace + ".svc.cluster.local/" + string(tn) + "/z",
	}, [][]byte{stale, other, other})

	// The certificate's event reaches every tenant.
	cabundle.Send("update", secretOf(t, service))
	got := shootBundles(t, shoot, registration)
	assert.Equal(t, secretOf(t, service).Data[webhookcertificates.KeyBundle], got[0], "the serving certificate's bundle")
	assert.Equal(t, other, got[1], "another host's webhook keeps its bundle")
	assert.Equal(t, other, got[2], "no ingress CA given: kept")
	assert.Equal(t, webhookcertificates.Digest(got[0]), record(t, tn, service), "recorded on the tenant's Cluster")

	// The operator provides the ingress's CA: the sweep brings it to the Knative Service's webhook.
	ingress := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: sources.Namespace, Name: webhookcertificates.IngressCA}, Data: map[string][]byte{"ca.crt": secretOf(t, service).Data[webhookcertificates.KeyBundle]}}
	create(t, ingress)
	cabundle.Sweep("resync")
	assert.Equal(t, ingress.Data["ca.crt"], shootBundles(t, shoot, registration)[2], "the ingress's CA")

	// A rotation: the seed's registration trusts the new CA at once, the shoot does not yet, so
	// the trust is not recorded and nothing is promoted.
	secret := secretOf(t, service)
	metav1.SetMetaDataAnnotation(&secret.ObjectMeta, v1beta1constants.GardenerOperation, v1beta1constants.OperationRotateCAStart)
	require.NoError(t, env.Client.Update(ctx, secret))
	certificates.Send("update", secret)
	pending := webhookcertificates.Read(secretOf(t, service).Data).Pending
	require.NotNil(t, pending, "the rotation started")
	certificates.Clock.Step(2 * time.Minute)
	certificates.Send("update", functiontest.Touched(t, env.Client, m))
	assert.NotContains(t, secretOf(t, service).Annotations, webhookcertificates.AnnotationTrustedSince, "the shoot does not trust the new CA yet")
	assert.False(t, webhookcertificates.Verifies(shootBundles(t, shoot, registration)[0], pending, host(service), certificates.Clock.Now()))

	// shootcabundle's sweep brings the shoot the new bundle; then the rotation goes on.
	cabundle.Sweep("resync")
	assert.True(t, webhookcertificates.Verifies(shootBundles(t, shoot, registration)[0], pending, host(service), certificates.Clock.Now()))
	certificates.Send("update", functiontest.Touched(t, env.Client, m))
	assert.Contains(t, secretOf(t, service).Annotations, webhookcertificates.AnnotationTrustedSince)
	certificates.Clock.Step(2 * time.Minute)
	certificates.Send("update", functiontest.Touched(t, env.Client, m))
	second := served(t, secretOf(t, service))
	require.Equal(t, pending.Raw, second.Raw, "promoted")
	for _, b := range [][]byte{shootBundles(t, shoot, registration)[0], bundles(t, m)[0]} {
		assert.True(t, webhookcertificates.Verifies(b, second, host(service), certificates.Clock.Now()), "the shoot and the seed verify the new certificate")
		assert.True(t, webhookcertificates.Verifies(b, first, host(service), certificates.Clock.Now()), "and the old one, until every pod presents the new")
	}

	// A sweep that changes nothing writes nothing: one LIST of Clusters and one of our Secrets
	// in the seed, two LISTs in the shoot.
	shootPatches, shootLists := cabundle.TargetCounter.Total("patch"), cabundle.TargetCounter.Total("list")
	requests := cabundle.Measure(func() { cabundle.Sweep("resync") })
	assert.Zero(t, requests["patch"]+requests["update"], "nothing written in the seed: %v", requests)
	assert.Equal(t, 2, requests["list"], "the Clusters and our Secrets: %v", requests)
	assert.Zero(t, cabundle.TargetCounter.Total("patch")-shootPatches, "nothing written in the shoot")
	assert.Equal(t, 2, cabundle.TargetCounter.Total("list")-shootLists, "the shoot's two kinds of registration")
}

func clusterOf(tn tenant.Name) *metav1.PartialObjectMetadata {
	c := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: string(tn)}}
	c.SetGroupVersionKind(kinds.ExtensionsCluster.GroupVersionKind)
	return c
}

// record is what the tenant's Cluster records of the Secret's bundle.
func record(t *testing.T, tn tenant.Name, secret string) string {
	t.Helper()
	c := clusterOf(tn)
	require.NoError(t, env.Client.Get(context.Background(), client.ObjectKeyFromObject(c), c))
	return c.Annotations[webhookcertificates.AnnotationTenantBundle(secret)]
}

// shootRegistration registers, in the shoot, one webhook per url with its bundle, labelled as
// the enrolment labels them.
func shootRegistration(t *testing.T, shoot *testenv.Env, tn tenant.Name, urls []string, caBundles [][]byte) *admissionregistrationv1.ValidatingWebhookConfiguration {
	t.Helper()
	none, ignore := admissionregistrationv1.SideEffectClassNone, admissionregistrationv1.Ignore
	obj := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "shoot-" + string(tn), Labels: tenant.RegistrationLabels}}
	for i, u := range urls {
		obj.Webhooks = append(obj.Webhooks, admissionregistrationv1.ValidatingWebhook{
			Name: string(rune('a'+i)) + ".example.com", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &u, CABundle: caBundles[i]},
			SideEffects: &none, FailurePolicy: &ignore, AdmissionReviewVersions: []string{"v1"},
		})
	}
	require.NoError(t, shoot.Client.Create(context.Background(), obj))
	return obj
}

func shootBundles(t *testing.T, shoot *testenv.Env, obj *admissionregistrationv1.ValidatingWebhookConfiguration) [][]byte {
	t.Helper()
	got := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	require.NoError(t, shoot.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), got))
	var out [][]byte
	for _, w := range got.Webhooks {
		out = append(out, w.ClientConfig.CABundle)
	}
	return out
}

// proofsOf are the tenant proofs in the urls of the shoot's registration.
func proofsOf(t *testing.T, shoot *testenv.Env, obj *admissionregistrationv1.ValidatingWebhookConfiguration) []string {
	t.Helper()
	got := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	require.NoError(t, shoot.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), got))
	var out []string
	for _, w := range got.Webhooks {
		u, err := url.Parse(*w.ClientConfig.URL)
		require.NoError(t, err)
		_, proof, _, _ := tenantproof.ParsePath(u.Path, tenant.DefaultPrefix)
		out = append(out, proof)
	}
	return out
}

func proofKeys(t *testing.T) tenantproof.Keys {
	t.Helper()
	secret := &corev1.Secret{}
	require.NoError(t, env.Client.Get(context.Background(), client.ObjectKey{Namespace: sources.Namespace, Name: tenantproof.SecretName}, secret))
	keys, err := tenantproof.FromSecret(secret)
	require.NoError(t, err)
	return keys
}

// shootcabundle makes the seed's tenant proof keys, signs every tenant url of a shoot's
// registrations (one without a proof, as rendered before proofs, too) and rotates the keys: a
// new key signs only after PromotionDelay, the previous one is accepted until two rotations have
// passed, so that a kube-apiserver with the previous proof is never refused in between.
func TestShootRegistrationsCarryTheTenantsProofThroughARotation(t *testing.T) {
	ctx := context.Background()
	const tn = tenant.Name("shoot--p--proof")
	shoot, err := testenv.Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = shoot.Stop() })
	require.NoError(t, testenv.Enroll(ctx, env.Client, tn, shoot))
	t.Cleanup(func() { _ = env.Client.Delete(ctx, clusterOf(tn)) })
	cabundle := functiontest.New(t, env, shootcabundle.Function, functiontest.AsFunction(), functiontest.WithTenants(), functiontest.At(start))
	registration := shootRegistration(t, shoot, tn, []string{
		"https://grm-webhooks-tls." + sources.Namespace + ".svc/" + string(tn) + "/webhooks/x",
		"https://elsewhere.example.com/webhooks/y",
	}, [][]byte{nil, nil})
	const rotation = 720 * time.Hour // TENANT_PROOF_ROTATION's default

	cabundle.Sweep("resync")
	keys := proofKeys(t)
	require.Len(t, keys, 1, "the seed's first key")
	first, _ := keys.Signing(cabundle.Clock.Now())
	proofs := proofsOf(t, shoot, registration)
	assert.Equal(t, first.Proof(tn), proofs[0], "the tenant's url is signed")
	assert.Empty(t, proofs[1], "another host's url addresses no tenant")
	verified := func(proof string) bool {
		t.Helper()
		ok, err := tenantproof.NewRing(env.Client, sources.Namespace, cabundle.Clock).Verify(ctx, tn, proof)
		require.NoError(t, err)
		return ok
	}
	assert.True(t, verified(proofs[0]))

	// A rotation: the new key is accepted at once but signs only after PromotionDelay.
	cabundle.Clock.Step(rotation)
	cabundle.Sweep("resync")
	require.Len(t, proofKeys(t), 2)
	assert.Equal(t, first.Proof(tn), proofsOf(t, shoot, registration)[0], "not signed with a key a server may not know yet")
	cabundle.Clock.Step(tenantproof.PromotionDelay)
	cabundle.Sweep("resync")
	second, _ := proofKeys(t).Signing(cabundle.Clock.Now())
	require.NotEqual(t, first.ID(), second.ID())
	assert.Equal(t, second.Proof(tn), proofsOf(t, shoot, registration)[0], "signed with the new key")
	assert.True(t, verified(first.Proof(tn)), "the previous proof is still accepted (an authorizer file not yet rendered again)")

	// The next rotation drops the first key.
	cabundle.Clock.Step(rotation)
	cabundle.Sweep("resync")
	assert.Len(t, proofKeys(t), 2)
	assert.False(t, verified(first.Proof(tn)), "two rotations old: no longer accepted")
	assert.True(t, verified(second.Proof(tn)))
}
