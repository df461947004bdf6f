package webhooks_test

import (
	"context"
	"testing"

	rmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/webhook/podtopologyspreadconstraints"
)

func init() {
	register(podtopologyspreadconstraints.Webhook, func(c *rmv1alpha1.ResourceManagerConfiguration) {
		c.Webhooks.PodTopologySpreadConstraints.Enabled = true
	})
}

const tscHash = "5d8f7c9b4"

// tscPod is a pod of a Deployment's revision (pod-template-hash) with a zone spread over its
// app, and more labels.
func tscPod(namespace, name string, labels map[string]string) *corev1.Pod {
	p := testPod(namespace, name, haLabels(map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: tscHash}, labels))
	p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
		TopologyKey: corev1.LabelTopologyZone, MaxSkew: 1, WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
	}}
	return p
}

// revisionSelected tells whether the pod's spread selects its revision.
func revisionSelected(p *corev1.Pod) bool {
	return p.Spec.TopologySpreadConstraints[0].LabelSelector.MatchLabels[appsv1.DefaultDeploymentUniqueLabelKey] == tscHash
}

func probePodTopologySpreadConstraints(namespace string, labels map[string]string) func(context.Context) bool {
	return func(ctx context.Context) bool {
		p := tscPod(namespace, "probe", labels)
		return target.Client.Create(ctx, p, client.DryRunAll) == nil && revisionSelected(p)
	}
}

func TestPodTopologySpreadConstraints(t *testing.T) {
	ctx := context.Background()
	namespace := targetNamespace(t, map[string]string{v1beta1constants.GardenRole: "test"})
	installRegistration(t, "seed-opt-in/webhook-pod-topology-spread-constraints.yaml", "-seed", probePodTopologySpreadConstraints(namespace, nil))

	t.Run("the revision is selected in every constraint", func(t *testing.T) {
		p := tscPod(namespace, "extended", nil)
		p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints,
			// matchLabelKeys does what the webhook does where it is available: the webhook
			// takes pod-template-hash out, or the API server would reject the key in both.
			corev1.TopologySpreadConstraint{
				TopologyKey: corev1.LabelHostname, MaxSkew: 1, WhenUnsatisfiable: corev1.ScheduleAnyway,
				LabelSelector:  &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				MatchLabelKeys: []string{appsv1.DefaultDeploymentUniqueLabelKey},
			},
			corev1.TopologySpreadConstraint{TopologyKey: "rack", MaxSkew: 2, WhenUnsatisfiable: corev1.DoNotSchedule},
		)
		require.NoError(t, target.Client.Create(ctx, p))
		stored := &corev1.Pod{}
		require.NoError(t, target.Client.Get(ctx, client.ObjectKeyFromObject(p), stored))
		revision := map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: tscHash}
		assert.Equal(t, []corev1.TopologySpreadConstraint{
			{TopologyKey: corev1.LabelTopologyZone, MaxSkew: 1, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: revision}},
			{TopologyKey: corev1.LabelHostname, MaxSkew: 1, WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: &metav1.LabelSelector{MatchLabels: revision}},
			{TopologyKey: "rack", MaxSkew: 2, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{appsv1.DefaultDeploymentUniqueLabelKey: tscHash}}},
		}, stored.Spec.TopologySpreadConstraints)
	})

	t.Run("pods not of a Deployment", func(t *testing.T) {
		p := tscPod(namespace, "no-revision", nil)
		delete(p.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
		require.NoError(t, target.Client.Create(ctx, p))
		assert.Equal(t, map[string]string{"app": "web"}, p.Spec.TopologySpreadConstraints[0].LabelSelector.MatchLabels)
	})

	for name, labels := range map[string]map[string]string{
		"skipped":                     {resourcesv1alpha1.PodTopologySpreadConstraintsSkip: "true"},
		"GRM's own pods":              {v1beta1constants.LabelApp: "gardener-resource-manager"},
		"static pods":                 {"static-pod": "true"},
		"skipped with an empty value": {resourcesv1alpha1.PodTopologySpreadConstraintsSkip: ""},
	} {
		t.Run(name, func(t *testing.T) {
			p := tscPod(namespace, "excluded", labels)
			p.GenerateName, p.Name = "excluded-", ""
			require.NoError(t, target.Client.Create(ctx, p))
			assert.NotContains(t, p.Spec.TopologySpreadConstraints[0].LabelSelector.MatchLabels, appsv1.DefaultDeploymentUniqueLabelKey)
		})
	}

	t.Run("namespaces not Gardener's", func(t *testing.T) {
		p := tscPod(targetNamespace(t, nil), "elsewhere", nil)
		require.NoError(t, target.Client.Create(ctx, p))
		assert.False(t, revisionSelected(p))
	})
}

// In a shoot, Gardener's registration matches kube-system and kubernetes-dashboard, and only
// pods managed by Gardener.
func TestPodTopologySpreadConstraintsInShoot(t *testing.T) {
	ctx := context.Background()
	managed := map[string]string{resourcesv1alpha1.ManagedBy: resourcesv1alpha1.GardenerManager}
	waitForWebhook(t, probePodTopologySpreadConstraints(metav1.NamespaceSystem, managed))

	gardeners := tscPod(metav1.NamespaceSystem, "tsc-managed", managed)
	require.NoError(t, target.Client.Create(ctx, gardeners))
	t.Cleanup(func() { assert.NoError(t, target.Client.Delete(context.Background(), gardeners)) })
	assert.True(t, revisionSelected(gardeners))

	customers := tscPod(metav1.NamespaceSystem, "tsc-unmanaged", nil)
	require.NoError(t, target.Client.Create(ctx, customers))
	t.Cleanup(func() { assert.NoError(t, target.Client.Delete(context.Background(), customers)) })
	assert.False(t, revisionSelected(customers))
}
