package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	rmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

// oursPackage is our webhook server's main package: the binary config/ deploys.
const oursPackage = "github.com/gardener-knative/gardener-knative/webhooks/resource-manager"

// server is a webhook server running as a process of its own beside the load's, so that no
// side shares the client's CPU time, heap or garbage collector.
type server struct {
	name string
	// base is its webhook server's URL.
	base string
	pid  int
	stop func()
}

// peakRSS is the most resident memory the server's process has used so far (VmHWM), "-" where
// /proc does not tell.
func (s *server) peakRSS() string {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.pid))
	if err != nil {
		return "-"
	}
	for line := range strings.Lines(string(status)) {
		if kb, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(kb), " kB"))
			if err != nil {
				return "-"
			}
			return fmt.Sprintf("%.1f MiB", float64(n)/1024)
		}
	}
	return "-"
}

// startTimeout bounds a server's start: Gardener's syncs its informers first.
const startTimeout = 2 * time.Minute

// landscape is what both servers are given alike: one control plane (a kubeconfig file of an
// admin), one ResourceManagerConfiguration file, one serving certificate.
type landscape struct {
	dir, kubeconfig, config, certDir string
	roots                            *x509.CertPool
}

// newLandscape writes the kubeconfig and cfg, completed with what Gardener's process needs to
// run on loopback, into dir.
func newLandscape(dir string, env *testenv.Env, cfg *rmv1alpha1.ResourceManagerConfiguration, certDir string, roots *x509.CertPool) (*landscape, error) {
	l := &landscape{dir: dir, kubeconfig: filepath.Join(dir, "kubeconfig"), config: filepath.Join(dir, "resource-manager-config.yaml"), certDir: certDir, roots: roots}
	user, err := env.AddUser(envtest.User{Name: "webhook-servers", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, err
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(l.kubeconfig, kubeconfig, 0o600); err != nil {
		return nil, err
	}
	ports, err := testenv.FreeLoopbackPorts(3)
	if err != nil {
		return nil, err
	}
	file := cfg.DeepCopy()
	file.APIVersion, file.Kind = rmv1alpha1.SchemeGroupVersion.String(), "ResourceManagerConfiguration"
	// The settings below are only Gardener's process's: ours takes its kubeconfig, port and
	// certificate from its environment, as config/ gives them, and runs no controller.
	file.SourceClientConnection.Kubeconfig = l.kubeconfig
	// The target is the same control plane, as for ours; Gardener defaults an unset target
	// connection to the in-cluster one, which a process on loopback lacks.
	file.TargetClientConnection = file.SourceClientConnection.DeepCopy()
	file.LeaderElection.LeaderElect = ptr.To(false)
	file.Server.Webhooks.BindAddress, file.Server.Webhooks.Port = "127.0.0.1", ports[0]
	file.Server.Webhooks.TLS.ServerCertDir = certDir
	file.Server.HealthProbes = &rmv1alpha1.Server{BindAddress: "127.0.0.1", Port: ports[1]}
	file.Server.Metrics = &rmv1alpha1.Server{BindAddress: "127.0.0.1", Port: ports[2]}
	// Only what the webhooks need runs beside them: the controllers that can be switched off are.
	file.Controllers.CSRApprover.Enabled = false
	file.Controllers.GarbageCollector.Enabled = false
	file.Controllers.NetworkPolicy.Enabled = false
	file.Controllers.TokenRequestor.Enabled = false
	file.Controllers.NodeCriticalComponents.Enabled = false
	file.Controllers.NodeAgentReconciliationDelay.Enabled = false
	out, err := yaml.Marshal(file)
	if err != nil {
		return nil, err
	}
	return l, os.WriteFile(l.config, out, 0o600)
}

// startOurs builds our webhook server and runs it with the landscape's configuration file,
// control plane and certificate, as config/ runs it.
// It serves the named webhooks (WEBHOOKS), those the configuration enables or not.
func (l *landscape) startOurs(ctx context.Context, webhooks []string) (*server, error) {
	binary := filepath.Join(l.dir, "resource-manager")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", binary, oursPackage)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building %s: %w: %s", oursPackage, err, out)
	}
	ports, err := testenv.FreeLoopbackPorts(1)
	if err != nil {
		return nil, err
	}
	base := "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
	cmd := exec.Command(binary)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+l.kubeconfig, "PORT="+strconv.Itoa(ports[0]),
		"TLS_CERT_FILE="+filepath.Join(l.certDir, "tls.crt"), "TLS_KEY_FILE="+filepath.Join(l.certDir, "tls.key"),
		"RESOURCE_MANAGER_CONFIG="+l.config, "WEBHOOKS="+strings.Join(webhooks, ","), "LOG_LEVEL=warn")
	probe := l.client(1)
	return l.start(ctx, "ours", base, cmd, func(ctx context.Context) bool { return ok(ctx, probe, base+"/readyz") })
}

// startGardener runs Gardener's gardener-resource-manager binary (hack/peers.sh) with the same.
func (l *landscape) startGardener(ctx context.Context, binary string) (*server, error) {
	file, err := os.ReadFile(l.config)
	if err != nil {
		return nil, err
	}
	var cfg rmv1alpha1.ResourceManagerConfiguration
	if err := yaml.Unmarshal(file, &cfg); err != nil {
		return nil, err
	}
	base := "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.Server.Webhooks.Port))
	readyz := "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.Server.HealthProbes.Port)) + "/readyz"
	cmd := exec.Command(binary, "--config="+l.config)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+l.kubeconfig, "TARGET_KUBECONFIG="+l.kubeconfig)
	return l.start(ctx, "Gardener", base, cmd, func(ctx context.Context) bool { return ok(ctx, http.DefaultClient, readyz) })
}

// start runs cmd, its output into a log of its own, until ready says so.
func (l *landscape) start(ctx context.Context, name, base string, cmd *exec.Cmd, ready func(context.Context) bool) (*server, error) {
	logPath := filepath.Join(l.dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		defer logFile.Close()
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	for !ready(ctx) {
		select {
		case err := <-exited:
			_ = logFile.Close()
			return nil, fmt.Errorf("%s's server exited before it was ready (%v); its log ends:\n%s", name, err, tail(logPath))
		case <-ctx.Done():
			stop()
			return nil, fmt.Errorf("%s's server not ready within %s; its log ends:\n%s", name, startTimeout, tail(logPath))
		case <-time.After(200 * time.Millisecond):
		}
	}
	return &server{name: name, base: base, pid: cmd.Process.Pid, stop: stop}, nil
}

// client keeps one keep-alive connection per worker to a server, as a kube-apiserver keeps to
// a webhook.
func (l *landscape) client(workers int) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: l.roots, MinVersion: tls.VersionTLS12},
		MaxIdleConnsPerHost: workers, MaxConnsPerHost: workers,
	}}
}

// serves says whether s registered a path: a webhook it lacks answers 404.
func (s *server) serves(ctx context.Context, c *http.Client, path string) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.base+path, http.NoBody)
	if err != nil {
		return false, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return false, err
	}
	_ = resp.Body.Close()
	return resp.StatusCode != http.StatusNotFound, nil
}

// tail is the end of a log, for an error message.
func tail(path string) string {
	data, _ := os.ReadFile(path)
	return string(data[max(0, len(data)-4000):])
}

func ok(ctx context.Context, c *http.Client, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return false
	}
	resp, err := c.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
