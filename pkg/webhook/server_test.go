package webhook

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeCert writes a self-signed certificate for 127.0.0.1 with the given common name.
func writeCert(t *testing.T, dir, cn string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	// Written to temporary files and renamed, as a mounted Secret is updated.
	for name, block := range map[string]*pem.Block{"tls.crt": {Type: "CERTIFICATE", Bytes: der}, "tls.key": {Type: "EC PRIVATE KEY", Bytes: keyDER}} {
		tmp := filepath.Join(dir, "."+name)
		require.NoError(t, os.WriteFile(tmp, pem.EncodeToMemory(block), 0o600))
		require.NoError(t, os.Rename(tmp, filepath.Join(dir, name)))
	}
}

// servedCN returns the common name of the certificate the server presents with the given
// TLS version bounds, or an error.
func servedCN(addr string, minVersion, maxVersion uint16) (string, error) {
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, MinVersion: minVersion, MaxVersion: maxVersion}) //nolint:gosec // the test reads what is served
	if err != nil {
		return "", err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].Subject.CommonName, nil
}

func TestServeTLSReloadsCertificatesAndRecoversPanics(t *testing.T) {
	dir := t.TempDir()
	writeCert(t, dir, "first")
	reg := prometheus.NewRegistry()
	panicking := Webhook{Name: "panicking", Path: "/panic", Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("bug") })}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrs := make(chan net.Addr, 1)
	go func() {
		_ = Serve(ctx, ServeOptions{
			Addr: "127.0.0.1:0", CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key"),
			RequestTimeout: time.Second, ShutdownTimeout: time.Second, Ready: func(a net.Addr) { addrs <- a },
		}, []Webhook{panicking}, reg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	addr := (<-addrs).String()

	cn, err := servedCN(addr, tls.VersionTLS12, tls.VersionTLS13)
	require.NoError(t, err)
	assert.Equal(t, "first", cn)
	_, err = servedCN(addr, tls.VersionTLS10, tls.VersionTLS11)
	assert.Error(t, err, "TLS below 1.2 is refused")

	writeCert(t, dir, "rotated")
	require.Eventually(t, func() bool {
		cn, err := servedCN(addr, tls.VersionTLS12, tls.VersionTLS13)
		return err == nil && cn == "rotated"
	}, 10*time.Second, 50*time.Millisecond, "the rotated certificate is served without a restart")

	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed test certificate
	resp, err := client.Post("https://"+addr+"/panic", "application/json", nil)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusInternalServerError, resp.StatusCode, "a panic is an error response, not a dead server")
	resp, err = client.Get("https://" + addr + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	families, err := reg.Gather()
	require.NoError(t, err)
	found := false
	for _, f := range families {
		if f.GetName() == "gardener_knative_webhook_requests_total" {
			for _, m := range f.GetMetric() {
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				found = found || (labels["webhook"] == "panicking" && labels["code"] == "500" && m.GetCounter().GetValue() == 1)
			}
		}
	}
	assert.True(t, found, "the panic is counted as a 500 of its webhook")
}
