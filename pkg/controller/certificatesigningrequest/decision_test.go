package certificatesigningrequest

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gardener-knative/gardener-knative/pkg/function"
)

var gardenletUsages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth}

func request(t *testing.T, tmpl RequestTemplate, signer string, usages ...certificatesv1.KeyUsage) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	data, err := NewRequestPEM(tmpl)
	require.NoError(t, err)
	return &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{Request: data, SignerName: signer, Usages: usages}}
}

func TestCheckSeedClient(t *testing.T) {
	seed := RequestTemplate{CommonName: "gardener.cloud:system:seed:aws", Organizations: []string{"gardener.cloud:system:seeds"}}
	client := certificatesv1.KubeAPIServerClientSignerName
	for _, tc := range []struct {
		name string
		csr  *certificatesv1.CertificateSigningRequest
		want Reason
	}{
		{"a gardenlet's request", request(t, seed, client, gardenletUsages...), ""},
		{"usages in another order", request(t, seed, client, certificatesv1.UsageClientAuth, certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment), ""},
		{"another signer", request(t, seed, "kubernetes.io/kube-apiserver-client-kubelet", gardenletUsages...), WrongSigner},
		{"no organization", request(t, RequestTemplate{CommonName: seed.CommonName}, client, gardenletUsages...), WrongOrganization},
		{"another organization", request(t, RequestTemplate{CommonName: seed.CommonName, Organizations: []string{"system:masters"}}, client, gardenletUsages...), WrongOrganization},
		{"an additional organization", request(t, RequestTemplate{CommonName: seed.CommonName, Organizations: []string{"gardener.cloud:system:seeds", "system:masters"}}, client, gardenletUsages...), WrongOrganization},
		{"a common name that is no seed's", request(t, RequestTemplate{CommonName: "admin", Organizations: seed.Organizations}, client, gardenletUsages...), WrongCommonName},
		{"a shoot's common name", request(t, RequestTemplate{CommonName: "gardener.cloud:system:shoot:garden-a:b", Organizations: seed.Organizations}, client, gardenletUsages...), WrongCommonName},
		{"a DNS name", request(t, RequestTemplate{CommonName: seed.CommonName, Organizations: seed.Organizations, DNSNames: []string{"evil.example.com"}}, client, gardenletUsages...), SubjectAlternativeNames},
		{"an IP address", request(t, RequestTemplate{CommonName: seed.CommonName, Organizations: seed.Organizations, IPAddresses: []net.IP{net.ParseIP("10.0.0.1")}}, client, gardenletUsages...), SubjectAlternativeNames},
		{"a usage missing", request(t, seed, client, certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth), WrongUsages},
		{"an extra usage", request(t, seed, client, append([]certificatesv1.KeyUsage{certificatesv1.UsageServerAuth}, gardenletUsages...)...), WrongUsages},
		{"no usages", request(t, seed, client), WrongUsages},
		{"not a certificate request", &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{Request: []byte("garbage"), SignerName: client, Usages: gardenletUsages}}, MalformedRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reason, message := CheckSeedClient(tc.csr)
			assert.Equal(t, tc.want, reason, message)
			assert.Equal(t, reason == "", message == "")
		})
	}
}

func TestPredicate(t *testing.T) {
	event := func(csr *certificatesv1.CertificateSigningRequest, deleted bool) function.Event {
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(csr)
		require.NoError(t, err)
		return function.Event{Deleted: deleted, Object: &unstructured.Unstructured{Object: content}}
	}
	pending := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "csr"}}
	approved := pending.DeepCopy()
	approved.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue}}
	denied := pending.DeepCopy()
	denied.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue}}
	issued := pending.DeepCopy()
	issued.Status.Certificate = []byte("cert")

	assert.True(t, Predicate(event(pending, false)))
	assert.False(t, Predicate(event(pending, true)), "a deleted request has nothing to decide")
	assert.False(t, Predicate(event(approved, false)))
	assert.False(t, Predicate(event(denied, false)))
	assert.False(t, Predicate(event(issued, false)))
}
