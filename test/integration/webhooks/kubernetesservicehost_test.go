package webhooks_test

import (
	"context"
	"testing"

	rmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gardener-knative/gardener-knative/pkg/webhook/kubernetesservicehost"
)

const apiServerHost = "api.shoot.example.com"

func init() {
	register(kubernetesservicehost.Webhook, func(c *rmv1alpha1.ResourceManagerConfiguration) {
		c.Webhooks.KubernetesServiceHost.Enabled = true
		c.Webhooks.KubernetesServiceHost.Host = apiServerHost
	})
}

func TestKubernetesServiceHostInjection(t *testing.T) {
	ctx := context.Background()
	ns := targetNamespace(t, nil)

	pod := testPod(ns, "injected", nil)
	pod.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox"}}
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "own", Image: "busybox", Env: []corev1.EnvVar{{Name: "KUBERNETES_SERVICE_HOST", Value: "mine"}}})
	require.NoError(t, target.Client.Create(ctx, pod))
	assert.Equal(t, []corev1.EnvVar{{Name: "KUBERNETES_SERVICE_HOST", Value: apiServerHost}}, pod.Spec.InitContainers[0].Env)
	assert.Equal(t, []corev1.EnvVar{{Name: "KUBERNETES_SERVICE_HOST", Value: apiServerHost}}, pod.Spec.Containers[0].Env)
	assert.Equal(t, []corev1.EnvVar{{Name: "KUBERNETES_SERVICE_HOST", Value: "mine"}}, pod.Spec.Containers[1].Env, "a container's own value stays")

	optedOut := testPod(ns, "opted-out", map[string]string{"apiserver-proxy.networking.gardener.cloud/inject": "disable"})
	require.NoError(t, target.Client.Create(ctx, optedOut))
	assert.Empty(t, optedOut.Spec.Containers[0].Env)

	disabledNS := targetNamespace(t, map[string]string{"apiserver-proxy.networking.gardener.cloud/inject": "disable"})
	inDisabled := testPod(disabledNS, "in-disabled-namespace", nil)
	require.NoError(t, target.Client.Create(ctx, inDisabled))
	assert.Empty(t, inDisabled.Spec.Containers[0].Env)
}

// targetNamespace creates a namespace with the given labels in the target cluster.
func targetNamespace(t *testing.T, labels map[string]string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "webhooks-", Labels: labels}}
	require.NoError(t, target.Client.Create(context.Background(), ns))
	return ns.Name
}

// testPod is a minimal Pod with one container.
func testPod(namespace, name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
	}
}
