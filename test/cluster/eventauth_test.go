package cluster_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/sources"
)

// Only the Broker reaches a function, and only the part's sources reach the Broker (issue 58,
// docs/deployment.md "Who may send events"): with Knative's authentication-oidc on, a forged
// event, sent where the Broker's filter sends one (to the function through the cluster's ingress)
// and where a source sends one (the broker ingress), is refused, without a token and with a real
// token of another identity of the part for the right audience. That the sources' and Triggers'
// own events pass is what every other test of the suite shows (TestEventSteadyState,
// TestPingSourceSweep).
func TestForgedEventsRefused(t *testing.T) {
	ctx := context.Background()
	const fn = "tokeninvalidator" // a function of the seed part with a sweep
	// Its Trigger has the OIDC identity the function honours (EVENT_SENDERS).
	var identity string
	eventually(t, 2*time.Minute, "the Trigger's OIDC identity", func() error {
		trigger := knative("Trigger")
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: fn}, trigger); err != nil {
			return err
		}
		if identity, _, _ = unstructured.NestedString(trigger.Object, "status", "auth", "serviceAccountName"); identity == "" {
			return fmt.Errorf("status.auth not set: is authentication-oidc on?")
		}
		return nil
	})
	require.Equal(t, sources.TriggerSender(namespace, fn), "system:serviceaccount:"+namespace+":"+identity)

	// A real identity of the part that is no sender: the webhook servers' ServiceAccount.
	tokenOf := func(audience string) string {
		sa := &corev1.ServiceAccount{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "grm-webhooks"}, sa))
		tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: []string{audience}, ExpirationSeconds: ptr.To[int64](600)}}
		require.NoError(t, c.SubResource("token").Create(ctx, sa, tr))
		return tr.Status.Token
	}
	ping := func(target, host, bearer string) (int, string) {
		req, err := http.NewRequest(http.MethodPost, target, strings.NewReader(sources.PingData("resync")))
		require.NoError(t, err)
		req.Host = host
		for k, v := range map[string]string{"Ce-Specversion": "1.0", "Ce-Id": "forged", "Ce-Source": "forged", "Ce-Type": function.PingEventType,
			"Ce-" + sources.FunctionExtension: fn, "Content-Type": "application/json"} {
			req.Header.Set(k, v)
		}
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := (&http.Client{Timeout: 2 * time.Minute}).Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}

	// The function, through the ingress's private entry, as the Broker's filter reaches it.
	private := os.Getenv("CLUSTER_INGRESS")
	require.NotEmpty(t, private, "CLUSTER_INGRESS (hack/cluster.sh env)")
	host := fn + "." + namespace + ".svc.cluster.local"
	code, body := ping("http://"+private+"/", host, "")
	assert.Equal(t, http.StatusUnauthorized, code, body)
	assert.Contains(t, body, "no bearer token")
	code, body = ping("http://"+private+"/", host, tokenOf(sources.EventAudience(namespace, fn)))
	assert.Equal(t, http.StatusForbidden, code, body)
	assert.Contains(t, body, "is not a Trigger of this function")

	// The Broker, at Knative's broker ingress, as a source reaches it.
	broker := knative("Broker")
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: sources.Broker}, broker))
	audience, _, _ := unstructured.NestedString(broker.Object, "status", "address", "audience")
	require.NotEmpty(t, audience, "the Broker's audience: is authentication-oidc on?")
	policies, _, _ := unstructured.NestedSlice(broker.Object, "status", "policies")
	applied := false
	for _, p := range policies {
		applied = applied || p.(map[string]any)["name"] == sources.SendersPolicy
	}
	require.True(t, applied, "the EventPolicy %s applies to the Broker (status.policies: %v)", sources.SendersPolicy, policies)
	ingress := &corev1.Service{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "knative-eventing", Name: "broker-ingress"}, ingress))
	brokerURL := "http://" + net.JoinHostPort(ingress.Spec.ClusterIP, "80") + "/" + namespace + "/" + sources.Broker
	code, body = ping(brokerURL, "broker-ingress.knative-eventing.svc.cluster.local", "")
	assert.Equal(t, http.StatusUnauthorized, code, body)
	code, body = ping(brokerURL, "broker-ingress.knative-eventing.svc.cluster.local", tokenOf(audience))
	assert.Equal(t, http.StatusForbidden, code, body)

	policy := &unstructured.Unstructured{}
	policy.SetAPIVersion("eventing.knative.dev/v1alpha1")
	policy.SetKind("EventPolicy")
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: sources.SendersPolicy}, policy))
	subjects, _, _ := unstructured.NestedStringSlice(policy.Object, "status", "from")
	t.Logf("forged events refused by the function (401 without a token, 403 with grm-webhooks' token) and by the Broker; its EventPolicy admits %d sources: %v", len(subjects), subjects)
}

// knative is an empty object of a kind of Knative Eventing's v1 API.
func knative(kind string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("eventing.knative.dev/v1")
	obj.SetKind(kind)
	return obj
}
