package webhooks_test

import (
	"context"
	"fmt"
	"maps"
	"testing"

	rmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/webhook/highavailabilityconfig"
)

const (
	haNotReadySeconds    int64 = 60
	haUnreachableSeconds int64 = 120
)

func init() {
	// Reads uncached: the tests change Nodes and admit right after; the cache's reuse is
	// covered by the package's unit tests.
	register(highavailabilityconfig.WithCacheTTL(0), func(c *rmv1alpha1.ResourceManagerConfiguration) {
		c.Webhooks.HighAvailabilityConfig.Enabled = true
		c.Webhooks.HighAvailabilityConfig.DefaultNotReadyTolerationSeconds = ptrTo(haNotReadySeconds)
		c.Webhooks.HighAvailabilityConfig.DefaultUnreachableTolerationSeconds = ptrTo(haUnreachableSeconds)
	})
}

// haNamespace creates a namespace in the target that the seed registration matches
// (gardener.cloud/role), considered by the webhook or not, with the given annotations.
func haNamespace(t *testing.T, considered bool, annotations map[string]string) string {
	t.Helper()
	labels := map[string]string{v1beta1constants.GardenRole: "test"}
	if considered {
		labels[resourcesv1alpha1.HighAvailabilityConfigConsider] = "true"
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "ha-config-", Labels: labels, Annotations: annotations}}
	require.NoError(t, target.Client.Create(context.Background(), ns))
	return ns.Name
}

// haNodes gives the target two Nodes until the test ends: the webhook enforces a spread over
// hosts only on clusters with more than one.
func haNodes(t *testing.T) {
	t.Helper()
	for i := range 2 {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ha-config-node-%d", i)}}
		require.NoError(t, target.Client.Create(context.Background(), node))
		t.Cleanup(func() { assert.NoError(t, target.Client.Delete(context.Background(), node)) })
	}
}

var haPodLabels = map[string]string{"app": "web"}

func haDeployment(namespace, name string, replicas int32, labels, annotations map[string]string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels, Annotations: annotations},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptrTo(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: haPodLabels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: haPodLabels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
			},
		},
	}
}

func haStatefulSet(namespace, name string, replicas int32, labels map[string]string) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptrTo(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: haPodLabels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "revision": "1"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
			},
		},
	}
}

func componentType(t string) map[string]string {
	return map[string]string{resourcesv1alpha1.HighAvailabilityConfigType: t}
}

// probeHighAvailabilityConfig tells whether the webhook mutates a server's Deployment in
// namespace (a dry run).
func probeHighAvailabilityConfig(namespace string, labels map[string]string) func(context.Context) bool {
	return func(ctx context.Context) bool {
		d := haDeployment(namespace, "probe", 1, labels, nil)
		return target.Client.Create(ctx, d, client.DryRunAll) == nil && *d.Spec.Replicas == 2
	}
}

func TestHighAvailabilityConfigReplicas(t *testing.T) {
	ctx := context.Background()
	unset := haNamespace(t, true, nil)
	installRegistration(t, "seed/webhook-high-availability-config.yaml", "-seed", probeHighAvailabilityConfig(unset, componentType("server")))
	empty := haNamespace(t, true, map[string]string{resourcesv1alpha1.HighAvailabilityConfigFailureToleranceType: ""})
	zone := haNamespace(t, true, map[string]string{resourcesv1alpha1.HighAvailabilityConfigFailureToleranceType: "zone"})
	notConsidered := haNamespace(t, false, nil)

	for i, tc := range []struct {
		name        string
		namespace   string
		replicas    int32
		labels      map[string]string
		annotations map[string]string
		want        int32
	}{
		{"controller, failure tolerance unset", unset, 1, componentType("controller"), nil, 2},
		{"controller, failure tolerance empty", empty, 1, componentType("controller"), nil, 1},
		{"controller, failure tolerance zone", zone, 1, componentType("controller"), nil, 2},
		{"server, failure tolerance unset", unset, 1, componentType("server"), nil, 2},
		{"server, failure tolerance empty", empty, 1, componentType("server"), nil, 2},
		{"server, failure tolerance zone", zone, 1, componentType("server"), nil, 2},
		{"without component type", zone, 1, nil, nil, 1},
		{"overridden by annotation", empty, 1, componentType("controller"), map[string]string{resourcesv1alpha1.HighAvailabilityConfigReplicas: "4"}, 4},
		{"hibernated", zone, 0, componentType("server"), nil, 0},
		{"above the computed count without HPA", zone, 5, componentType("server"), nil, 2},
		{"skipped", zone, 1, haLabels(componentType("server"), map[string]string{resourcesv1alpha1.HighAvailabilityConfigSkip: "true"}), nil, 1},
		{"namespace not considered", notConsidered, 1, componentType("server"), nil, 1},
	} {
		untouched := tc.namespace == notConsidered || tc.labels[resourcesv1alpha1.HighAvailabilityConfigSkip] != ""
		t.Run(tc.name, func(t *testing.T) {
			d := haDeployment(tc.namespace, fmt.Sprintf("deployment-%d", i), tc.replicas, tc.labels, tc.annotations)
			require.NoError(t, target.Client.Create(ctx, d))
			assert.Equal(t, tc.want, *d.Spec.Replicas, "Deployment")

			s := haStatefulSet(tc.namespace, fmt.Sprintf("statefulset-%d", i), tc.replicas, tc.labels)
			s.Annotations = tc.annotations
			require.NoError(t, target.Client.Create(ctx, s))
			assert.Equal(t, tc.want, *s.Spec.Replicas, "StatefulSet")
			if untouched {
				assert.Empty(t, d.Spec.Template.Spec.Tolerations, "Deployment")
				assert.Empty(t, s.Spec.Template.Spec.Tolerations, "StatefulSet")
			} else {
				assert.Len(t, d.Spec.Template.Spec.Tolerations, 2, "Deployment")
				assert.Len(t, s.Spec.Template.Spec.Tolerations, 2, "StatefulSet")
			}
		})
	}

	t.Run("an update is mutated too", func(t *testing.T) {
		d := haDeployment(zone, "updated", 1, componentType("controller"), nil)
		require.NoError(t, target.Client.Create(ctx, d))
		d.Spec.Replicas = ptrTo(int32(1))
		require.NoError(t, target.Client.Update(ctx, d))
		assert.Equal(t, int32(2), *d.Spec.Replicas)
	})

	t.Run("scaled by an HPA", func(t *testing.T) {
		for _, name := range []string{"scaled-up", "scaled-low"} {
			require.NoError(t, target.Client.Create(ctx, &autoscalingv2.HorizontalPodAutoscaler{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: zone},
				Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
					ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
					MaxReplicas:    6,
				},
			}))
		}
		up := haDeployment(zone, "scaled-up", 5, componentType("server"), nil)
		require.NoError(t, target.Client.Create(ctx, up))
		assert.Equal(t, int32(5), *up.Spec.Replicas, "the HPA's count stays above the computed one")
		low := haDeployment(zone, "scaled-low", 1, componentType("server"), nil)
		require.NoError(t, target.Client.Create(ctx, low))
		assert.Equal(t, int32(2), *low.Spec.Replicas, "raised to the computed count")
	})

	t.Run("HPAs", func(t *testing.T) {
		hpa := func(name string, labels, annotations map[string]string, minReplicas, maxReplicas int32) *autoscalingv2.HorizontalPodAutoscaler {
			return &autoscalingv2.HorizontalPodAutoscaler{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: zone, Labels: labels, Annotations: annotations},
				Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
					ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "some"},
					MinReplicas:    ptrTo(minReplicas), MaxReplicas: maxReplicas,
				},
			}
		}
		for _, tc := range []struct {
			hpa              *autoscalingv2.HorizontalPodAutoscaler
			wantMin, wantMax int32
		}{
			{hpa("without-type", nil, nil, 1, 2), 1, 2},
			{hpa("raised", componentType("controller"), nil, 1, 3), 2, 3},
			{hpa("raised-with-max", componentType("controller"), nil, 1, 1), 2, 2},
			{hpa("overridden", componentType("controller"), map[string]string{resourcesv1alpha1.HighAvailabilityConfigReplicas: "12"}, 1, 2), 12, 12},
			{hpa("higher", componentType("controller"), nil, 12, 16), 12, 16},
		} {
			require.NoError(t, target.Client.Create(ctx, tc.hpa))
			assert.Equal(t, tc.wantMin, *tc.hpa.Spec.MinReplicas, tc.hpa.Name)
			assert.Equal(t, tc.wantMax, tc.hpa.Spec.MaxReplicas, tc.hpa.Name)
		}

		// Written as autoscaling/v1, sent as autoscaling/v2 (matchPolicy Equivalent).
		v1 := &autoscalingv1.HorizontalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Name: "v1", Namespace: zone, Labels: componentType("server")},
			Spec: autoscalingv1.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "some"},
				MinReplicas:    ptrTo(int32(1)), MaxReplicas: 1,
			},
		}
		require.NoError(t, target.Client.Create(ctx, v1))
		assert.Equal(t, int32(2), *v1.Spec.MinReplicas)
		assert.Equal(t, int32(2), v1.Spec.MaxReplicas)
	})
}

func TestHighAvailabilityConfigScheduling(t *testing.T) {
	ctx := context.Background()
	haNodes(t)
	zones := map[string]string{
		resourcesv1alpha1.HighAvailabilityConfigFailureToleranceType: "zone",
		resourcesv1alpha1.HighAvailabilityConfigZones:                "zone-c,zone-a,zone-b",
	}
	namespace := haNamespace(t, true, zones)
	installRegistration(t, "seed/webhook-high-availability-config.yaml", "-seed", probeHighAvailabilityConfig(namespace, componentType("server")))

	pinned := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-a", "zone-b", "zone-c"}},
		}}},
	}}}
	tolerations := func(own ...corev1.Toleration) []corev1.Toleration {
		return append(own,
			corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptrTo(haNotReadySeconds)},
			corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptrTo(haUnreachableSeconds)},
		)
	}
	spread := func(selector *metav1.LabelSelector, matchLabelKeys []string, hostDomains, zoneDomains int32) []corev1.TopologySpreadConstraint {
		return []corev1.TopologySpreadConstraint{
			{TopologyKey: corev1.LabelHostname, MaxSkew: 1, WhenUnsatisfiable: corev1.DoNotSchedule, MinDomains: ptrTo(hostDomains), LabelSelector: selector, MatchLabelKeys: matchLabelKeys},
			{TopologyKey: corev1.LabelTopologyZone, MaxSkew: 1, WhenUnsatisfiable: corev1.DoNotSchedule, MinDomains: ptrTo(zoneDomains), LabelSelector: selector, MatchLabelKeys: matchLabelKeys},
		}
	}

	t.Run("Deployment", func(t *testing.T) {
		d := haDeployment(namespace, "server", 1, componentType("server"), nil)
		require.NoError(t, target.Client.Create(ctx, d))
		assert.Equal(t, int32(2), *d.Spec.Replicas)
		assert.Equal(t, pinned, d.Spec.Template.Spec.Affinity)
		// A Deployment's pods are spread per revision.
		assert.Equal(t, spread(&metav1.LabelSelector{MatchLabels: haPodLabels}, []string{appsv1.DefaultDeploymentUniqueLabelKey}, 2, 2), d.Spec.Template.Spec.TopologySpreadConstraints)
		assert.Equal(t, tolerations(), d.Spec.Template.Spec.Tolerations)
	})

	t.Run("StatefulSet", func(t *testing.T) {
		s := haStatefulSet(namespace, "controller", 1, componentType("controller"))
		require.NoError(t, target.Client.Create(ctx, s))
		assert.Equal(t, int32(2), *s.Spec.Replicas)
		assert.Equal(t, pinned, s.Spec.Template.Spec.Affinity)
		// A StatefulSet's pods are spread by its (immutable) selector, not its template's labels.
		assert.Equal(t, spread(&metav1.LabelSelector{MatchLabels: haPodLabels}, nil, 2, 2), s.Spec.Template.Spec.TopologySpreadConstraints)
		assert.Equal(t, tolerations(), s.Spec.Template.Spec.Tolerations)
	})

	t.Run("minDomains follow the HPA's maxReplicas", func(t *testing.T) {
		require.NoError(t, target.Client.Create(ctx, &autoscalingv2.HorizontalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Name: "autoscaled", Namespace: namespace},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "autoscaled"},
				MaxReplicas:    6,
			},
		}))
		d := haDeployment(namespace, "autoscaled", 2, componentType("server"), nil)
		require.NoError(t, target.Client.Create(ctx, d))
		assert.Equal(t, spread(&metav1.LabelSelector{MatchLabels: haPodLabels}, []string{appsv1.DefaultDeploymentUniqueLabelKey}, 3, 3), d.Spec.Template.Spec.TopologySpreadConstraints)
	})

	t.Run("own tolerations and constraints", func(t *testing.T) {
		d := haDeployment(namespace, "own", 1, componentType("server"), nil)
		ownNotReady := corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptrTo(int64(300))}
		d.Spec.Template.Spec.Tolerations = []corev1.Toleration{ownNotReady}
		rack := corev1.TopologySpreadConstraint{TopologyKey: "rack", MaxSkew: 3, WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: &metav1.LabelSelector{MatchLabels: haPodLabels}}
		d.Spec.Template.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{
			rack, {TopologyKey: corev1.LabelHostname, MaxSkew: 5, WhenUnsatisfiable: corev1.ScheduleAnyway},
		}
		require.NoError(t, target.Client.Create(ctx, d))
		assert.Equal(t, []corev1.Toleration{ownNotReady, tolerations()[1]}, d.Spec.Template.Spec.Tolerations, "no second not-ready toleration")
		rack.MatchLabelKeys = []string{appsv1.DefaultDeploymentUniqueLabelKey}
		assert.Equal(t, append([]corev1.TopologySpreadConstraint{rack}, spread(&metav1.LabelSelector{MatchLabels: haPodLabels}, []string{appsv1.DefaultDeploymentUniqueLabelKey}, 2, 2)...),
			d.Spec.Template.Spec.TopologySpreadConstraints, "the own constraint over hosts is replaced")
	})

	t.Run("host spread and zone pinning without failure tolerance", func(t *testing.T) {
		pinning := haNamespace(t, true, map[string]string{
			resourcesv1alpha1.HighAvailabilityConfigZones:       "zone-a,zone-b,zone-c",
			resourcesv1alpha1.HighAvailabilityConfigZonePinning: "true",
		})
		spread := func(hosts corev1.UnsatisfiableConstraintAction, hostDomains *int32) []corev1.TopologySpreadConstraint {
			selector := &metav1.LabelSelector{MatchLabels: haPodLabels}
			keys := []string{appsv1.DefaultDeploymentUniqueLabelKey}
			return []corev1.TopologySpreadConstraint{
				{TopologyKey: corev1.LabelHostname, MaxSkew: 1, WhenUnsatisfiable: hosts, MinDomains: hostDomains, LabelSelector: selector, MatchLabelKeys: keys},
				{TopologyKey: corev1.LabelTopologyZone, MaxSkew: 1, WhenUnsatisfiable: corev1.DoNotSchedule, MinDomains: ptrTo(int32(3)), LabelSelector: selector, MatchLabelKeys: keys},
			}
		}
		bestEffort := haDeployment(pinning, "best-effort", 3, nil, nil)
		require.NoError(t, target.Client.Create(ctx, bestEffort))
		assert.Equal(t, pinned, bestEffort.Spec.Template.Spec.Affinity)
		assert.Equal(t, spread(corev1.ScheduleAnyway, nil), bestEffort.Spec.Template.Spec.TopologySpreadConstraints)

		hostSpread := haDeployment(pinning, "host-spread", 3, nil, map[string]string{resourcesv1alpha1.HighAvailabilityConfigHostSpread: "true"})
		require.NoError(t, target.Client.Create(ctx, hostSpread))
		assert.Equal(t, spread(corev1.DoNotSchedule, ptrTo(int32(3))), hostSpread.Spec.Template.Spec.TopologySpreadConstraints)
	})
}

// In a shoot, Gardener's registration matches kube-system and kubernetes-dashboard, labelled
// consider=true, and only objects managed by Gardener.
func TestHighAvailabilityConfigInShoot(t *testing.T) {
	ctx := context.Background()
	kubeSystem := &corev1.Namespace{}
	require.NoError(t, target.Client.Get(ctx, client.ObjectKey{Name: metav1.NamespaceSystem}, kubeSystem))
	patch := client.MergeFrom(kubeSystem.DeepCopy())
	metav1.SetMetaDataLabel(&kubeSystem.ObjectMeta, resourcesv1alpha1.HighAvailabilityConfigConsider, "true")
	require.NoError(t, target.Client.Patch(ctx, kubeSystem, patch))
	t.Cleanup(func() {
		patch := client.MergeFrom(kubeSystem.DeepCopy())
		delete(kubeSystem.Labels, resourcesv1alpha1.HighAvailabilityConfigConsider)
		assert.NoError(t, target.Client.Patch(context.Background(), kubeSystem, patch))
	})
	managed := haLabels(componentType("server"), map[string]string{resourcesv1alpha1.ManagedBy: resourcesv1alpha1.GardenerManager})
	waitForWebhook(t, probeHighAvailabilityConfig(metav1.NamespaceSystem, managed))

	gardeners := haDeployment(metav1.NamespaceSystem, "ha-config-managed", 1, managed, nil)
	require.NoError(t, target.Client.Create(ctx, gardeners))
	t.Cleanup(func() { assert.NoError(t, target.Client.Delete(context.Background(), gardeners)) })
	assert.Equal(t, int32(2), *gardeners.Spec.Replicas)
	assert.Len(t, gardeners.Spec.Template.Spec.Tolerations, 2)

	customers := haDeployment(metav1.NamespaceSystem, "ha-config-unmanaged", 1, componentType("server"), nil)
	require.NoError(t, target.Client.Create(ctx, customers))
	t.Cleanup(func() { assert.NoError(t, target.Client.Delete(context.Background(), customers)) })
	assert.Equal(t, int32(1), *customers.Spec.Replicas)
	assert.Empty(t, customers.Spec.Template.Spec.Tolerations)

	// A namespace other than kube-system and kubernetes-dashboard is not the shoot
	// registration's, whatever it is labelled (nor the seed's, without gardener.cloud/role).
	other := targetNamespace(t, map[string]string{resourcesv1alpha1.HighAvailabilityConfigConsider: "true"})
	elsewhere := haDeployment(other, "elsewhere", 1, managed, nil)
	require.NoError(t, target.Client.Create(ctx, elsewhere))
	assert.Equal(t, int32(1), *elsewhere.Spec.Replicas)
}

// haLabels merges label maps.
func haLabels(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		maps.Copy(out, m)
	}
	return out
}
