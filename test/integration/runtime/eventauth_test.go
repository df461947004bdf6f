package runtime_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

// A function with EVENT_AUDIENCE and EVENT_SENDERS (config/ sets them from its Trigger) honours
// an event only with a token the cluster it runs in issued to one of its senders for its
// audience, as Knative's Broker filter sends with authentication-oidc on; the real kube-apiserver
// reviews the tokens. The function is the project function as its process runs.
func TestFunctionHonoursOnlyItsTriggersTokens(t *testing.T) {
	ctx := t.Context()
	ns := namespace(t)
	const audience = "serving.knative.dev/service/gardener-knative/project"
	token := func(sa, audience string) string {
		account := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns}}
		if err := env.Client.Create(ctx, account); err != nil {
			require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(account), account))
		}
		tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: []string{audience}, ExpirationSeconds: ptr.To[int64](3600)}}
		require.NoError(t, env.Client.SubResource("token").Create(ctx, account, tr))
		return tr.Status.Token
	}
	trigger := "project-oidc-eventing.knative.dev-trigger"
	kubeconfig, err := testenv.Kubeconfig("garden", env.Config, &clientcmdapi.AuthInfo{Token: token("garden-identity", "")})
	require.NoError(t, err)
	// The cluster it runs in, which issues and reviews the senders' tokens: KUBECONFIG.
	admin, err := testenv.Kubeconfig("runtime", env.Config, &clientcmdapi.AuthInfo{
		ClientCertificateData: env.Config.CertData, ClientKeyData: env.Config.KeyData, Token: env.Config.BearerToken})
	require.NoError(t, err)
	kubeconfigFile := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfigFile, admin, 0o600))

	url, _ := runProjectFunction(t, kubeconfig, map[string]string{
		"KUBECONFIG": kubeconfigFile, "EVENT_AUDIENCE": audience, "EVENT_SENDERS": "system:serviceaccount:" + ns + ":" + trigger})

	ping := func(bearer string) (int, string) {
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"sweep":"no-such-sweep"}`))
		require.NoError(t, err)
		for k, v := range map[string]string{"Ce-Specversion": "1.0", "Ce-Id": "auth", "Ce-Source": "auth", "Ce-Type": function.PingEventType, "Content-Type": "application/json"} {
			req.Header.Set(k, v)
		}
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	for _, refused := range []struct {
		name, bearer string
		code         int
		reason       string
	}{
		{"no token", "", http.StatusUnauthorized, "no bearer token"},
		{"a forged token", "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln", http.StatusUnauthorized, "not valid for audience"},
		{"its Trigger's token for another audience", token(trigger, "serving.knative.dev/service/gardener-knative/shoot"), http.StatusUnauthorized, "not valid for audience"},
		{"another identity's token for its audience", token("source-cluster", audience), http.StatusForbidden, "source-cluster is not a Trigger of this function"},
	} {
		code, body := ping(refused.bearer)
		assert.Equal(t, refused.code, code, refused.name)
		assert.Contains(t, body, refused.reason, refused.name)
	}
	// Its Trigger's token passes: the ping reaches the function, which names the unknown sweep.
	good := token(trigger, audience)
	for range 3 {
		code, body := ping(good)
		assert.Equal(t, http.StatusUnprocessableEntity, code, body)
		assert.Contains(t, body, "no-such-sweep")
	}
	resp, err := http.Get(url + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	metrics, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	for _, want := range []string{
		`gardener_knative_event_sender_refusals_total{reason="missing"} 1`,
		`gardener_knative_event_sender_refusals_total{reason="invalid"} 2`,
		`gardener_knative_event_sender_refusals_total{reason="sender"} 1`,
		// Four tokens reviewed; the good one once for three events.
		`gardener_knative_event_sender_reviews_total 4`,
	} {
		assert.Contains(t, string(metrics), want)
	}
}
