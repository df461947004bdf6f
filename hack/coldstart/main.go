// Command coldstart measures a webhook server's cold start: the time from exec of the
// webhooks/resource-manager binary to its first answered AdmissionReview over TLS, and its
// resident memory once it answered, over a number of runs (median, min, max).
//
//	go run ./hack/coldstart [-runs 20] [-webhook kubernetes-service-host]
//
// It builds the binary as ko would (-trimpath, stripped), makes a throwaway certificate, and
// points KUBECONFIG at an address nothing listens on: a webhook that needs no cluster state
// must start without reaching the API server.
package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"flag"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	runs := flag.Int("runs", 20, "how many cold starts to measure")
	name := flag.String("webhook", "kubernetes-service-host", "the webhook to serve (WEBHOOKS)")
	flag.Parse()
	if err := run(*runs, *name); err != nil {
		fmt.Fprintln(os.Stderr, "coldstart:", err)
		os.Exit(1)
	}
}

func run(runs int, name string) error {
	dir, err := os.MkdirTemp("", "coldstart-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	binary := filepath.Join(dir, "resource-manager")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", binary, "./webhooks/resource-manager")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	certFile, keyFile, pool, err := writeCertificate(dir)
	if err != nil {
		return err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(unreachableKubeconfig), 0o600); err != nil {
		return err
	}
	httpClient := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}

	var latencies []time.Duration
	var rss []int
	for i := range runs {
		port, err := freePort()
		if err != nil {
			return err
		}
		cmd := exec.Command(binary)
		cmd.Env = append(os.Environ(),
			"PORT="+strconv.Itoa(port), "TLS_CERT_FILE="+certFile, "TLS_KEY_FILE="+keyFile,
			"KUBECONFIG="+kubeconfig, "WEBHOOKS="+name, "KUBERNETES_SERVICE_HOST_WEBHOOK_HOST=api.example.com",
		)
		url := fmt.Sprintf("https://127.0.0.1:%d%s", port, pathOf(name))
		start := time.Now()
		if err := cmd.Start(); err != nil {
			return err
		}
		if err := firstAnswer(httpClient, url, 10*time.Second); err != nil {
			_ = cmd.Process.Kill()
			return fmt.Errorf("run %d: %w", i+1, err)
		}
		latency := time.Since(start)
		kib, err := residentKiB(cmd.Process.Pid)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if err != nil {
			return err
		}
		latencies = append(latencies, latency)
		rss = append(rss, kib)
		fmt.Printf("run %2d: first AdmissionReview answered after %6.1f ms, RSS %5.1f MiB\n", i+1, ms(latency), float64(kib)/1024)
	}
	slices.Sort(latencies)
	slices.Sort(rss)
	fmt.Printf("cold start (exec → first TLS AdmissionReview answer), %d runs: median %.1f ms, min %.1f ms, max %.1f ms\n",
		runs, ms(latencies[len(latencies)/2]), ms(latencies[0]), ms(latencies[len(latencies)-1]))
	fmt.Printf("idle RSS after the first answer: median %.1f MiB, min %.1f MiB, max %.1f MiB\n",
		float64(rss[len(rss)/2])/1024, float64(rss[0])/1024, float64(rss[len(rss)-1])/1024)
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func pathOf(name string) string {
	if name == "node-agent-authorizer" {
		return "/webhooks/auth/nodeagent"
	}
	return "/webhooks/" + name
}

// firstAnswer POSTs an AdmissionReview until one is answered.
func firstAnswer(c *http.Client, url string, timeout time.Duration) error {
	start := time.Now()
	body := []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"cold","kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},"namespace":"default","operation":"CREATE","userInfo":{"username":"coldstart"},"object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"default"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`)
	for time.Since(start) < timeout {
		resp, err := c.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			time.Sleep(time.Millisecond)
			continue
		}
		var review struct {
			Response *struct {
				UID     string `json:"uid"`
				Allowed bool   `json:"allowed"`
			} `json:"response"`
		}
		err = json.NewDecoder(resp.Body).Decode(&review)
		resp.Body.Close()
		if err != nil || review.Response == nil || review.Response.UID != "cold" {
			return fmt.Errorf("unexpected answer (HTTP %d): %v", resp.StatusCode, err)
		}
		return nil
	}
	return fmt.Errorf("no answer from %s within %s", url, timeout)
}

func residentKiB(pid int) (int, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			return strconv.Atoi(strings.Fields(line)[1])
		}
	}
	return 0, fmt.Errorf("no VmRSS for pid %d", pid)
}

func writeCertificate(dir string) (certFile, keyFile string, pool *x509.CertPool, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "coldstart"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return "", "", nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", "", nil, err
	}
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return "", "", nil, err
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return "", "", nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return "", "", nil, err
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// unreachableKubeconfig names an API server nothing listens on.
const unreachableKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: none
  cluster:
    server: https://127.0.0.1:1
contexts:
- name: none
  context:
    cluster: none
    user: none
users:
- name: none
current-context: none
`
