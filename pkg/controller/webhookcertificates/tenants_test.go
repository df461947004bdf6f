package webhookcertificates

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// What a shoot's webhook trusts follows the host of its url: a serving certificate's Service its
// bundle, another Service of the namespace (a Knative Service, through the ingress) the
// ingress's CA, anything else nothing of ours.
func TestBundlesByHost(t *testing.T) {
	served, _, _ := issue(t, "grm-webhooks-tls", time.Now().Add(time.Hour))
	ingress, _, _ := issue(t, "ingress", time.Now().Add(time.Hour))
	secret := func(namespace, name string, labels map[string]string, bundle []byte) corev1.Secret {
		return corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels}, Data: map[string][]byte{KeyBundle: bundle}}
	}
	issued := map[string]string{LabelServingCertificate: "true"}
	b := BundlesOf("gardener-knative", []corev1.Secret{
		secret("gardener-knative", "grm-webhooks-tls", issued, served.CA),
		secret("gardener-knative", IngressCA, nil, ingress.CA),
		secret("gardener-knative", "half-issued-tls", issued, nil),
		secret("elsewhere", "other-tls", issued, served.CA),
	})
	require.Len(t, b.Certificates, 1, "only issued certificates with a bundle, of the namespace")

	for host, want := range map[string][]byte{
		"grm-webhooks-tls.gardener-knative.svc":                       served.CA,
		"grm-webhooks-tls.gardener-knative.svc.cluster.local":         served.CA,
		"grm-webhooks.gardener-knative.svc.cluster.local":             ingress.CA,
		"grm-webhooks-best-effort.gardener-knative.svc.cluster.local": ingress.CA,
		"half-issued-tls.gardener-knative.svc":                        ingress.CA,
		"other-tls.elsewhere.svc":                                     nil,
		"grm-webhooks.example.com":                                    nil,
	} {
		assert.Equal(t, want, b.BundleFor(host), host)
	}

	u := func(s string) *string { return &s }
	configs := []*admissionregistrationv1.WebhookClientConfig{
		{URL: u("https://grm-webhooks-tls.gardener-knative.svc/shoot--p--a/webhooks/x"), CABundle: []byte("old")},
		{URL: u("https://example.com/x"), CABundle: []byte("theirs")},
		{Service: &admissionregistrationv1.ServiceReference{Namespace: "gardener-knative", Name: "grm-webhooks-tls"}, CABundle: []byte("the seed's")},
	}
	assert.True(t, b.Inject(configs))
	assert.Equal(t, served.CA, configs[0].CABundle)
	assert.Equal(t, []byte("theirs"), configs[1].CABundle, "not ours")
	assert.Equal(t, []byte("the seed's"), configs[2].CABundle, "a seed registration by service is webhookcertificates' own")
	assert.False(t, b.Inject(configs), "in line: nothing changes")

	withoutIngress := BundlesOf("gardener-knative", nil)
	assert.Nil(t, withoutIngress.BundleFor("grm-webhooks.gardener-knative.svc.cluster.local"), "no ingress CA given: left as it is")
}

// A tenant lets a rotation go on once its record is the bundle's digest, or it is hibernated.
func TestTenantTrusts(t *testing.T) {
	bundle := []byte("bundle")
	assert.True(t, TenantTrusts(Digest(bundle), bundle))
	assert.True(t, TenantTrusts(TenantHibernated, bundle))
	assert.False(t, TenantTrusts(Digest([]byte("the old bundle")), bundle))
	assert.False(t, TenantTrusts("", bundle), "not recorded yet")
	assert.Equal(t, "gardener-knative.io/ca-bundle-grm-webhooks-tls", AnnotationTenantBundle("grm-webhooks-tls"))
}
