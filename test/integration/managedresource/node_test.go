package managedresource_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/node"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/tenanttest"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

const (
	criticalTaint = "node.gardener.cloud/critical-components-not-ready"
	criticalLabel = "node.gardener.cloud/critical-component"
	delayKey      = "node-agent.gardener.cloud/reconciliation-delay"
)

func nodeConfig() *node.Config {
	return &node.Config{CriticalComponentsEnabled: true, CriticalComponentsBackoff: 10 * time.Second,
		AgentReconciliationDelayEnabled: true, MinDelay: 5 * time.Second, MaxDelay: 30 * time.Second}
}

// clearNodes deletes every Node, critical pod and DaemonSet of kube-system of the shoot, now and
// when the test ends: Nodes are cluster-scoped, and the delays are spread over all of them.
func clearNodes(t testing.TB, shoot *testenv.Env) {
	t.Helper()
	ctx := context.Background()
	clear := func() {
		require.NoError(t, shoot.Client.DeleteAllOf(ctx, &corev1.Node{}))
		require.NoError(t, shoot.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(metav1.NamespaceSystem), client.MatchingLabels{criticalLabel: "true"}, client.GracePeriodSeconds(0)))
		require.NoError(t, shoot.Client.DeleteAllOf(ctx, &appsv1.DaemonSet{}, client.InNamespace(metav1.NamespaceSystem), client.MatchingLabels{criticalLabel: "true"}))
		require.NoError(t, shoot.Client.DeleteAllOf(ctx, &storagev1.CSINode{}))
	}
	clear()
	t.Cleanup(clear)
}

// taintedNode creates a Node as kubelet registers it on a shoot: with the critical components
// taint, and another one.
func taintedNode(t testing.TB, shoot *testenv.Env, name string) *corev1.Node {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{
		{Key: criticalTaint, Effect: corev1.TaintEffectNoSchedule},
		{Key: "example.com/other", Effect: corev1.TaintEffectNoSchedule},
	}}}
	require.NoError(t, shoot.Client.Create(context.Background(), n))
	return n
}

// criticalDaemonSet creates a node-critical DaemonSet in kube-system that tolerates everything.
func criticalDaemonSet(t testing.TB, shoot *testenv.Env, name string) *appsv1.DaemonSet {
	t.Helper()
	labels := map[string]string{criticalLabel: "true", "app": name}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: name, Labels: labels},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				Containers:  []corev1.Container{{Name: "main", Image: "busybox"}},
				Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			}},
		},
	}
	require.NoError(t, shoot.Client.Create(context.Background(), ds))
	return ds
}

// criticalPod creates a node-critical pod on the Node (of the DaemonSet, when given), not ready.
func criticalPod(t testing.TB, shoot *testenv.Env, name, nodeName string, ds *appsv1.DaemonSet, annotations map[string]string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: name, Labels: map[string]string{criticalLabel: "true"}, Annotations: annotations},
		Spec:       corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
	}
	if ds != nil {
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: ptr.To(true)}}
	}
	require.NoError(t, shoot.Client.Create(context.Background(), pod))
	setReady(t, shoot, pod, false)
	return pod
}

// setReady writes the pod's Ready condition, as kubelet would.
func setReady(t testing.TB, shoot *testenv.Env, pod *corev1.Pod, ready bool) {
	t.Helper()
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	require.NoError(t, shoot.Client.Status().Update(context.Background(), pod))
}

// untainted says that the Node lost the critical components taint and kept the others.
func untainted(t testing.TB, shoot *testenv.Env, name string) bool {
	t.Helper()
	keys := taints(t, shoot, name)
	return !slices.Contains(keys, criticalTaint) && slices.Contains(keys, "example.com/other")
}

func taints(t testing.TB, shoot *testenv.Env, name string) []string {
	t.Helper()
	n := &corev1.Node{}
	require.NoError(t, shoot.Client.Get(context.Background(), client.ObjectKey{Name: name}, n))
	var keys []string
	for _, taint := range n.Spec.Taints {
		keys = append(keys, taint.Key)
	}
	return keys
}

// The taint stays while a node-critical pod on the Node is not ready, a DaemonSet has no pod there
// or a CSI driver a pod waits for is not registered, and goes (alone) on the event that makes the
// last of them ready; an event that cannot unblock the Node costs nothing.
func TestNodeCriticalComponents(t *testing.T) {
	ctx := context.Background()
	clearNodes(t, shootA)
	h := functiontest.New(t, seed, node.Function, functiontest.AsFunction(), functiontest.WithTarget(shootA), functiontest.WithConfig(nodeConfig()))
	n := taintedNode(t, shootA, "worker-1")
	agent := criticalDaemonSet(t, shootA, "agent")
	csi := criticalDaemonSet(t, shootA, "csi-driver-node")
	agentPod := criticalPod(t, shootA, "agent-1", n.Name, agent, nil)
	h.SendTarget("add", n, "")
	assert.Contains(t, taints(t, shootA, n.Name), criticalTaint, "agent not ready, csi-driver-node not scheduled")

	h.TargetCounter.Reset()
	h.SendTarget("update", agentPod, "")
	assert.Zero(t, h.TargetCounter.Total(""), "a pod that is not ready cannot unblock: filtered on the event")

	setReady(t, shootA, agentPod, true)
	h.SendTarget("update", agentPod, "")
	assert.Contains(t, taints(t, shootA, n.Name), criticalTaint, "csi-driver-node has no pod on the Node")

	csiPod := criticalPod(t, shootA, "csi-driver-node-1", n.Name, csi, map[string]string{"node.gardener.cloud/wait-for-csi-node-example": "csi.example.com"})
	setReady(t, shootA, csiPod, true)
	h.SendTarget("update", csiPod, "")
	assert.Contains(t, taints(t, shootA, n.Name), criticalTaint, "the driver is not registered in a CSINode")

	csiNode := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: n.Name}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: "other.example.com", NodeID: "x"}}}}
	require.NoError(t, shootA.Client.Create(ctx, csiNode))
	h.SendTarget("add", csiNode, "")
	assert.Contains(t, taints(t, shootA, n.Name), criticalTaint, "another driver")

	csiNode.Spec.Drivers = append(csiNode.Spec.Drivers, storagev1.CSINodeDriver{Name: "csi.example.com", NodeID: "x"})
	require.NoError(t, shootA.Client.Update(ctx, csiNode))
	h.SendTarget("update", csiNode, "")
	assert.True(t, untainted(t, shootA, n.Name), "all ready: only the taint goes")
}

// A lost event: the sweep (every backoff) finds the tainted Node ready and removes the taint. The
// critical pods and DaemonSets are listed once a tainted Node is reconciled, a CSINode read only
// where a pod waits for a driver; a sweep with nothing tainted lists the Nodes alone.
func TestNodeCriticalComponentsSweep(t *testing.T) {
	clearNodes(t, shootA)
	h := functiontest.New(t, seed, node.Function, functiontest.WithTarget(shootA), functiontest.WithConfig(nodeConfig()))
	ready := taintedNode(t, shootA, "worker-ready")
	blocked := taintedNode(t, shootA, "worker-blocked")
	setReady(t, shootA, criticalPod(t, shootA, "proxy-ready", ready.Name, nil, nil), true)
	criticalPod(t, shootA, "proxy-blocked", blocked.Name, nil, nil)
	waiting := taintedNode(t, shootA, "worker-waiting-for-csi")
	setReady(t, shootA, criticalPod(t, shootA, "csi-waiting", waiting.Name, nil, map[string]string{"node.gardener.cloud/wait-for-csi-node-example": "csi.example.com"}), true)

	h.TargetCounter.Reset()
	h.Sweep("recheck")
	assert.True(t, untainted(t, shootA, ready.Name))
	assert.Contains(t, taints(t, shootA, blocked.Name), criticalTaint)
	assert.Contains(t, taints(t, shootA, waiting.Name), criticalTaint, "no CSINode registers the driver")
	assert.Equal(t, 3, h.TargetCounter.Total("list"), "Nodes; critical pods and DaemonSets once, for the three tainted Nodes")
	assert.Equal(t, 1, h.TargetCounter.Total("patch"))
	assert.Equal(t, 1, h.TargetCounter.Total("get"), "the one CSINode a pod waits for; no request per Node")

	require.NoError(t, shootA.Client.Delete(context.Background(), blocked))
	require.NoError(t, shootA.Client.Delete(context.Background(), waiting))
	h.TargetCounter.Reset()
	h.Sweep("recheck")
	assert.Equal(t, 1, h.TargetCounter.Total(""), "nothing tainted: the Nodes' LIST alone")
}

func delays(t testing.TB, shoot *testenv.Env) map[string]string {
	t.Helper()
	list := &corev1.NodeList{}
	require.NoError(t, shoot.Client.List(context.Background(), list))
	out := map[string]string{}
	for _, n := range list.Items {
		out[n.Name] = n.Annotations[delayKey]
	}
	return out
}

func plainNodes(t testing.TB, shoot *testenv.Env, names ...string) []*corev1.Node {
	t.Helper()
	var out []*corev1.Node
	for _, name := range names {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		require.NoError(t, shoot.Client.Create(context.Background(), n))
		out = append(out, n)
	}
	return out
}

// One Node's event spreads the delays of all Nodes over [min, max] by their order (Gardener's
// values); a Node gone shifts them; a worker pool with serial reconciliation is left out, which the
// sweep catches; a sweep with every delay right writes nothing.
func TestNodeAgentReconciliationDelay(t *testing.T) {
	ctx := context.Background()
	clearNodes(t, shootA)
	h := functiontest.New(t, seed, node.Function, functiontest.AsFunction(), functiontest.WithTarget(shootA), functiontest.WithConfig(nodeConfig()))
	var names []string
	for i := range 10 {
		names = append(names, fmt.Sprintf("pool-%02d", i))
	}
	nodes := plainNodes(t, shootA, names...)
	h.SendTarget("add", nodes[9], "")
	want := map[string]string{}
	for i, d := range []string{"5s", "7.5s", "10s", "12.5s", "15s", "17.5s", "20s", "22.5s", "25s", "27.5s"} {
		want[names[i]] = d
	}
	assert.Equal(t, want, delays(t, shootA))

	h.TargetCounter.Reset()
	h.SendTarget("update", nodes[0], "")
	assert.Zero(t, h.TargetCounter.Total(""), "an update cannot change the order: filtered")

	require.NoError(t, shootA.Client.Delete(ctx, nodes[0]))
	h.SendTarget("delete", nodes[0], "")
	got := delays(t, shootA)
	assert.Equal(t, "5s", got["pool-01"])
	assert.Equal(t, "7.777777777s", got["pool-02"])
	assert.Equal(t, "27.222222222s", got["pool-09"])

	// pool-08 and pool-09 join a worker pool whose node agents reconcile serially; the events of
	// their labels are dropped, the sweep converges.
	serial := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: "gardener-node-agent-serial",
		Labels:      map[string]string{"gardener.cloud/role": "operating-system-config"},
		Annotations: map[string]string{"reconciliation.osc.node-agent.gardener.cloud/serial": "true"}}}
	require.NoError(t, shootA.Client.Create(ctx, serial))
	t.Cleanup(func() { _ = shootA.Client.Delete(ctx, serial) })
	for _, n := range nodes[8:] {
		require.NoError(t, shootA.Client.Get(ctx, client.ObjectKeyFromObject(n), n))
		n.Labels = map[string]string{"worker.gardener.cloud/gardener-node-agent-secret-name": serial.Name}
		require.NoError(t, shootA.Client.Update(ctx, n))
	}
	before := got
	h.Sweep("delays")
	got = delays(t, shootA)
	assert.Equal(t, "5s", got["pool-01"])
	assert.Equal(t, "26.428571428s", got["pool-07"], "7 Nodes share the range")
	assert.Equal(t, before["pool-08"], got["pool-08"], "left out: its annotation stays as it was")

	h.TargetCounter.Reset()
	h.Sweep("delays")
	assert.Equal(t, 3, h.TargetCounter.Total(""), "kube-system, Nodes, Secrets: no write")
}

// setShoot puts a Shoot with the annotations into the tenant's Cluster in the seed, as gardenlet
// does, until the test ends.
func setShoot(t testing.TB, tn tenant.Name, annotations map[string]string) {
	t.Helper()
	shoot := tenanttest.Shoot(tn)
	shoot.Annotations = annotations
	setShootObject(t, tn, shoot)
}

// Per seed, each shoot's maximum delay is its Shoot's annotation (gardenlet's: 300s without it),
// each event acts on its own tenant's Nodes, and the sweep on every tenant's; the taint goes per
// tenant too. As the function's ServiceAccount: its RBAC suffices.
func TestNodePerSeed(t *testing.T) {
	ctx := context.Background()
	clearNodes(t, shootA)
	clearNodes(t, shootB)
	setShoot(t, tenantA, map[string]string{"shoot.gardener.cloud/cloud-config-execution-max-delay-seconds": "60"})
	setShoot(t, tenantB, nil)
	cfg := nodeConfig()
	cfg.MinDelay = 0
	h := functiontest.New(t, seed, node.Function, functiontest.AsFunction(), functiontest.WithTenants(), functiontest.WithConfig(cfg))
	a := plainNodes(t, shootA, "a-0", "a-1", "a-2")
	plainNodes(t, shootB, "b-0", "b-1")
	h.SendTarget("add", a[0], tenantA)
	assert.Equal(t, map[string]string{"a-0": "0s", "a-1": "20s", "a-2": "40s"}, delays(t, shootA))
	assert.Equal(t, map[string]string{"b-0": "", "b-1": ""}, delays(t, shootB), "tenant A's event leaves tenant B alone")

	h.Sweep("delays")
	assert.Equal(t, map[string]string{"b-0": "0s", "b-1": "2m30s"}, delays(t, shootB), "no annotation: gardenlet's 300s")

	// A maximum gardenlet would not accept (and so deploy no GRM with): nothing is written. A
	// tenant's settings are read with its client (a new process here; a running one reads them
	// again within TENANT_CACHE_TTL).
	setShoot(t, tenantA, map[string]string{"shoot.gardener.cloud/cloud-config-execution-max-delay-seconds": "soon"})
	h = functiontest.New(t, seed, node.Function, functiontest.AsFunction(), functiontest.WithTenants(), functiontest.WithConfig(cfg))
	plainNodes(t, shootA, "a-3")
	code, body := h.Post(h.TargetEvent("add", a[0], tenantA))
	assert.Equal(t, http.StatusOK, code, body)
	assert.Empty(t, delays(t, shootA)["a-3"])

	n := taintedNode(t, shootB, "b-tainted")
	pod := criticalPod(t, shootB, "b-proxy", n.Name, nil, nil)
	h.SendTarget("add", n, tenantB)
	assert.Contains(t, taints(t, shootB, n.Name), criticalTaint)
	setReady(t, shootB, pod, true)
	h.SendTarget("update", pod, tenantB)
	assert.True(t, untainted(t, shootB, n.Name))
	require.NoError(t, shootA.Client.Get(ctx, client.ObjectKey{Name: "a-0"}, &corev1.Node{}))
}

// BenchmarkNodeTaintRemoval is the latency from the last node-critical pod's readiness to the
// taint's removal: its status written, its event handled (the Node's pods read, the Node
// patched), the Node read back without the taint. The event source's delivery is not included
// (BenchmarkTargetEventLatency measures it).
func BenchmarkNodeTaintRemoval(b *testing.B) {
	clearNodes(b, shootA)
	h := functiontest.New(b, seed, node.Function, functiontest.WithTarget(shootA), functiontest.WithConfig(nodeConfig()))
	agent := criticalDaemonSet(b, shootA, "agent")
	var latencies []time.Duration
	i := 0
	for b.Loop() {
		b.StopTimer()
		// A Node with two ready node-critical pods, and the DaemonSet's pod about to become ready.
		n := taintedNode(b, shootA, fmt.Sprintf("bench-%d", i))
		setReady(b, shootA, criticalPod(b, shootA, fmt.Sprintf("proxy-%d", i), n.Name, nil, nil), true)
		setReady(b, shootA, criticalPod(b, shootA, fmt.Sprintf("csi-%d", i), n.Name, nil, nil), true)
		last := criticalPod(b, shootA, fmt.Sprintf("agent-%d", i), n.Name, agent, nil)
		i++
		b.StartTimer()
		start := time.Now()
		setReady(b, shootA, last, true)
		h.SendTarget("update", last, "")
		require.NotContains(b, taints(b, shootA, n.Name), criticalTaint)
		latencies = append(latencies, time.Since(start))
	}
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	b.ReportMetric(float64(latencies[len(latencies)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(latencies[len(latencies)*99/100].Microseconds())/1000, "p99-ms")
}
