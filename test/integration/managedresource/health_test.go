package managedresource_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/health"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
)

func healthConfig(t testing.TB) *health.Config {
	t.Helper()
	cfg, err := functiontest.LoadConfig[health.Config](health.Function)
	require.NoError(t, err)
	return cfg
}

// The health function checks what a ManagedResource applied: a Deployment that is not rolled
// out makes it unhealthy and progressing, its roll-out (its own event) healthy and rolled out; an
// object that is gone makes it unhealthy; skip-health-check leaves an object out.
func TestHealthAndProgressing(t *testing.T) {
	ctx := context.Background()
	apply := singleTarget(t)
	h := functiontest.New(t, seed, health.Function, functiontest.AsFunction(), functiontest.WithTarget(shootA), functiontest.WithConfig(healthConfig(t)))
	ns := namespace(t, shootA)
	_, mr := manifest(t, ns, "app", map[string]string{"objects.yaml": docs(configMap(ns, "cfg", "a"), deployment(ns))})
	apply.Send("add", mr)
	mr = get(t, mr)

	h.Send("update", mr)
	mr = get(t, mr)
	status, reason, message := condition(mr, "ResourcesHealthy")
	assert.Equal(t, "False", status)
	assert.Equal(t, "DeploymentUnhealthy", reason, message)
	status, reason, _ = condition(mr, "ResourcesProgressing")
	assert.Equal(t, "True", status)
	assert.Equal(t, "DeploymentProgressing", reason)

	// The Deployment rolls out: its status event makes the ManagedResource healthy.
	d := rollOut(t, ns, "web", 2)
	h.SendTarget("update", d, "")
	mr = get(t, mr)
	status, reason, message = condition(mr, "ResourcesHealthy")
	assert.Equal(t, "True", status, message)
	assert.Equal(t, "ResourcesHealthy", reason)
	status, reason, _ = condition(mr, "ResourcesProgressing")
	assert.Equal(t, "False", status)
	assert.Equal(t, "ResourcesRolledOut", reason)

	// An object that is gone: the sweep finds out.
	require.NoError(t, shootA.Client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cfg"}}))
	h.Sweep(health.Health)
	status, reason, _ = condition(get(t, mr), "ResourcesHealthy")
	assert.Equal(t, "False", status)
	assert.Equal(t, "ConfigMapMissing", reason)
}

// An unchanged ManagedResource's health sweep writes nothing.
func TestHealthSweepWritesNothingWhenNothingChanged(t *testing.T) {
	apply := singleTarget(t)
	h := functiontest.New(t, seed, health.Function, functiontest.AsFunction(), functiontest.WithTarget(shootA), functiontest.WithConfig(healthConfig(t)))
	ns := namespace(t, shootA)
	_, mr := manifest(t, ns, "app", map[string]string{"objects.yaml": configMap(ns, "cfg", "a")})
	apply.Send("add", mr)
	h.Sweep(health.Health)
	status, _, _ := condition(get(t, mr), string(resourcesv1alpha1.ResourcesHealthy))
	require.Equal(t, "True", status)
	h.ResetRequests()
	h.Sweep(health.Health)
	assert.Zero(t, h.Requests("patch"))
}

// The health sweep reads the objects of the common kinds from one LIST per kind (metadata only
// where only their existence is checked), not a GET per object, and still finds one missing.
func TestHealthSweepGetsNoObjectOfTheCommonKinds(t *testing.T) {
	apply := singleTarget(t)
	h := functiontest.New(t, seed, health.Function, functiontest.AsFunction(), functiontest.WithTarget(shootA), functiontest.WithConfig(healthConfig(t)))
	ns := namespace(t, shootA)
	serviceAccount := fmt.Sprintf("apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: app\n  namespace: %s\n", ns)
	_, mr := manifest(t, ns, "common", map[string]string{"objects.yaml": docs(configMap(ns, "one", "a"), configMap(ns, "two", "b"), serviceAccount)})
	apply.Send("add", mr)
	h.Sweep(health.Health) // writes the condition: a write costs a live re-check
	h.TargetCounter.Reset()
	h.Sweep(health.Health)
	status, _, message := condition(get(t, mr), string(resourcesv1alpha1.ResourcesHealthy))
	require.Equal(t, "True", status, message)
	for _, resource := range []string{"configmaps", "serviceaccounts"} {
		assert.Zero(t, h.TargetCounter.Of("get", resource), "GETs of %s", resource)
		assert.Equal(t, 1, h.TargetCounter.Of("list", resource), "LISTs of %s", resource)
	}

	require.NoError(t, shootA.Client.Delete(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "two"}}))
	h.Sweep(health.Health)
	status, reason, _ := condition(get(t, mr), string(resourcesv1alpha1.ResourcesHealthy))
	assert.Equal(t, "False", status)
	assert.Equal(t, "ConfigMapMissing", reason)
}

// The progressing sweep counts the live Pods of every rolled-out Deployment of a namespace from
// one LIST of that namespace's Pods, not one LIST per Deployment: more Deployments in the
// namespace cost no more LISTs. It still tells a Deployment whose old pods remain.
func TestProgressingSweepListsEachNamespacesPodsOnce(t *testing.T) {
	apply := singleTarget(t)
	h := functiontest.New(t, seed, health.Function, functiontest.AsFunction(), functiontest.WithTarget(shootA), functiontest.WithConfig(healthConfig(t)))
	ns := namespace(t, shootA)
	deployments := func(names ...string) map[string]string {
		var objects []string
		for _, name := range names {
			objects = append(objects, strings.ReplaceAll(deployment(ns), "web", name))
		}
		return map[string]string{"objects.yaml": docs(objects...)}
	}
	// measure is the Pods LISTs of a progressing sweep over every ManagedResource of the seed
	// (other tests' too), after a first one has written what changed (a write costs a live
	// re-check).
	measure := func() int {
		h.Sweep(health.Progressing)
		h.TargetCounter.Reset()
		h.Sweep(health.Progressing)
		return h.TargetCounter.Of("list", "pods")
	}

	_, first := manifest(t, ns, "apps", deployments("web"))
	apply.Send("add", first)
	rollOut(t, ns, "web", 2)
	lists := measure()
	status, _, message := condition(get(t, first), "ResourcesProgressing")
	require.Equal(t, "False", status, message)

	_, second := manifest(t, ns, "more-apps", deployments("api", "db"))
	apply.Send("add", second)
	rollOut(t, ns, "api", 2)
	rollOut(t, ns, "db", 3) // one old pod remains
	assert.Equal(t, lists, measure(), "two more rolled-out Deployments in the namespace, no more LISTs")
	status, reason, message := condition(get(t, second), "ResourcesProgressing")
	assert.Equal(t, "True", status)
	assert.Equal(t, "DeploymentProgressing", reason)
	assert.Contains(t, message, "db", "the Deployment whose old pod remains")
}

// rollOut gives the Deployment name (2 replicas) a rolled-out status and pods of its selector
// (more than its replicas: old pods that remain), and returns it as it is then.
func rollOut(t testing.TB, ns, name string, pods int) *appsv1.Deployment {
	t.Helper()
	ctx := context.Background()
	d := &appsv1.Deployment{}
	require.NoError(t, shootA.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d))
	d.Status = appsv1.DeploymentStatus{
		ObservedGeneration: d.Generation, Replicas: *d.Spec.Replicas, UpdatedReplicas: *d.Spec.Replicas,
		ReadyReplicas: *d.Spec.Replicas, AvailableReplicas: *d.Spec.Replicas,
		Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
		},
	}
	require.NoError(t, shootA.Client.Status().Update(ctx, d))
	for i := range pods {
		require.NoError(t, shootA.Client.Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: name + "-", Labels: map[string]string{"app": name}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: name, Image: "nginx"}}},
		}), "pod %d", i)
	}
	require.NoError(t, shootA.Client.Get(ctx, client.ObjectKeyFromObject(d), d))
	return d
}
