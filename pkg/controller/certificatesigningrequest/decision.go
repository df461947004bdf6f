// Package certificatesigningrequest auto-approves the CertificateSigningRequests with which
// gardenlets bootstrap their client certificate for the garden (GCM's CertificateSigningRequest
// controller): only a request that asks for exactly what a gardenlet asks for, made by a
// requester who may create certificatesigningrequests/seedclient, is approved. Nothing else is
// ever approved or denied.
package certificatesigningrequest

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"

	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Reason says why a request is not approved; it labels the not-approved counter.
type Reason string

// The reasons a request is left alone, in the order they are checked.
const (
	// WrongSigner: the request is not for kube-apiserver client certificates.
	WrongSigner Reason = "signer"
	// MalformedRequest: spec.request is not a PEM-encoded PKCS#10 certificate request.
	MalformedRequest Reason = "malformed-request"
	// WrongOrganization: the subject's organization is not exactly the seeds' group.
	WrongOrganization Reason = "organization"
	// WrongCommonName: the subject's common name is not a seed's user name.
	WrongCommonName Reason = "common-name"
	// SubjectAlternativeNames: the request names DNS names, e-mail addresses, IPs or URIs.
	SubjectAlternativeNames Reason = "subject-alternative-names"
	// WrongUsages: the usages are not exactly key encipherment, digital signature, client auth.
	WrongUsages Reason = "usages"
	// NotAuthorized: the requester may not create certificatesigningrequests/seedclient.
	NotAuthorized Reason = "not-authorized"
)

// SeedClientSubresource is the subresource whose create permission makes a requester trusted
// to obtain a seed client certificate (granted to system:bootstrappers by Gardener's
// gardener.cloud:system:seed-bootstrapper ClusterRole).
const SeedClientSubresource = "seedclient"

// seedClientUsages are the usages of a gardenlet's client certificate, exactly.
var seedClientUsages = sets.New(certificatesv1.UsageKeyEncipherment, certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth)

// InFinalState says whether csr was approved or denied already, or has its certificate: then
// there is nothing to decide.
func InFinalState(csr *certificatesv1.CertificateSigningRequest) bool {
	if len(csr.Status.Certificate) > 0 {
		return true
	}
	for _, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateApproved || c.Type == certificatesv1.CertificateDenied {
			return true
		}
	}
	return false
}

// CheckSeedClient decides whether csr asks for exactly a gardenlet's client certificate, as
// Gardener's seed client check does (organization, common name prefix, no subject alternative
// names, usages), for the kube-apiserver client signer. It returns the reason it does not and a
// message saying what is wrong; an empty reason means the request qualifies, pending the
// requester's authorization.
func CheckSeedClient(csr *certificatesv1.CertificateSigningRequest) (Reason, string) {
	if csr.Spec.SignerName != certificatesv1.KubeAPIServerClientSignerName {
		return WrongSigner, fmt.Sprintf("signer is %q, not %q", csr.Spec.SignerName, certificatesv1.KubeAPIServerClientSignerName)
	}
	request, err := ParseRequest(csr.Spec.Request)
	if err != nil {
		return MalformedRequest, err.Error()
	}
	if want := []string{v1beta1constants.SeedsGroup}; !slices.Equal(request.Subject.Organization, want) {
		return WrongOrganization, fmt.Sprintf("subject's organization is %v, not %v", request.Subject.Organization, want)
	}
	if !strings.HasPrefix(request.Subject.CommonName, v1beta1constants.SeedUserNamePrefix) {
		return WrongCommonName, fmt.Sprintf("subject's common name %q does not start with %q", request.Subject.CommonName, v1beta1constants.SeedUserNamePrefix)
	}
	if len(request.DNSNames) > 0 || len(request.EmailAddresses) > 0 || len(request.IPAddresses) > 0 || len(request.URIs) > 0 {
		return SubjectAlternativeNames, "DNSNames, EmailAddresses, IPAddresses and URIs must be empty"
	}
	if !sets.New(csr.Spec.Usages...).Equal(seedClientUsages) {
		return WrongUsages, fmt.Sprintf("key usages are %v, not %v", csr.Spec.Usages, sets.List(seedClientUsages))
	}
	return "", ""
}

// ParseRequest decodes a PEM-encoded PKCS#10 certificate request.
func ParseRequest(data []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, fmt.Errorf("PEM block type must be CERTIFICATE REQUEST")
	}
	return x509.ParseCertificateRequest(block.Bytes)
}
