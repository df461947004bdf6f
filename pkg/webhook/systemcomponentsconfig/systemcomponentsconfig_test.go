package systemcomponentsconfig

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"

	rmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubernetesscheme "k8s.io/client-go/kubernetes/scheme"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gardener-knative/gardener-knative/pkg/webhook"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/webhooktest"
)

const systemLabel = "worker.gardener.cloud/system-components"

// config is what Gardener configures for a shoot, with a custom system-component taint.
func config() rmv1alpha1.SystemComponentsConfigWebhookConfig {
	return rmv1alpha1.SystemComponentsConfigWebhookConfig{
		Enabled:         true,
		NodeSelector:    map[string]string{systemLabel: "true"},
		PodNodeSelector: map[string]string{systemLabel: "true"},
		PodTolerations:  []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "system", Effect: corev1.TaintEffectNoSchedule}},
	}
}

func node(name string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{Taints: taints}}
}

// nodes: two system-component Nodes, one with a new taint (as during a shoot reconciliation
// that changes the workers' taints) and Kubernetes' and the cluster-autoscaler's own taints,
// and a worker Node whose taint is none of the system components' business.
func nodes() []client.Object {
	system := map[string]string{systemLabel: "true"}
	return []client.Object{
		node("system-old", system, corev1.Taint{Key: "dedicated", Value: "system", Effect: corev1.TaintEffectNoSchedule}),
		node("system-new", system,
			corev1.Taint{Key: "dedicated", Value: "system", Effect: corev1.TaintEffectNoSchedule},
			corev1.Taint{Key: "new-taint", Effect: corev1.TaintEffectNoExecute},
			corev1.Taint{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoExecute},
			corev1.Taint{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule},
			corev1.Taint{Key: "node.cloudprovider.kubernetes.io/uninitialized", Value: "true", Effect: corev1.TaintEffectNoSchedule},
			corev1.Taint{Key: ToBeDeletedByClusterAutoscaler, Value: "1700000000", Effect: corev1.TaintEffectNoSchedule},
		),
		node("worker", map[string]string{"pool": "worker"}, corev1.Taint{Key: "gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}),
	}
}

func target(objs ...client.Object) client.WithWatch {
	return fake.NewClientBuilder().WithScheme(kubernetesscheme.Scheme).WithObjects(objs...).Build()
}

func pod() *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "coredns-abc", Namespace: "kube-system", Labels: map[string]string{"resources.gardener.cloud/managed-by": "gardener"}},
		Spec: corev1.PodSpec{
			Containers:   []corev1.Container{{Name: "main"}},
			NodeSelector: map[string]string{"kubernetes.io/os": "linux"},
			Tolerations:  []corev1.Toleration{{Key: "CriticalAddonsOnly", Operator: corev1.TolerationOpExists}},
		},
	}
}

func handler(c client.Reader, cfg rmv1alpha1.SystemComponentsConfigWebhookConfig) admission.Handler {
	h, err := Handler(c, cfg, testclock.NewFakePassiveClock(time.Unix(0, 0)), DefaultNodeCacheTTL)
	if err != nil {
		panic(err)
	}
	return h
}

func review(t *testing.T, h admission.Handler, p *corev1.Pod) (*corev1.Pod, admission.Response) {
	t.Helper()
	out := &corev1.Pod{}
	resp := webhooktest.Mutate(t, h, webhooktest.Request(t, admissionv1.Create, p, nil), out)
	return out, resp
}

func TestAddsNodeSelectorAndTolerations(t *testing.T) {
	out, _ := review(t, handler(target(nodes()...), config()), pod())

	assert.Equal(t, map[string]string{"kubernetes.io/os": "linux", systemLabel: "true"}, out.Spec.NodeSelector)
	assert.Equal(t, []corev1.Toleration{
		{Key: "CriticalAddonsOnly", Operator: corev1.TolerationOpExists},                                              // the Pod's own
		{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "system", Effect: corev1.TaintEffectNoSchedule}, // configured, and on both Nodes
		{Key: "new-taint", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},                  // only on the new Node
	}, out.Spec.Tolerations)
}

func TestConfiguredNodeSelectorWinsOverThePods(t *testing.T) {
	p := pod()
	p.Spec.NodeSelector = map[string]string{systemLabel: "false"}
	out, _ := review(t, handler(target(nodes()...), config()), p)
	assert.Equal(t, map[string]string{systemLabel: "true"}, out.Spec.NodeSelector)
}

func TestPodWithoutSelectorOrTolerations(t *testing.T) {
	p := pod()
	p.Spec.NodeSelector, p.Spec.Tolerations = nil, nil
	out, _ := review(t, handler(target(nodes()...), config()), p)
	assert.Equal(t, map[string]string{systemLabel: "true"}, out.Spec.NodeSelector)
	assert.Len(t, out.Spec.Tolerations, 2)
}

// Tolerations are semantically deduplicated, tolerationSeconds included.
func TestTolerationsAreDistinct(t *testing.T) {
	p := pod()
	p.Spec.Tolerations = []corev1.Toleration{
		{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "system", Effect: corev1.TaintEffectNoSchedule},
		{Key: "x", Operator: corev1.TolerationOpExists, TolerationSeconds: ptr.To[int64](60)},
	}
	cfg := config()
	cfg.PodTolerations = append(cfg.PodTolerations,
		corev1.Toleration{Key: "x", Operator: corev1.TolerationOpExists, TolerationSeconds: ptr.To[int64](60)},
		corev1.Toleration{Key: "x", Operator: corev1.TolerationOpExists, TolerationSeconds: ptr.To[int64](30)},
	)
	out, _ := review(t, handler(target(nodes()...), cfg), p)
	assert.Equal(t, []corev1.Toleration{
		{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "system", Effect: corev1.TaintEffectNoSchedule},
		{Key: "x", Operator: corev1.TolerationOpExists, TolerationSeconds: ptr.To[int64](60)},
		{Key: "x", Operator: corev1.TolerationOpExists, TolerationSeconds: ptr.To[int64](30)},
		{Key: "new-taint", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	}, out.Spec.Tolerations)
}

// Without a node selector every Node counts, as in Gardener.
func TestEmptyNodeSelectorConsidersAllNodes(t *testing.T) {
	cfg := config()
	cfg.NodeSelector = nil
	out, _ := review(t, handler(target(nodes()...), cfg), pod())
	assert.Contains(t, out.Spec.Tolerations, corev1.Toleration{Key: "gpu", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule})
}

func TestNoNodesNoConfigNoPatch(t *testing.T) {
	_, resp := review(t, handler(target(), rmv1alpha1.SystemComponentsConfigWebhookConfig{Enabled: true}), pod())
	assert.Empty(t, resp.Patches)
}

func TestSkipped(t *testing.T) {
	for name, change := range map[string]func(*corev1.Pod){
		"skip label": func(p *corev1.Pod) {
			p.Labels["system-components-config.resources.gardener.cloud/skip"] = "true"
		},
		"DaemonSet Pod": func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", UID: "1", Controller: ptr.To(true)}}
		},
	} {
		t.Run(name, func(t *testing.T) {
			p := pod()
			change(p)
			_, resp := review(t, handler(target(nodes()...), config()), p)
			assert.Empty(t, resp.Patches)
		})
	}
}

// Only a DaemonSet that controls the Pod makes it a DaemonSet Pod.
func TestNotDaemonSetPods(t *testing.T) {
	for name, ref := range map[string]metav1.OwnerReference{
		"ReplicaSet":              {APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "1", Controller: ptr.To(true)},
		"DaemonSet not the owner": {APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", UID: "1"},
		"other group DaemonSet":   {APIVersion: "extensions/v1beta1", Kind: "DaemonSet", Name: "ds", UID: "1", Controller: ptr.To(true)},
	} {
		t.Run(name, func(t *testing.T) {
			p := pod()
			p.OwnerReferences = []metav1.OwnerReference{ref}
			_, resp := review(t, handler(target(nodes()...), config()), p)
			assert.NotEmpty(t, resp.Patches)
		})
	}
}

func TestNodeListErrorRejects(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(kubernetesscheme.Scheme).WithInterceptorFuncs(interceptor.Funcs{
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return errors.New("apiserver down")
		},
	}).Build()
	resp := handler(c, config()).Handle(context.Background(), webhooktest.Request(t, admissionv1.Create, pod(), nil))
	assert.False(t, resp.Allowed)
	assert.Contains(t, resp.Result.Message, "apiserver down")
}

// The Nodes are listed once per TTL, not once per Pod; a Node tainted in between is seen
// once the TTL has passed.
func TestNodesAreCachedForTheTTL(t *testing.T) {
	var lists atomic.Int64
	c := fake.NewClientBuilder().WithScheme(kubernetesscheme.Scheme).WithObjects(nodes()...).WithInterceptorFuncs(interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			lists.Add(1)
			return c.List(ctx, list, opts...)
		},
	}).Build()
	clk := testclock.NewFakePassiveClock(time.Unix(0, 0))
	h, err := Handler(c, config(), clk, DefaultNodeCacheTTL)
	require.NoError(t, err)

	review(t, h, pod())
	n := &corev1.Node{}
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Name: "system-old"}, n))
	n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "later", Effect: corev1.TaintEffectNoSchedule})
	require.NoError(t, c.Update(context.Background(), n))
	later := corev1.Toleration{Key: "later", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}

	clk.SetTime(clk.Now().Add(DefaultNodeCacheTTL))
	out, _ := review(t, h, pod())
	assert.NotContains(t, out.Spec.Tolerations, later)
	assert.Equal(t, int64(1), lists.Load())

	// Another tenant's request reads its own cluster's Nodes, never the first tenant's entry.
	otherTenant := tenant.With(context.Background(), "shoot--other--cluster")
	resp := h.Handle(otherTenant, webhooktest.Request(t, admissionv1.Create, pod(), nil))
	require.True(t, resp.Allowed)
	assert.Equal(t, int64(2), lists.Load())

	clk.SetTime(clk.Now().Add(time.Nanosecond))
	out, _ = review(t, h, pod())
	assert.Contains(t, out.Spec.Tolerations, later)
	assert.Equal(t, int64(3), lists.Load())
}

func TestConstructor(t *testing.T) {
	cfg := &rmv1alpha1.ResourceManagerConfiguration{}
	assert.False(t, Webhook.Enabled(&componentconfig.ResourceManagerFile{ResourceManagerConfiguration: cfg}))
	cfg.Webhooks.SystemComponentsConfig = config()
	assert.True(t, Webhook.Enabled(&componentconfig.ResourceManagerFile{ResourceManagerConfiguration: cfg}))
	deps := webhook.Deps{Target: target(), Config: cfg, Clock: testclock.NewFakePassiveClock(time.Unix(0, 0)), Log: webhooktest.Log}

	wh, err := Webhook.New(deps)
	require.NoError(t, err)
	assert.Equal(t, Path, wh.Path)

	t.Setenv("SYSTEM_COMPONENTS_CONFIG_NODE_CACHE_TTL", "banana")
	_, err = Webhook.New(deps)
	assert.Error(t, err)

	_, err = WithNodeCacheTTL(-time.Second).New(deps)
	assert.Error(t, err)
	_, err = WithNodeCacheTTL(0).New(deps)
	assert.NoError(t, err)
}

func FuzzSystemComponentsConfig(f *testing.F) {
	h := handler(target(nodes()...), config())
	webhooktest.FuzzAdmission(f, webhook.Admission(Name, Path, h, webhooktest.Log),
		webhooktest.AdmissionReview(f, webhooktest.Request(f, admissionv1.Create, pod(), nil)))
}

// BenchmarkSystemComponentsConfig reviews a system-component Pod with the Nodes' taints
// cached, as for all but one Pod per TTL.
func BenchmarkSystemComponentsConfig(b *testing.B) {
	h := handler(target(nodes()...), config())
	req := webhooktest.Request(b, admissionv1.Create, pod(), nil)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if resp := h.Handle(ctx, req); len(resp.Patches) == 0 {
			b.Fatal("no patch")
		}
	}
}
