package runtime_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/binding"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/gardener-knative/gardener-knative/pkg/controller/project"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

// A function that works on the garden reads the kubeconfig config/ gives it (GARDEN_KUBECONFIG_DATA,
// from the Secret garden-access) once, when its container starts. Once the garden refuses those
// credentials, as after an operator's rotation revoked the token, the function exits with the
// reason, so that the kubelet starts its container again with the Secret's current kubeconfig; a
// garden that only forbids a read (403) leaves it serving. Here the project function as its
// process runs, with a token of a ServiceAccount of the real kube-apiserver, which is deleted.
func TestFunctionExitsWhenTheGardenRefusesItsCredentials(t *testing.T) {
	ctx := t.Context()
	ns := namespace(t)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "garden-identity", Namespace: ns}}
	require.NoError(t, env.Client.Create(ctx, sa))
	token := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	require.NoError(t, env.Client.SubResource("token").Create(ctx, sa, token))

	kubeconfig, err := testenv.Kubeconfig("garden", env.Config, &clientcmdapi.AuthInfo{Token: token.Status.Token})
	require.NoError(t, err)

	url, exited := runProjectFunction(t, kubeconfig, map[string]string{"KUBECONFIG": ""})

	// The harness only builds the events; they go to the function's own process, which may be
	// gone by the time one is sent.
	h := functiontest.New(t, env, project.Function)
	event := func() {
		ev := h.Event("update", &gardencorev1beta1.Project{ObjectMeta: metav1.ObjectMeta{Name: "p"}})
		req, err := http.NewRequest(http.MethodPost, url, nil)
		require.NoError(t, err)
		require.NoError(t, cehttp.WriteRequest(ctx, binding.ToMessage(&ev), req))
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}
	event()
	select {
	case err := <-exited:
		require.FailNow(t, "the function exited while its credentials were valid", "%v", err)
	case <-time.After(500 * time.Millisecond):
	}

	require.NoError(t, env.Client.Delete(ctx, sa))
	// The kube-apiserver takes a token it authenticated for 10 s more (its token cache).
	deadline := time.After(30 * time.Second)
	for {
		event()
		select {
		case err := <-exited:
			assert.ErrorContains(t, err, "401 Unauthorized")
			assert.ErrorContains(t, err, function.GardenAccessSecret)
			return
		case <-deadline:
			require.FailNow(t, "the function kept serving after the garden refused its credentials")
		case <-time.After(time.Second):
		}
	}
}

// runProjectFunction runs the project function as its process does, on the garden of
// gardenKubeconfig with the further environment env, and returns its URL once it is ready and
// the channel its exit is reported on.
func runProjectFunction(t *testing.T, gardenKubeconfig []byte, env map[string]string) (string, <-chan error) {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := listener.Addr().(*net.TCPAddr).Port
	require.NoError(t, listener.Close())
	t.Setenv(function.GardenKubeconfigDataEnv, string(gardenKubeconfig))
	t.Setenv("PORT", strconv.Itoa(port))
	t.Setenv("SHUTDOWN_TIMEOUT", "1s")
	for k, v := range env {
		t.Setenv(k, v)
	}
	exited := make(chan error, 1)
	go func() { exited <- function.Run(context.Background(), project.Function) }()
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	require.Eventually(t, func() bool {
		resp, err := http.Get(url + "/readyz")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 10*time.Second, 50*time.Millisecond, "the project function serves")
	return url, exited
}
