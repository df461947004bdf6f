package certificatesigningrequest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
)

// RequestTemplate is what a certificate request asks for in its subject and subject
// alternative names.
type RequestTemplate struct {
	CommonName    string
	Organizations []string
	DNSNames      []string
	IPAddresses   []net.IP
}

// NewRequestPEM creates a real PEM-encoded PKCS#10 certificate request for t with a fresh ECDSA
// key, as a gardenlet (or a forger) would. Tests and the landscape samples use it.
func NewRequestPEM(t RequestTemplate) ([]byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject:     pkix.Name{CommonName: t.CommonName, Organization: t.Organizations},
		DNSNames:    t.DNSNames,
		IPAddresses: t.IPAddresses,
	}, key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), nil
}
