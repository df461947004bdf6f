package node

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func TestDeclaration(t *testing.T) {
	require.NoError(t, Function.Validate())
	assert.Equal(t, function.PerSeed, Function.DeploymentMode())
}

// The file's keys, with Gardener's defaults when a controller is enabled, and the environment
// over the file; a disabled controller's sweep is off and still ticks at Gardener's backoff.
func TestConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`apiVersion: resourcemanager.config.gardener.cloud/v1alpha1
kind: ResourceManagerConfiguration
controllers:
  nodeCriticalComponents:
    enabled: true
  nodeAgentReconciliationDelay:
    enabled: true
    minDelay: 5s
`), 0o600))
	t.Setenv("NODE_AGENT_RECONCILIATION_MAX_DELAY", "30s")
	loaded, err := function.LoadConfig(Function, function.ComponentConfigs{ResourceManager: path})
	require.NoError(t, err)
	assert.Equal(t, &Config{CriticalComponentsEnabled: true, CriticalComponentsBackoff: 10 * time.Second, AgentReconciliationDelayEnabled: true, MinDelay: 5 * time.Second, MaxDelay: 30 * time.Second}, loaded)
	recheck, _ := Function.Sweep("recheck")
	assert.Equal(t, "*/10 * * * * *", recheck.ScheduleOf(loaded))

	defaults, err := function.LoadConfig(Function, function.ComponentConfigs{})
	require.NoError(t, err)
	cfg := defaults.(*Config)
	assert.False(t, cfg.CriticalComponentsEnabled || cfg.AgentReconciliationDelayEnabled, "off unless configured")
	assert.True(t, recheck.Off(cfg))
	assert.Equal(t, "*/10 * * * * *", recheck.ScheduleOf(cfg))

	// GRM refuses to start with a minimum above the maximum.
	_, err = newAgentReconciliationDelay(function.Deps{Config: &Config{AgentReconciliationDelayEnabled: true, MinDelay: time.Minute, MaxDelay: time.Second}})
	assert.Error(t, err)
}

func event(t *testing.T, obj runtime.Object, created, deleted bool) function.Event {
	t.Helper()
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	require.NoError(t, err)
	u := &unstructured.Unstructured{Object: content}
	return function.Event{Cluster: function.Target, Key: function.Key{Namespace: u.GetNamespace(), Name: u.GetName()}, Created: created, Deleted: deleted, Object: u}
}

func TestPredicates(t *testing.T) {
	tainted := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "node.gardener.cloud/critical-components-not-ready", Effect: corev1.TaintEffectNoSchedule}}}}
	assert.True(t, TaintedNode(event(t, tainted, true, false)))
	assert.True(t, TaintedNode(event(t, tainted, false, false)))
	assert.False(t, TaintedNode(event(t, tainted, false, true)), "a deleted Node has no taint to remove")
	assert.False(t, TaintedNode(event(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, false, false)))

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "p"}, Spec: corev1.PodSpec{NodeName: "n1"},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}}}
	assert.False(t, CriticalPodMayUnblock(event(t, pod, false, false)), "a pod that is not ready blocks")
	assert.True(t, CriticalPodMayUnblock(event(t, pod, false, true)), "a pod gone no longer blocks")
	pod.Status.Conditions[0].Status = corev1.ConditionTrue
	ready := event(t, pod, false, false)
	assert.True(t, CriticalPodMayUnblock(ready))
	keys, err := MapPodToNode(t.Context(), nil, ready)
	require.NoError(t, err)
	assert.Equal(t, []function.Key{{Name: "n1"}}, keys)
	pod.Namespace = "default"
	assert.False(t, CriticalPodMayUnblock(event(t, pod, false, false)), "Gardener looks at kube-system only")
	pod.Namespace, pod.Spec.NodeName = "kube-system", ""
	assert.False(t, CriticalPodMayUnblock(event(t, pod, false, false)), "not scheduled yet")

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	assert.True(t, NodeAddedOrRemoved(event(t, node, true, false)))
	assert.True(t, NodeAddedOrRemoved(event(t, node, false, true)))
	assert.False(t, NodeAddedOrRemoved(event(t, node, false, false)), "an update cannot change the order")
}
