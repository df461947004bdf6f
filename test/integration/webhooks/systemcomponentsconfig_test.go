package webhooks_test

import (
	"context"
	"strings"
	"testing"

	rmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/webhook/systemcomponentsconfig"
)

// Nodes are cluster-scoped and other tests create some: the webhook considers only the Nodes
// with a label of this test's own (sccPoolLabel), and this test's taints have a key prefix of
// its own.
const (
	sccPoolLabel     = "system-components-config.test.gardener-knative.dev/pool"
	sccTaintPrefix   = "system-components-config.test.gardener-knative.dev/"
	sccSystemPool    = "system"
	sccPodNodeLabel  = "worker.gardener.cloud/system-components"
	sccConfiguredKey = sccTaintPrefix + "configured"
)

// The harness's clock stands still, so any positive TTL would keep the first node list for
// the whole run: the webhook lists the Nodes for every pod here (TTL 0), and the cache's
// expiry is unit-tested with a clock that moves.
func init() {
	register(systemcomponentsconfig.WithNodeCacheTTL(0), func(c *rmv1alpha1.ResourceManagerConfiguration) {
		c.Webhooks.SystemComponentsConfig = rmv1alpha1.SystemComponentsConfigWebhookConfig{
			Enabled:         true,
			NodeSelector:    map[string]string{sccPoolLabel: sccSystemPool},
			PodNodeSelector: map[string]string{sccPodNodeLabel: "true"},
			PodTolerations:  []corev1.Toleration{{Key: sccConfiguredKey, Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}},
		}
	})
}

// sccNode creates a Node until the test ends.
func sccNode(t *testing.T, pool string, taints ...corev1.Taint) {
	t.Helper()
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "system-components-", Labels: map[string]string{sccPoolLabel: pool}},
		Spec:       corev1.NodeSpec{Taints: taints},
	}
	require.NoError(t, target.Client.Create(context.Background(), n))
	t.Cleanup(func() { assert.NoError(t, target.Client.Delete(context.Background(), n)) })
}

// sccPod creates a pod with the given labels until the test ends and returns it as stored.
func sccPod(t *testing.T, namespace string, labels map[string]string, change func(*corev1.Pod)) *corev1.Pod {
	t.Helper()
	p := testPod(namespace, "", labels)
	p.GenerateName = "system-components-"
	if change != nil {
		change(p)
	}
	require.NoError(t, target.Client.Create(context.Background(), p))
	t.Cleanup(func() { assert.NoError(t, target.Client.Delete(context.Background(), p)) })
	stored := &corev1.Pod{}
	require.NoError(t, target.Client.Get(context.Background(), client.ObjectKeyFromObject(p), stored))
	return stored
}

// ownTolerations are the pod's tolerations of this test's taints and of the cluster-autoscaler's
// (never to be added). Those of node.kubernetes.io/not-ready and unreachable are left out: the
// kube-apiserver's DefaultTolerationSeconds plugin adds them to every pod.
func ownTolerations(p *corev1.Pod) []corev1.Toleration {
	var own []corev1.Toleration
	for _, tol := range p.Spec.Tolerations {
		switch {
		case strings.HasPrefix(tol.Key, sccTaintPrefix), tol.Key == systemcomponentsconfig.ToBeDeletedByClusterAutoscaler:
			own = append(own, tol)
		}
	}
	return own
}

func TestSystemComponentsConfig(t *testing.T) {
	// Two system-component Nodes, one with a new taint (as while a shoot's worker taints
	// change) and Kubernetes' and the cluster-autoscaler's taints, and a Node of another pool.
	sccNode(t, sccSystemPool, corev1.Taint{Key: sccConfiguredKey, Value: "true", Effect: corev1.TaintEffectNoSchedule})
	sccNode(t, sccSystemPool,
		corev1.Taint{Key: sccConfiguredKey, Value: "true", Effect: corev1.TaintEffectNoSchedule},
		corev1.Taint{Key: sccTaintPrefix + "new", Effect: corev1.TaintEffectNoExecute},
		corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute},
		corev1.Taint{Key: systemcomponentsconfig.ToBeDeletedByClusterAutoscaler, Value: "1763683200", Effect: corev1.TaintEffectNoSchedule},
	)
	sccNode(t, "workers", corev1.Taint{Key: sccTaintPrefix + "other-pool", Value: "true", Effect: corev1.TaintEffectNoSchedule})

	managed := map[string]string{resourcesv1alpha1.ManagedBy: resourcesv1alpha1.GardenerManager}
	ns := metav1.NamespaceSystem

	t.Run("node selector and tolerations", func(t *testing.T) {
		p := sccPod(t, ns, managed, func(p *corev1.Pod) {
			p.Spec.NodeSelector = map[string]string{corev1.LabelOSStable: "linux"}
		})
		assert.Equal(t, map[string]string{corev1.LabelOSStable: "linux", sccPodNodeLabel: "true"}, p.Spec.NodeSelector)
		assert.Equal(t, []corev1.Toleration{
			{Key: sccConfiguredKey, Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule},
			{Key: sccTaintPrefix + "new", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		}, ownTolerations(p))
	})

	t.Run("a Node tainted later is tolerated by later pods", func(t *testing.T) {
		sccNode(t, sccSystemPool, corev1.Taint{Key: sccTaintPrefix + "later", Effect: corev1.TaintEffectNoSchedule})
		p := sccPod(t, ns, managed, nil)
		assert.Contains(t, p.Spec.Tolerations, corev1.Toleration{Key: sccTaintPrefix + "later", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
	})

	t.Run("a pod's own tolerations stay, without duplicates", func(t *testing.T) {
		own := corev1.Toleration{Key: sccTaintPrefix + "own", Operator: corev1.TolerationOpExists}
		configured := corev1.Toleration{Key: sccConfiguredKey, Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}
		p := sccPod(t, ns, managed, func(p *corev1.Pod) { p.Spec.Tolerations = []corev1.Toleration{own, configured} })
		assert.Equal(t, []corev1.Toleration{own, configured,
			{Key: sccTaintPrefix + "new", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		}, ownTolerations(p))
	})

	untouched := map[string]struct {
		namespace string
		labels    map[string]string
		change    func(*corev1.Pod)
	}{
		"skip label":              {ns, map[string]string{resourcesv1alpha1.ManagedBy: resourcesv1alpha1.GardenerManager, resourcesv1alpha1.SystemComponentsConfigSkip: "true"}, nil},
		"not managed by Gardener": {ns, nil, nil},
		"static pods":             {ns, map[string]string{resourcesv1alpha1.ManagedBy: resourcesv1alpha1.GardenerManager, "static-pod": "true"}, nil},
		"DaemonSet pods": {ns, managed, func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", UID: types.UID("3c8a5b5e-9e0f-4a43-9d55-8d6c1c0e1f00"), Controller: ptrTo(true)}}
		}},
		"other namespaces": {targetNamespace(t, nil), managed, nil},
	}
	for name, tc := range untouched {
		t.Run("untouched: "+name, func(t *testing.T) {
			p := sccPod(t, tc.namespace, tc.labels, tc.change)
			assert.Empty(t, p.Spec.NodeSelector)
			assert.Empty(t, ownTolerations(p))
		})
	}
}
