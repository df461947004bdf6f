package e2e

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gardener-knative/gardener-knative/pkg/configgen"
)

// The webhook server's binary contract: `go build ./webhooks/resource-manager` serves the
// webhooks named in WEBHOOKS at Gardener's paths on $PORT, plain HTTP without a certificate,
// uses $KUBECONFIG, answers /healthz and /readyz, and stops cleanly on SIGTERM.
func TestWebhookServerBinary(t *testing.T) {
	dir := t.TempDir()
	binary := filepath.Join(dir, "resource-manager")
	out, err := exec.Command("go", "build", "-o", binary, configgen.ModulePath+"/webhooks/resource-manager").CombinedOutput()
	require.NoError(t, err, "%s", out)

	listener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := listener.Addr().(*net.TCPAddr).Port
	require.NoError(t, listener.Close())
	cmd := exec.Command(binary)
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port), "KUBECONFIG="+land.Kubeconfig,
		"WEBHOOKS=kubernetes-service-host,node-agent-authorizer", "KUBERNETES_SERVICE_HOST_WEBHOOK_HOST=api.example.com")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
	})
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	require.Eventually(t, func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false // not listening yet
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 20*time.Millisecond)

	review := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"e2e","kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},"namespace":"default","operation":"CREATE","userInfo":{"username":"e2e"},"object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"default"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`
	code, body := call(t, http.MethodPost, base+"/webhooks/kubernetes-service-host", nil, review)
	require.Equal(t, http.StatusOK, code)
	var answer struct {
		Response struct {
			UID     string `json:"uid"`
			Allowed bool   `json:"allowed"`
			Patch   []byte `json:"patch"`
		} `json:"response"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &answer))
	assert.Equal(t, "e2e", answer.Response.UID)
	assert.True(t, answer.Response.Allowed)
	assert.Contains(t, string(answer.Response.Patch), "api.example.com")

	// A malformed review gets a well-formed error answer.
	code, body = call(t, http.MethodPost, base+"/webhooks/kubernetes-service-host", nil, `{"kind":"AdmissionReview"`)
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `"allowed":false`)

	// The authorizer reads the cluster through $KUBECONFIG: an unknown node agent is denied.
	sar := `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"gardener.cloud:node-agent:machine:ghost","groups":["gardener.cloud:node-agents"],"resourceAttributes":{"verb":"get","resource":"nodes","name":"n"}}}`
	code, body = call(t, http.MethodPost, base+"/webhooks/auth/nodeagent", nil, sar)
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `"denied":true`)

	code, _ = call(t, http.MethodGet, base+"/healthz", nil, "")
	assert.Equal(t, http.StatusOK, code)
	_, metrics := call(t, http.MethodGet, base+"/metrics", nil, "")
	assert.Contains(t, metrics, `gardener_knative_admission_responses_total{outcome="patched",webhook="kubernetes-service-host"} 1`)
	assert.Contains(t, metrics, `gardener_knative_webhook_requests_total{code="200",webhook="node-agent-authorizer"} 1`)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		assert.NoError(t, err, "a clean exit on SIGTERM")
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not stop on SIGTERM")
	}
}
