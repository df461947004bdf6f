package webhookcertificates

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	certresources "knative.dev/pkg/webhook/certificates/resources"
)

// The keys of a serving certificate's Secret (type kubernetes.io/tls). The servers mount tls.crt
// and tls.key; the registrations get ca.crt. A certificate about to replace the served one waits
// under the pending keys until every registration trusts its CA.
const (
	KeyCertificate        = corev1.TLSCertKey
	KeyPrivateKey         = corev1.TLSPrivateKeyKey
	KeyBundle             = "ca.crt"
	KeyPendingCertificate = "pending-tls.crt"
	KeyPendingPrivateKey  = "pending-tls.key"
)

// Serving is one serving certificate's state, read from its Secret.
type Serving struct {
	// Current is the certificate the servers present (tls.crt); nil when missing or unreadable.
	Current *x509.Certificate
	// Pending is the certificate that replaces it once its CA is trusted everywhere; nil when
	// no rotation is under way.
	Pending *x509.Certificate
	// TrustedSince is when every registration of the Service was first seen trusting the
	// pending certificate's CA; zero while one does not.
	TrustedSince time.Time
	// Bundle are the CAs the registrations trust (ca.crt).
	Bundle []*x509.Certificate
	// RotationRequested says the operator asked for a rotation now (gardener.cloud/operation:
	// rotate-ca-start on the Secret).
	RotationRequested bool
}

// Step is what a reconcile does to a serving certificate.
type Step int

const (
	// Keep changes nothing.
	Keep Step = iota
	// Issue replaces the served certificate at once, with a new CA added to the bundle: there is
	// none yet, it is unreadable, expired or not for the Service. Only the first issue is safe
	// while servers run: the others are repairs.
	Issue
	// Prepare starts a rotation: a new CA joins the bundle and its certificate waits as pending.
	Prepare
	// Trust records that every registration trusts the pending certificate (TrustedSince).
	Trust
	// Distrust clears that record: a registration does not trust it (any more).
	Distrust
	// Promote ends the rotation: the pending certificate becomes the served one.
	Promote
	// Prune drops the CAs of the bundle that have expired.
	Prune
)

// Policy is when certificates are issued, rotated and promoted.
type Policy struct {
	// Validity is how long a CA and its certificate are valid (Gardener's webhook CA: 30 days).
	Validity time.Duration
	// PromotionDelay is how long every registration must have trusted a pending certificate's CA
	// before a server presents the certificate: each kube-apiserver picks up a registration's
	// caBundle from its watch within seconds, and the order must never turn.
	PromotionDelay time.Duration
}

// RenewAt is when a rotation of c starts by itself: at 80% of its validity, as Gardener's
// secrets manager rotates its CAs.
func RenewAt(c *x509.Certificate) time.Time {
	return c.NotAfter.Add(-c.NotAfter.Sub(c.NotBefore) / 5)
}

// Decide is the next step for the serving certificate of the Service host (name.namespace.svc).
// trusted says whether every registration served by the certificate trusts the pending
// certificate's CA; it is asked only while a certificate is pending, since it costs reads. A
// pending certificate is promoted once every registration has trusted it for PromotionDelay:
// one reconcile records the trust (Trust), a later one (the Secret's event, a sweep) promotes.
func Decide(now time.Time, s Serving, host string, policy Policy, trusted func() (bool, error)) (Step, error) {
	if s.Current == nil || !now.Before(s.Current.NotAfter) || s.Current.VerifyHostname(host) != nil {
		return Issue, nil
	}
	if s.Pending == nil {
		if s.RotationRequested || !now.Before(RenewAt(s.Current)) {
			return Prepare, nil
		}
		if slices.ContainsFunc(s.Bundle, func(ca *x509.Certificate) bool { return !now.Before(ca.NotAfter) }) {
			return Prune, nil
		}
		return Keep, nil
	}
	ok, err := trusted()
	switch {
	case err != nil:
		return Keep, err
	case !ok && !s.TrustedSince.IsZero():
		return Distrust, nil
	case !ok:
		return Keep, nil
	case s.TrustedSince.IsZero():
		return Trust, nil
	case now.Sub(s.TrustedSince) >= policy.PromotionDelay:
		return Promote, nil
	}
	return Keep, nil
}

// Issued is a CA and the serving certificate it signed, PEM-encoded.
type Issued struct {
	Certificate, PrivateKey, CA []byte
}

// IssueFor makes a CA and a serving certificate for the Service name in namespace, valid until
// notAfter, with Knative's webhook certificate maker (knative.dev/pkg, what Knative's own
// webhooks serve with): its names are the Service's (name, name.namespace, name.namespace.svc,
// name.namespace.svc.cluster.local); the CA's key is never kept, so nothing can sign with it
// afterwards.
func IssueFor(ctx context.Context, name, namespace string, notAfter time.Time) (Issued, error) {
	key, cert, ca, err := certresources.CreateCerts(ctx, name, namespace, notAfter)
	if err != nil {
		return Issued{}, fmt.Errorf("issuing the serving certificate of %s/%s: %w", namespace, name, err)
	}
	return Issued{Certificate: cert, PrivateKey: key, CA: ca}, nil
}

// Read parses a Secret's data into the serving certificate's state. A certificate that does not
// parse or does not match its key reads as missing (it is issued anew); unreadable bundle
// entries are dropped.
func Read(data map[string][]byte) Serving {
	return Serving{
		Current: leaf(data[KeyCertificate], data[KeyPrivateKey]),
		Pending: leaf(data[KeyPendingCertificate], data[KeyPendingPrivateKey]),
		Bundle:  ParseBundle(data[KeyBundle]),
	}
}

func leaf(certPEM, keyPEM []byte) *x509.Certificate {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil
	}
	return pair.Leaf
}

// ParseBundle reads every certificate of a PEM bundle, skipping what does not parse.
func ParseBundle(bundle []byte) []*x509.Certificate {
	var certs []*x509.Certificate
	for rest := bundle; ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			return certs
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		if c, err := x509.ParseCertificate(block.Bytes); err == nil {
			certs = append(certs, c)
		}
	}
}

// EncodeBundle writes CAs as a PEM bundle, latest expiry first, each once and none expired at
// now.
func EncodeBundle(now time.Time, cas []*x509.Certificate) []byte {
	kept := slices.DeleteFunc(slices.Clone(cas), func(c *x509.Certificate) bool { return !now.Before(c.NotAfter) })
	slices.SortStableFunc(kept, func(a, b *x509.Certificate) int { return b.NotAfter.Compare(a.NotAfter) })
	var out []byte
	seen := map[string]bool{}
	for _, c := range kept {
		if !seen[string(c.Raw)] {
			seen[string(c.Raw)] = true
			out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
		}
	}
	return out
}

// Verifies says whether bundle verifies cert for host at now: what kube-apiserver checks when it
// calls a webhook with that caBundle.
func Verifies(bundle []byte, cert *x509.Certificate, host string, now time.Time) bool {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(bundle) {
		return false
	}
	_, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: host, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	return err == nil
}

// parseCA reads the one CA an issue made.
func parseCA(caPEM []byte) (*x509.Certificate, error) {
	cas := ParseBundle(caPEM)
	if len(cas) != 1 {
		return nil, errors.New("the issued CA does not parse")
	}
	return cas[0], nil
}
