package criticalcomponents

import (
	"testing"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

const critical = "node.gardener.cloud/critical-component"

func taintedNode() *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"pool": "a"}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{
			{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoExecute},
			{Key: Taint, Effect: corev1.TaintEffectNoSchedule},
			{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoExecute},
		}},
	}
}

// daemonSet is a node-critical DaemonSet that tolerates the taint, as Gardener's do.
func daemonSet(name string, mutate ...func(*appsv1.DaemonSet)) appsv1.DaemonSet {
	ds := appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{critical: "true"}},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{critical: "true"}},
			Spec:       corev1.PodSpec{Tolerations: []corev1.Toleration{{Key: Taint, Operator: corev1.TolerationOpExists}}},
		}},
	}
	for _, m := range mutate {
		m(&ds)
	}
	return ds
}

func pod(name string, ready bool, owner *appsv1.DaemonSet) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name}}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: status}}
	if owner != nil {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: owner.Name, UID: owner.UID, Controller: ptr.To(true)}}
	}
	return p
}

func TestTaint(t *testing.T) {
	node := taintedNode()
	assert.True(t, HasTaint(node))
	RemoveTaint(node)
	assert.False(t, HasTaint(node))
	assert.Equal(t, []corev1.Taint{{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoExecute}, {Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoExecute}}, node.Spec.Taints, "the others stay, in order")
	only := &corev1.Node{Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: Taint, Effect: corev1.TaintEffectNoSchedule}}}}
	RemoveTaint(only)
	assert.Nil(t, only.Spec.Taints)
}

func TestDecide(t *testing.T) {
	node := taintedNode()
	agent, proxy := daemonSet("agent"), daemonSet("proxy")
	ready := []corev1.Pod{pod("agent-x", true, &agent), pod("proxy-x", true, &proxy)}
	assert.True(t, Decide(node, []appsv1.DaemonSet{agent, proxy}, ready, nil).None(), "every DaemonSet has a ready pod")

	b := Decide(node, []appsv1.DaemonSet{agent, proxy}, ready[:1], nil)
	assert.Equal(t, []types.NamespacedName{{Namespace: "kube-system", Name: "proxy"}}, b.UnscheduledDaemonSets, "proxy has no pod on the Node yet")

	b = Decide(node, []appsv1.DaemonSet{agent, proxy}, []corev1.Pod{ready[0], pod("proxy-x", false, &proxy)}, nil)
	assert.Equal(t, []types.NamespacedName{{Namespace: "kube-system", Name: "proxy-x"}}, b.UnreadyPods)
	assert.Empty(t, b.UnscheduledDaemonSets)

	noCondition := pod("bare", true, nil)
	noCondition.Status.Conditions = nil
	assert.Len(t, Decide(node, nil, []corev1.Pod{noCondition}, nil).UnreadyPods, 1, "no Ready condition: not ready")

	// A pod of another API version's DaemonSet does not count as the DaemonSet's.
	old := pod("agent-y", true, &agent)
	old.OwnerReferences[0].APIVersion = "extensions/v1beta1"
	assert.Len(t, Decide(node, []appsv1.DaemonSet{agent}, []corev1.Pod{old}, nil).UnscheduledDaemonSets, 1)

	// DaemonSets that need not run on the Node do not block.
	skipped := []appsv1.DaemonSet{
		daemonSet("template-not-critical", func(ds *appsv1.DaemonSet) { ds.Spec.Template.Labels = nil }),
		daemonSet("intolerant", func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.Tolerations = nil }),
		daemonSet("other-pool", func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.NodeSelector = map[string]string{"pool": "b"} }),
		daemonSet("other-node", func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.NodeName = "n2" }),
	}
	assert.True(t, Decide(node, skipped, nil, nil).None())
}

func TestCSIDrivers(t *testing.T) {
	node := taintedNode()
	p := pod("csi", true, nil)
	p.Annotations = map[string]string{"node.gardener.cloud/wait-for-csi-node-a": "a.csi.example.com", "node.gardener.cloud/wait-for-csi-node-b": "b.csi.example.com", "other": "x"}
	pods := []corev1.Pod{p}
	assert.Equal(t, map[string]bool{"a.csi.example.com": true, "b.csi.example.com": true}, RequiredDrivers(pods))
	assert.Equal(t, []string{"a.csi.example.com", "b.csi.example.com"}, Decide(node, nil, pods, nil).MissingDrivers, "no CSINode: every driver missing")
	csiNode := &storagev1.CSINode{Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: "a.csi.example.com"}}}}
	assert.Equal(t, []string{"b.csi.example.com"}, Decide(node, nil, pods, csiNode).MissingDrivers)
	csiNode.Spec.Drivers = append(csiNode.Spec.Drivers, storagev1.CSINodeDriver{Name: "b.csi.example.com"})
	assert.True(t, Decide(node, nil, pods, csiNode).None())
}

// The DaemonSet controller's rules for where a daemon pod should run.
func TestShouldRunDaemonPod(t *testing.T) {
	node := taintedNode()
	affinity := func(terms ...corev1.NodeSelectorTerm) func(*appsv1.DaemonSet) {
		return func(ds *appsv1.DaemonSet) {
			ds.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms},
			}}
		}
	}
	expr := func(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
	}
	for name, c := range map[string]struct {
		mutate func(*appsv1.DaemonSet)
		want   bool
	}{
		"tolerates the taint (and the NoExecute ones by default)": {func(*appsv1.DaemonSet) {}, true},
		"toleration of another effect": {func(ds *appsv1.DaemonSet) {
			ds.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: Taint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}
		}, false},
		"toleration by value": {func(ds *appsv1.DaemonSet) {
			ds.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: Taint, Value: ""}}
		}, true},
		"Gt needs a feature gate": {func(ds *appsv1.DaemonSet) {
			ds.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: Taint, Operator: corev1.TolerationOpGt, Value: "-1"}}
		}, false},
		"node selector fits":             {func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.NodeSelector = map[string]string{"pool": "a"} }, true},
		"expression fits":                {affinity(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{expr("pool", corev1.NodeSelectorOpIn, "a", "b")}}), true},
		"expression does not fit":        {affinity(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{expr("pool", corev1.NodeSelectorOpNotIn, "a")}}), false},
		"field fits":                     {affinity(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{expr("metadata.name", corev1.NodeSelectorOpIn, "n1")}}), true},
		"field of another node":          {affinity(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{expr("metadata.name", corev1.NodeSelectorOpIn, "n2")}}), false},
		"field with two values is void":  {affinity(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{expr("metadata.name", corev1.NodeSelectorOpIn, "n1", "n2")}}), false},
		"only empty terms match nothing": {affinity(corev1.NodeSelectorTerm{}), false},
		"no terms match nothing":         {affinity(), false},
		"a void term, then one that fits": {affinity(
			corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{expr("pool", "Near", "a")}},
			corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{expr("pool", corev1.NodeSelectorOpExists)}},
		), true},
		"Gt on labels": {affinity(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{expr("pool", corev1.NodeSelectorOpGt, "1")}}), false},
	} {
		ds := daemonSet("ds", c.mutate)
		assert.Equal(t, c.want, ShouldRunDaemonPod(node, &ds), name)
	}

	// Network-unavailable is tolerated only by host-network pods.
	unavailable := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n3"}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: corev1.TaintNodeNetworkUnavailable, Effect: corev1.TaintEffectNoSchedule}}}}
	ds := daemonSet("ds")
	assert.False(t, ShouldRunDaemonPod(unavailable, &ds))
	ds.Spec.Template.Spec.HostNetwork = true
	assert.True(t, ShouldRunDaemonPod(unavailable, &ds))
	// PreferNoSchedule taints do not matter.
	soft := &corev1.Node{Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "x", Effect: corev1.TaintEffectPreferNoSchedule}}}}
	ds.Spec.Template.Spec.Tolerations = nil
	assert.True(t, ShouldRunDaemonPod(soft, &ds))
}

func TestProjectPod(t *testing.T) {
	agent := daemonSet("agent")
	p := pod("agent-x", true, &agent)
	p.Labels = map[string]string{critical: "true", "app": "agent"}
	p.Annotations = map[string]string{"node.gardener.cloud/wait-for-csi-node-a": "a", "big": "x"}
	p.Spec.NodeName = "n1"
	p.Spec.Containers = []corev1.Container{{Name: "c", Image: "i"}}
	projected := ProjectPod(&p).(*corev1.Pod)
	assert.Equal(t, []string{"n1"}, IndexPodNodeName(&p))
	assert.Equal(t, map[string]string{"node.gardener.cloud/wait-for-csi-node-a": "a"}, projected.Annotations)
	assert.Empty(t, projected.Spec.Containers)
	assert.Equal(t, Decide(taintedNode(), []appsv1.DaemonSet{agent}, []corev1.Pod{p}, nil), Decide(taintedNode(), []appsv1.DaemonSet{agent}, []corev1.Pod{*projected}, nil), "the projection decides as the pod")
	assert.Nil(t, IndexPodNodeName(&corev1.Pod{}))
}
