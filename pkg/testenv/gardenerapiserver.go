package testenv

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// GardenerAPIServerEnv names Gardener's gardener-apiserver binary, the version hack/peers/go.mod
// pins (`hack/peers.sh gardener-apiserver` builds it; `make test` sets it).
const GardenerAPIServerEnv = "GARDENER_APISERVER_BIN"

// gardenerGroupVersions are what gardener-apiserver serves (Gardener's
// apiserver.AllGardenerAPIGroupVersions), registered with the aggregator.
var gardenerGroupVersions = []schema.GroupVersion{
	{Group: "core.gardener.cloud", Version: "v1"},
	{Group: "core.gardener.cloud", Version: "v1beta1"},
	{Group: "seedmanagement.gardener.cloud", Version: "v1alpha1"},
	{Group: "operations.gardener.cloud", Version: "v1alpha1"},
	{Group: "security.gardener.cloud", Version: "v1alpha1"},
}

// gardenerAPIServer is a gardener-apiserver process aggregated beside an envtest kube-apiserver:
// it stores in the same etcd (under its own prefix), authenticates and authorizes through the
// kube-apiserver (delegated, with the front-proxy's request headers) and runs its default
// admission plugins, as gardener-operator deploys it (its defaults).
type gardenerAPIServer struct {
	cmd    *exec.Cmd
	exited chan struct{}
	dir    string
}

// aggregation is what kube-apiserver needs to proxy to aggregated servers: a front-proxy CA and
// its client certificate, in dir.
func aggregation(env *envtest.Environment, dir string) error {
	ca, caKey, err := newCA("front-proxy-ca")
	if err != nil {
		return err
	}
	certPEM, keyPEM, err := issue(ca, caKey, "front-proxy-client", nil, x509.ExtKeyUsageClientAuth)
	if err != nil {
		return err
	}
	files := map[string][]byte{"front-proxy-ca.crt": encodeCert(ca), "front-proxy-client.crt": certPEM, "front-proxy-client.key": keyPEM}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	args := env.ControlPlane.GetAPIServer().Configure()
	args.Set("requestheader-client-ca-file", filepath.Join(dir, "front-proxy-ca.crt"))
	args.Set("requestheader-username-headers", "X-Remote-User")
	args.Set("requestheader-group-headers", "X-Remote-Group")
	args.Set("requestheader-extra-headers-prefix", "X-Remote-Extra-")
	args.Set("proxy-client-cert-file", filepath.Join(dir, "front-proxy-client.crt"))
	args.Set("proxy-client-key-file", filepath.Join(dir, "front-proxy-client.key"))
	return nil
}

// startGardenerAPIServer starts gardener-apiserver for the started env, registers its API groups
// and waits until they are served.
func startGardenerAPIServer(ctx context.Context, env *envtest.Environment, dir string) (*gardenerAPIServer, error) {
	bin := os.Getenv(GardenerAPIServerEnv)
	if bin == "" {
		return nil, fmt.Errorf("%s is not set: run the tests with `make test`, or export %s=$(hack/peers.sh gardener-apiserver)", GardenerAPIServerEnv, GardenerAPIServerEnv)
	}
	// Its identity in the kube-apiserver: it reads namespaces, Secrets and more for its admission
	// plugins and asks for authentication and authorization (Gardener's envtest: system:masters).
	user, err := env.ControlPlane.AddUser(envtest.User{Name: "gardener-apiserver", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, err
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return nil, err
	}
	kubeconfigFile := filepath.Join(dir, "gardener-apiserver.kubeconfig")
	if err := os.WriteFile(kubeconfigFile, kubeconfig, 0o600); err != nil {
		return nil, err
	}
	ca, caKey, err := newCA("gardener-apiserver-ca")
	if err != nil {
		return nil, err
	}
	certPEM, keyPEM, err := issue(ca, caKey, "gardener-apiserver", []string{"localhost", "gardener-apiserver.kube-system.svc"}, x509.ExtKeyUsageServerAuth)
	if err != nil {
		return nil, err
	}
	for name, data := range map[string][]byte{"gardener-apiserver.crt": certPEM, "gardener-apiserver.key": keyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, err
		}
	}
	ports, err := FreeLoopbackPorts(1)
	if err != nil {
		return nil, err
	}
	port := ports[0]
	cmd := exec.Command(bin,
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(port),
		"--etcd-servers="+env.ControlPlane.Etcd.URL.String(),
		"--tls-cert-file="+filepath.Join(dir, "gardener-apiserver.crt"),
		"--tls-private-key-file="+filepath.Join(dir, "gardener-apiserver.key"),
		"--cluster-identity=envtest",
		"--authorization-always-allow-paths=/healthz",
		"--authentication-kubeconfig="+kubeconfigFile,
		"--authorization-kubeconfig="+kubeconfigFile,
		"--kubeconfig="+kubeconfigFile,
	)
	out := io.Discard
	if logDir := os.Getenv(GardenerAPIServerLogDirEnv); logDir != "" {
		f, err := os.CreateTemp(logDir, "gardener-apiserver-*.log")
		if err != nil {
			return nil, err
		}
		defer f.Close() // the child holds its own descriptor
		out = f
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	g := &gardenerAPIServer{cmd: cmd, exited: make(chan struct{}), dir: dir}
	go func() {
		_ = cmd.Wait()
		close(g.exited)
	}()
	if err := g.register(ctx, user, port, ca); err != nil {
		_ = g.stop()
		return nil, err
	}
	return g, nil
}

// GardenerAPIServerLogDirEnv names a directory where each gardener-apiserver writes its log;
// unset, the logs are discarded.
const GardenerAPIServerLogDirEnv = "GARDENER_APISERVER_LOG_DIR"

// register waits until the server is healthy, registers its group versions with the aggregator
// (an ExternalName Service to localhost, APIServices with its CA) and waits until every one is
// available and discovered.
func (g *gardenerAPIServer) register(ctx context.Context, user *envtest.AuthenticatedUser, port int, ca *x509.Certificate) error {
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	health := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	healthz := "https://localhost:" + strconv.Itoa(port) + "/healthz"
	if err := g.until(ctx, "gardener-apiserver healthy", func() error {
		resp, err := health.Get(healthz)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", healthz, resp.Status)
		}
		return nil
	}); err != nil {
		return err
	}
	c, err := client.New(user.Config(), client.Options{})
	if err != nil {
		return err
	}
	service := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: "gardener-apiserver"},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost"},
	}
	if err := c.Create(ctx, service); err != nil {
		return err
	}
	var apiServices []*unstructured.Unstructured
	for _, gv := range gardenerGroupVersions {
		// An APIService (apiregistration.k8s.io/v1), unstructured: the aggregator's types are
		// no dependency of the project for this alone.
		apiService := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
			"metadata": map[string]any{"name": gv.Version + "." + gv.Group},
			"spec": map[string]any{
				"service":              map[string]any{"namespace": service.Namespace, "name": service.Name, "port": int64(port)},
				"group":                gv.Group,
				"version":              gv.Version,
				"groupPriorityMinimum": int64(100),
				"versionPriority":      int64(100),
				"caBundle":             base64.StdEncoding.EncodeToString(encodeCert(ca)),
			},
		}}
		if err := c.Create(ctx, apiService); err != nil {
			return err
		}
		apiServices = append(apiServices, apiService)
	}
	if err := g.until(ctx, "Gardener's APIServices available", func() error {
		for _, s := range apiServices {
			if err := c.Get(ctx, client.ObjectKeyFromObject(s), s); err != nil {
				return err
			}
			if !available(s) {
				return fmt.Errorf("APIService %s is not available", s.GetName())
			}
		}
		return nil
	}); err != nil {
		return err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(user.Config())
	if err != nil {
		return err
	}
	return g.until(ctx, "Gardener's API discovered", func() error {
		for _, gv := range gardenerGroupVersions {
			resources, err := disco.ServerResourcesForGroupVersion(gv.String())
			if err != nil {
				return err
			}
			if len(resources.APIResources) == 0 {
				return fmt.Errorf("%s serves no resources yet", gv)
			}
		}
		return nil
	})
}

// servedByGardenerAPIServer says whether gardener-apiserver serves group: a garden with the real
// API has no stand-in CRDs of it.
func servedByGardenerAPIServer(group string) bool {
	return slices.ContainsFunc(gardenerGroupVersions, func(gv schema.GroupVersion) bool { return gv.Group == group })
}

// available says whether an APIService's Available condition is True.
func available(s *unstructured.Unstructured) bool {
	conditions, _, _ := unstructured.NestedSlice(s.Object, "status", "conditions")
	for _, c := range conditions {
		cond, _ := c.(map[string]any)
		if cond["type"] == "Available" {
			return cond["status"] == "True"
		}
	}
	return false
}

// gardenerAPIServerStartTimeout bounds the start: the server builds its informers and the
// aggregator's discovery refreshes about every second.
const gardenerAPIServerStartTimeout = 90 * time.Second

// until polls check every 100 ms until it passes, the server exits or the start times out.
func (g *gardenerAPIServer) until(ctx context.Context, what string, check func() error) error {
	ctx, cancel := context.WithTimeout(ctx, gardenerAPIServerStartTimeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		err := check()
		if err == nil {
			return nil
		}
		select {
		case <-g.exited:
			return fmt.Errorf("waiting for %s: gardener-apiserver exited (%v); set %s to keep its log", what, g.cmd.ProcessState, GardenerAPIServerLogDirEnv)
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last: %v)", what, ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// stop terminates the server and waits for it (killed after 10 s).
func (g *gardenerAPIServer) stop() error {
	if g == nil || g.cmd.Process == nil {
		return nil
	}
	select {
	case <-g.exited:
		return nil
	default:
	}
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-g.exited:
		return nil
	case <-time.After(10 * time.Second):
		_ = g.cmd.Process.Kill()
		<-g.exited
		return errors.New("gardener-apiserver did not stop within 10s of SIGTERM: killed")
	}
}

// newCA makes a self-signed CA for one control plane's lifetime.
func newCA(name string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	template := certificateTemplate(name)
	template.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	template.BasicConstraintsValid, template.IsCA = true, true
	return sign(template, nil, nil)
}

// issue makes a certificate of ca for name (and hosts, a server's on loopback), PEM-encoded with
// its key.
func issue(ca *x509.Certificate, caKey *ecdsa.PrivateKey, name string, hosts []string, usage x509.ExtKeyUsage) (certPEM, keyPEM []byte, err error) {
	template := certificateTemplate(name)
	template.KeyUsage = x509.KeyUsageDigitalSignature
	template.ExtKeyUsage = []x509.ExtKeyUsage{usage}
	template.DNSNames = hosts
	if len(hosts) > 0 {
		template.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	cert, key, err := sign(template, ca, caKey)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return encodeCert(cert), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// certificateTemplate is a certificate of name valid for a day (from an hour ago).
func certificateTemplate(name string) *x509.Certificate {
	return &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
	}
}

// sign makes a key and template's certificate for it, signed by parent's key, or self-signed
// without a parent.
func sign(template, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	if parent == nil {
		parent, parentKey = template, key
	}
	der, err := x509.CreateCertificate(rand.Reader, template, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

func encodeCert(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}
