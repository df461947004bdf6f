package webhookcertificates

import (
	"context"
	"crypto/x509"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const host = "grm-webhooks-tls.gardener-knative.svc"

var policy = Policy{Validity: 30 * 24 * time.Hour, PromotionDelay: time.Minute}

func issue(t *testing.T, name string, notAfter time.Time) (Issued, *x509.Certificate, *x509.Certificate) {
	t.Helper()
	issued, err := IssueFor(context.Background(), name, "gardener-knative", notAfter)
	require.NoError(t, err)
	cert := leaf(issued.Certificate, issued.PrivateKey)
	require.NotNil(t, cert, "the certificate matches its key")
	ca, err := parseCA(issued.CA)
	require.NoError(t, err)
	return issued, cert, ca
}

func never() (bool, error) { panic("trust asked without a pending certificate") }

// The issued certificate is for the Service's names, verified by its CA alone, and its CA's key
// is not kept (nothing in Issued but the CA's certificate).
func TestIssueForTheService(t *testing.T) {
	issued, cert, ca := issue(t, "grm-webhooks-tls", time.Now().Add(policy.Validity))
	now := time.Now() // after the issue: the certificate maker stamps NotBefore with the real time
	for _, name := range []string{"grm-webhooks-tls.gardener-knative", host, host + ".cluster.local"} {
		assert.NoError(t, cert.VerifyHostname(name))
	}
	assert.True(t, Verifies(issued.CA, cert, host, now))
	assert.False(t, Verifies(issued.CA, cert, "other.gardener-knative.svc", now))
	assert.True(t, ca.IsCA)
	_, _, other := issue(t, "grm-webhooks-tls", now.Add(policy.Validity))
	assert.False(t, Verifies(EncodeBundle(now, []*x509.Certificate{other}), cert, host, now), "another CA does not verify it")
}

func TestDecide(t *testing.T) {
	now := time.Now()
	_, current, currentCA := issue(t, "grm-webhooks-tls", now.Add(policy.Validity))
	_, pending, pendingCA := issue(t, "grm-webhooks-tls", now.Add(policy.Validity))
	_, foreign, _ := issue(t, "other", now.Add(policy.Validity))
	_, expiring, expiringCA := issue(t, "grm-webhooks-tls", now.Add(time.Hour))
	renewAt := RenewAt(current)
	assert.WithinDuration(t, now.Add(24*24*time.Hour), renewAt, time.Minute, "at 80% of 30 days")

	cases := []struct {
		name    string
		now     time.Time
		state   Serving
		trusted func() (bool, error)
		want    Step
		wantErr bool
	}{
		{"nothing yet", now, Serving{}, never, Issue, false},
		{"for another Service", now, Serving{Current: foreign}, never, Issue, false},
		{"expired", current.NotAfter, Serving{Current: current, Bundle: []*x509.Certificate{currentCA}}, never, Issue, false},
		{"fresh", now, Serving{Current: current, Bundle: []*x509.Certificate{currentCA}}, never, Keep, false},
		{"due", renewAt, Serving{Current: current, Bundle: []*x509.Certificate{currentCA}}, never, Prepare, false},
		{"asked for", now, Serving{Current: current, Bundle: []*x509.Certificate{currentCA}, RotationRequested: true}, never, Prepare, false},
		{"an expired CA in the bundle", expiringCA.NotAfter, Serving{Current: current, Bundle: []*x509.Certificate{currentCA, expiringCA}}, never, Prune, false},
		{"pending, not trusted everywhere", now.Add(time.Minute), Serving{Current: current, Pending: pending}, func() (bool, error) { return false, nil }, Keep, false},
		{"pending, trust unknown", now.Add(time.Minute), Serving{Current: current, Pending: pending}, func() (bool, error) { return false, errors.New("list failed") }, Keep, true},
		{"pending, trusted now", now, Serving{Current: current, Pending: pending, Bundle: []*x509.Certificate{currentCA, pendingCA}}, func() (bool, error) { return true, nil }, Trust, false},
		{"pending, trusted too briefly", now.Add(30 * time.Second), Serving{Current: current, Pending: pending, TrustedSince: now}, func() (bool, error) { return true, nil }, Keep, false},
		{"pending, trust lost", now.Add(time.Minute), Serving{Current: current, Pending: pending, TrustedSince: now}, func() (bool, error) { return false, nil }, Distrust, false},
		{"pending, trusted long enough", now.Add(time.Minute), Serving{Current: current, Pending: pending, TrustedSince: now}, func() (bool, error) { return true, nil }, Promote, false},
		{"pending, but the served one expired", expiring.NotAfter, Serving{Current: expiring, Pending: pending, TrustedSince: now}, never, Issue, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Decide(c.now, c.state, host, policy, c.trusted)
			assert.Equal(t, c.want, got)
			assert.Equal(t, c.wantErr, err != nil, "error: %v", err)
		})
	}
}

// The bundle holds each CA once, latest expiry first, none expired; what does not parse is
// dropped when read.
func TestBundle(t *testing.T) {
	now := time.Now()
	_, _, a := issue(t, "s", now.Add(time.Hour))
	_, _, b := issue(t, "s", now.Add(2*time.Hour))
	bundle := EncodeBundle(now, []*x509.Certificate{a, b, a})
	got := ParseBundle(append(append([]byte{}, bundle...), []byte("-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n")...))
	require.Len(t, got, 2)
	assert.True(t, got[0].Equal(b))
	assert.True(t, got[1].Equal(a))
	assert.Len(t, ParseBundle(EncodeBundle(a.NotAfter, []*x509.Certificate{a, b})), 1, "an expired CA is dropped")
}

// Read sees a certificate whose key does not match as missing, so that it is issued anew.
func TestReadMismatchedKey(t *testing.T) {
	now := time.Now()
	one, _, _ := issue(t, "s", now.Add(time.Hour))
	two, _, _ := issue(t, "s", now.Add(time.Hour))
	s := Read(map[string][]byte{KeyCertificate: one.Certificate, KeyPrivateKey: two.PrivateKey, KeyBundle: one.CA})
	assert.Nil(t, s.Current)
	assert.Len(t, s.Bundle, 1)
}
