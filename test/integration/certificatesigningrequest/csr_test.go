package certificatesigningrequest_test

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"

	csrcontroller "github.com/gardener-knative/gardener-knative/pkg/controller/certificatesigningrequest"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
)

var (
	gardenlet       = csrcontroller.RequestTemplate{CommonName: "gardener.cloud:system:seed:aws-eu1", Organizations: []string{"gardener.cloud:system:seeds"}}
	gardenletUsages = []certificatesv1.KeyUsage{certificatesv1.UsageKeyEncipherment, certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	clientSigner    = certificatesv1.KubeAPIServerClientSignerName
)

func approved(csr *certificatesv1.CertificateSigningRequest) *certificatesv1.CertificateSigningRequestCondition {
	for i, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateApproved {
			return &csr.Status.Conditions[i]
		}
	}
	return nil
}

// A gardenlet's request, made with its bootstrap token, is approved through the approval
// subresource with Gardener's condition, by the function running with exactly its RBAC.
func TestApprovesGardenletRequest(t *testing.T) {
	grantRequesters(t)
	f := functiontest.New(t, env, csrcontroller.Function, functiontest.AsFunction())
	csr := createAs(t, bootstrapper, "seed-csr-legit", gardenlet, clientSigner, gardenletUsages...)

	requests := f.Measure(func() { f.Send("add", csr) })
	assert.Equal(t, map[string]int{"get": 1, "create": 1, "update": 1}, requests, "read it, one SubjectAccessReview, one approval")

	got := get(t, csr.Name)
	condition := approved(got)
	if assert.NotNil(t, condition, "the gardenlet's request must be approved") {
		assert.Equal(t, corev1.ConditionTrue, condition.Status)
		assert.Equal(t, csrcontroller.ApprovedReason, condition.Reason)
		assert.Equal(t, csrcontroller.ApprovedMessage, condition.Message)
	}
	assert.Equal(t, bootstrapper.UserName, got.Spec.Username)

	// Its update event (approved now) is filtered without a request, and a sweep leaves it be.
	requests = f.Measure(func() {
		f.Send("update", got)
		f.Sweep(csrcontroller.ResyncSweep)
	})
	assert.Equal(t, map[string]int{"list": 1}, requests, "an approved request costs nothing but the sweep's LIST")
	assert.Len(t, get(t, csr.Name).Status.Conditions, 1)
}

// Forged or mismatched requests are never approved (nor denied): each is left alone, logged and
// counted by reason, whether it arrives as an event or is met by a sweep.
func TestNeverApprovesForgedRequests(t *testing.T) {
	grantRequesters(t)
	f := functiontest.New(t, env, csrcontroller.Function, functiontest.AsFunction())
	for _, tc := range []struct {
		name      string
		requester bool // true: the bootstrapper, who may create seedclient; false: mallory
		tmpl      csrcontroller.RequestTemplate
		signer    string
		usages    []certificatesv1.KeyUsage
		reason    csrcontroller.Reason
	}{
		{"wrong-organization", true, csrcontroller.RequestTemplate{CommonName: gardenlet.CommonName, Organizations: []string{"gardener.cloud:system:shoots"}}, clientSigner, gardenletUsages, csrcontroller.WrongOrganization},
		{"extra-organization", true, csrcontroller.RequestTemplate{CommonName: gardenlet.CommonName, Organizations: []string{"gardener.cloud:system:seeds", "system:nodes"}}, clientSigner, gardenletUsages, csrcontroller.WrongOrganization},
		{"wrong-common-name", true, csrcontroller.RequestTemplate{CommonName: "kubernetes-admin", Organizations: gardenlet.Organizations}, clientSigner, gardenletUsages, csrcontroller.WrongCommonName},
		{"dns-name", true, csrcontroller.RequestTemplate{CommonName: gardenlet.CommonName, Organizations: gardenlet.Organizations, DNSNames: []string{"api.example.com"}}, clientSigner, gardenletUsages, csrcontroller.SubjectAlternativeNames},
		{"ip-address", true, csrcontroller.RequestTemplate{CommonName: gardenlet.CommonName, Organizations: gardenlet.Organizations, IPAddresses: []net.IP{net.ParseIP("10.1.2.3")}}, clientSigner, gardenletUsages, csrcontroller.SubjectAlternativeNames},
		{"wrong-usages", true, gardenlet, clientSigner, []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}, csrcontroller.WrongUsages},
		{"missing-usage", true, gardenlet, clientSigner, []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}, csrcontroller.WrongUsages},
		{"extra-usage", true, gardenlet, clientSigner, append([]certificatesv1.KeyUsage{certificatesv1.UsageServerAuth}, gardenletUsages...), csrcontroller.WrongUsages},
		{"wrong-signer", true, gardenlet, "example.com/forged", gardenletUsages, csrcontroller.WrongSigner},
		{"kubelet-signer", true, gardenlet, certificatesv1.KubeAPIServerClientKubeletSignerName, gardenletUsages, csrcontroller.WrongSigner},
		{"requester-without-seedclient-right", false, gardenlet, clientSigner, gardenletUsages, csrcontroller.NotAuthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requester := mallory
			if tc.requester {
				requester = bootstrapper
			}
			csr := createAs(t, requester, "forged-"+tc.name, tc.tmpl, tc.signer, tc.usages...)
			before := notApproved(t, f.Registry, tc.reason)

			requests := f.Measure(func() { f.Send("add", csr) })
			assert.Zero(t, requests["update"], "nothing is written for a forged request")
			assert.Equal(t, before+1, notApproved(t, f.Registry, tc.reason), "counted as %s", tc.reason)

			f.Sweep(csrcontroller.ResyncSweep)
			assert.Empty(t, get(t, csr.Name).Status.Conditions, "neither approved nor denied")
		})
	}
}
