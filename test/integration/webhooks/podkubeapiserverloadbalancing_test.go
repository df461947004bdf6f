package webhooks_test

import (
	"context"
	"net/http"
	"testing"

	rmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/webhook/podkubeapiserverloadbalancing"
)

func init() {
	register(podkubeapiserverloadbalancing.Webhook, func(c *rmv1alpha1.ResourceManagerConfiguration) {
		c.Webhooks.PodKubeAPIServerLoadBalancing.Enabled = true
	})
}

// shootControlPlane creates a shoot namespace (gardener.cloud/role=shoot) with the
// istio-internal-load-balancing ConfigMap holding data (none when nil) and returns its name.
func shootControlPlane(t *testing.T, data map[string]string) string {
	t.Helper()
	namespace := targetNamespace(t, map[string]string{v1beta1constants.GardenRole: v1beta1constants.GardenRoleShoot})
	if data != nil {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: rmv1alpha1.IstioInternalLoadBalancingConfigMapName}, Data: data}
		require.NoError(t, target.Client.Create(context.Background(), cm))
	}
	return namespace
}

// internalGateway creates an istio ingress namespace with the internal gateway Service and
// returns the namespace and the Service's cluster IPs.
func internalGateway(t *testing.T) (string, []string) {
	t.Helper()
	namespace := targetNamespace(t, nil)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: v1beta1constants.InternalSNIIngressServiceName},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "tls-tunnel", Port: 9443}}},
	}
	require.NoError(t, target.Client.Create(context.Background(), svc))
	require.NotEmpty(t, svc.Spec.ClusterIPs)
	return namespace, svc.Spec.ClusterIPs
}

// kubeconfigPod is a control-plane pod that mounts the generic token kubeconfig as Gardener's
// components do (a source of a projected volume).
func kubeconfigPod(namespace string) *corev1.Pod {
	p := testPod(namespace, "", map[string]string{"app": "kubernetes"})
	p.GenerateName = "load-balancing-"
	p.Spec.Volumes = []corev1.Volume{{Name: "kubeconfig", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
		{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "generic-token-kubeconfig-92e9ae14"}}},
	}}}}}
	return p
}

func createPod(t *testing.T, p *corev1.Pod) error {
	t.Helper()
	err := target.Client.Create(context.Background(), p)
	if err == nil {
		t.Cleanup(func() { assert.NoError(t, client.IgnoreNotFound(target.Client.Delete(context.Background(), p))) })
	}
	return err
}

// The seed's registration: namespaces labelled gardener.cloud/role=shoot.
func TestPodKubeAPIServerLoadBalancing(t *testing.T) {
	istioNamespace, ips := internalGateway(t)
	hosts := map[string]string{"hosts": "api.shoot.example.com,api.shoot.internal.example.com", "istio-namespace": istioNamespace}
	namespace := shootControlPlane(t, hosts)
	label := podkubeapiserverloadbalancing.NetworkPolicyLabel(istioNamespace+"-istio-ingressgateway-internal", 9443)
	waitForWebhook(t, func(ctx context.Context) bool {
		p := kubeconfigPod(namespace)
		return target.Client.Create(ctx, p, client.DryRunAll) == nil && len(p.Spec.HostAliases) > 0
	})

	t.Run("a pod with the generic kubeconfig", func(t *testing.T) {
		p := kubeconfigPod(namespace)
		require.NoError(t, createPod(t, p))
		var want []corev1.HostAlias
		for _, ip := range ips {
			want = append(want, corev1.HostAlias{IP: ip, Hostnames: []string{"api.shoot.example.com", "api.shoot.internal.example.com"}})
		}
		assert.Equal(t, want, p.Spec.HostAliases)
		assert.Equal(t, map[string]string{"app": "kubernetes", label: "allowed"}, p.Labels)
	})

	t.Run("a pod without", func(t *testing.T) {
		p := testPod(namespace, "plain", nil)
		require.NoError(t, createPod(t, p))
		assert.Empty(t, p.Spec.HostAliases)
		assert.Empty(t, p.Labels)
	})

	t.Run("a shoot namespace without the ConfigMap", func(t *testing.T) {
		p := kubeconfigPod(shootControlPlane(t, nil))
		require.NoError(t, createPod(t, p))
		assert.Empty(t, p.Spec.HostAliases)
	})

	t.Run("namespaces not a shoot's", func(t *testing.T) {
		other := targetNamespace(t, map[string]string{v1beta1constants.GardenRole: "test"})
		require.NoError(t, target.Client.Create(context.Background(), &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: rmv1alpha1.IstioInternalLoadBalancingConfigMapName}, Data: hosts,
		}))
		p := kubeconfigPod(other)
		require.NoError(t, createPod(t, p))
		assert.Empty(t, p.Spec.HostAliases)
	})

	t.Run("static pods", func(t *testing.T) {
		p := kubeconfigPod(namespace)
		p.Labels["static-pod"] = "true"
		require.NoError(t, createPod(t, p))
		assert.Empty(t, p.Spec.HostAliases)
	})

	// Failure policy Fail: where the webhook cannot mutate, the pod is refused with its answer.
	t.Run("a ConfigMap without hosts refuses the pod", func(t *testing.T) {
		broken := shootControlPlane(t, map[string]string{"istio-namespace": istioNamespace})
		err := createPod(t, kubeconfigPod(broken))
		require.Error(t, err)
		assert.True(t, apierrors.IsForbidden(err), "%v", err)
		assert.Contains(t, err.Error(), `"hosts" key in configmap "`+broken+`/istio-internal-load-balancing" provides an empty value`)
	})

	t.Run("a missing gateway refuses the pod", func(t *testing.T) {
		missing := shootControlPlane(t, map[string]string{"hosts": "api.example.com", "istio-namespace": "no-such-istio"})
		err := createPod(t, kubeconfigPod(missing))
		require.Error(t, err)
		var status apierrors.APIStatus
		require.ErrorAs(t, err, &status)
		assert.Equal(t, int32(http.StatusNotFound), status.Status().Code, "%v", err)
		assert.Contains(t, err.Error(), `Service "istio-ingressgateway-internal" not found`)
	})
}
