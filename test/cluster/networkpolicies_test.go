package cluster_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// target is an address a probe pod connects to: an HTTP request is sent and an answer (any
// "HTTP/" status line, even 400 from a TLS port) counts as reached.
type target struct {
	name, ip string
	port     int
}

// The NetworkPolicies config/ ships (docs/deployment.md, "Network policies") are enforced: the
// cluster runs sig-network's kube-network-policies (docs/cluster.md). From a pod of the seed
// outside the allowed set, the webhooks' TLS port (grm-webhooks' pods, straight and through
// grm-webhooks-tls), a function's pod (queue-proxy and the user port) and the Broker's ingress
// (straight and through its Service) do not answer, while a pod no policy selects (Knative's
// activator) does, from the same pod. A pod with a shoot kube-apiserver's namespace and labels
// reaches the webhooks' TLS port and nothing else of ours. The paths config/ allows are proven
// by the rest of the suite: every event reaches its function through the sources, the Broker and
// Knative's data plane, and kube-apiserver calls every webhook.
func TestNetworkPoliciesEnforced(t *testing.T) {
	ctx := context.Background()
	// A function's pod: the project function, woken by a Project's event (functions scale to zero).
	projectNamespace(t, fmt.Sprintf("np-%d", time.Now().Unix()%100000))
	function := runningPod(t, namespaceOf(t, "project"), client.MatchingLabels{"serving.knative.dev/service": "project"})
	webhook := runningPod(t, namespace, client.MatchingLabels{"serving.knative.dev/service": "grm-webhooks"})
	broker := runningPod(t, "knative-eventing", client.MatchingLabels{"eventing.knative.dev/brokerRole": "ingress"})
	activator := runningPod(t, "knative-serving", client.MatchingLabels{"app": "activator"})
	webhookService, brokerService := &corev1.Service{}, &corev1.Service{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "grm-webhooks-tls"}, webhookService))
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "knative-eventing", Name: "broker-ingress"}, brokerService))

	closed := []target{
		{"grm-webhooks' TLS port (pod)", webhook.Status.PodIP, 8443},
		{"grm-webhooks-tls (Service)", webhookService.Spec.ClusterIP, 443},
		{"grm-webhooks' queue-proxy", webhook.Status.PodIP, 8012},
		{"the project function's queue-proxy", function.Status.PodIP, 8012},
		{"the project function's own port", function.Status.PodIP, 8080},
		{"the Broker's ingress (pod)", broker.Status.PodIP, 8080},
		{"the Broker's ingress (Service)", brokerService.Spec.ClusterIP, 80},
	}
	open := target{"Knative's activator, no policy selects it", activator.Status.PodIP, 8012}

	stamp := time.Now().Unix() % 100000
	outside := probe(t, fmt.Sprintf("np-outside-%d", stamp), nil, nil, append(closed, open))
	for _, tg := range closed {
		assert.False(t, outside[tg.name], "a pod outside the allowed set reached %s (%s:%d)", tg.name, tg.ip, tg.port)
	}
	require.True(t, outside[open.name], "the probe pod reached no pod at all (%s:%d): the test would prove nothing", open.ip, open.port)

	// A shoot's kube-apiserver, as Gardener v1.150 labels it, in a shoot namespace.
	apiserver := probe(t, fmt.Sprintf("shoot--e2e--np%d", stamp), map[string]string{"gardener.cloud/role": "shoot"},
		map[string]string{"app": "kubernetes", "role": "apiserver"}, closed[:4])
	assert.True(t, apiserver[closed[0].name], "a shoot's kube-apiserver did not reach %s", closed[0].name)
	assert.True(t, apiserver[closed[1].name], "a shoot's kube-apiserver did not reach %s", closed[1].name)
	assert.False(t, apiserver[closed[2].name], "a shoot's kube-apiserver reached %s", closed[2].name)
	assert.False(t, apiserver[closed[3].name], "a shoot's kube-apiserver reached %s", closed[3].name)
}

// runningPod waits for a running, ready pod of the selector in namespace and returns it.
func runningPod(t *testing.T, namespace string, selector client.MatchingLabels) corev1.Pod {
	t.Helper()
	var found corev1.Pod
	eventually(t, 2*time.Minute, fmt.Sprintf("a ready pod %v in %s", selector, namespace), func() error {
		pods := &corev1.PodList{}
		if err := c.List(context.Background(), pods, client.InNamespace(namespace), selector); err != nil {
			return err
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && p.Status.PodIP != "" && podReady(&p) {
				found = p
				return nil
			}
		}
		return fmt.Errorf("none of %d", len(pods.Items))
	})
	return found
}

func podReady(p *corev1.Pod) bool {
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// probe runs a pod (the cluster's busybox image) in a new namespace of that name and labels,
// with podLabels, which connects to every target once (3 s to connect) and reports in its
// termination message which answered. The namespace is removed after the test.
func probe(t *testing.T, namespaceName string, namespaceLabels, podLabels map[string]string, targets []target) map[string]bool {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespaceName, Labels: namespaceLabels}}
	require.NoError(t, c.Create(ctx, ns))
	t.Cleanup(func() { _ = c.Delete(ctx, ns) })
	var script strings.Builder
	for i, tg := range targets {
		require.NotEmpty(t, tg.ip, tg.name)
		// The request stays open a second for the answer; no answer within 8 s is none.
		fmt.Fprintf(&script, "a=$( (printf 'GET / HTTP/1.0\\r\\n\\r\\n'; /bin/busybox sleep 1) | /bin/busybox timeout 8 /bin/busybox nc -w 3 %s %d 2>/dev/null | /bin/busybox head -c 5)\n",
			tg.ip, tg.port)
		fmt.Fprintf(&script, "[ \"$a\" = HTTP/ ] && echo %d:answered >>/dev/termination-log || echo %d:silent >>/dev/termination-log\n", i, i)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns.Name, Labels: podLabels},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  new(false),
			TerminationGracePeriodSeconds: new(int64(0)),
			Containers: []corev1.Container{{
				Name: "probe", Image: "127.0.0.1:25000/pause:1",
				Command: []string{"/bin/busybox", "sh", "-c", script.String()},
			}},
		},
	}
	require.NoError(t, c.Create(ctx, pod))
	var message string
	eventually(t, 3*time.Minute, "probe in "+ns.Name+" done", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		for _, s := range pod.Status.ContainerStatuses {
			if s.State.Terminated != nil {
				message = s.State.Terminated.Message
				return nil
			}
		}
		return fmt.Errorf("phase %s", pod.Status.Phase)
	})
	answered := map[string]bool{}
	for _, line := range strings.Fields(message) {
		var i int
		var verdict string
		if _, err := fmt.Sscanf(strings.Replace(line, ":", " ", 1), "%d %s", &i, &verdict); err == nil && i < len(targets) {
			answered[targets[i].name] = verdict == "answered"
			t.Logf("%s → %s (%s): %s", ns.Name, targets[i].name, net.JoinHostPort(targets[i].ip, fmt.Sprint(targets[i].port)), verdict)
		}
	}
	require.Len(t, answered, len(targets), "the probe's report: %q", message)
	return answered
}
