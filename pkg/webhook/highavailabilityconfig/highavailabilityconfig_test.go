package highavailabilityconfig

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"

	jsonpatch "github.com/evanphx/json-patch/v5"
	rmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubernetesscheme "k8s.io/client-go/kubernetes/scheme"
	testclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gardener-knative/gardener-knative/pkg/webhook"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/webhooktest"
)

const ns = "ns"

// testConfig is the component configuration's webhook section the tests run with.
var testConfig = rmv1alpha1.HighAvailabilityConfigWebhookConfig{
	Enabled:                             true,
	DefaultNotReadyTolerationSeconds:    new(int64(60)),
	DefaultUnreachableTolerationSeconds: new(int64(120)),
}

// newHandler serves a target cluster holding the Namespace "ns" with the given annotations
// and objs.
func newHandler(t testing.TB, annotations map[string]string, objs ...client.Object) admission.Handler {
	return newHandlerWith(t, testConfig, annotations, objs...)
}

func newHandlerWith(t testing.TB, cfg rmv1alpha1.HighAvailabilityConfigWebhookConfig, annotations map[string]string, objs ...client.Object) admission.Handler {
	t.Helper()
	namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Annotations: annotations}}
	// client-go's scheme, as the webhook server's clients have.
	c := fake.NewClientBuilder().WithScheme(kubernetesscheme.Scheme).WithObjects(append(objs, namespace)...).Build()
	return handlerFor(t, c, cfg)
}

// handlerFor serves target c with the default cache TTL on a clock that does not move.
func handlerFor(t testing.TB, c client.Reader, cfg rmv1alpha1.HighAvailabilityConfigWebhookConfig) admission.Handler {
	t.Helper()
	h, err := Handler(c, cfg, testclock.NewFakePassiveClock(time.Unix(0, 0)), DefaultCacheTTL, webhooktest.Log)
	require.NoError(t, err)
	return h
}

// nodes are n Nodes.
func nodes(n int) []client.Object {
	var out []client.Object
	for i := range n {
		out = append(out, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i)}})
	}
	return out
}

// annotations of the Namespace.
func failureTolerance(v string) map[string]string {
	return map[string]string{resourcesv1alpha1.HighAvailabilityConfigFailureToleranceType: v}
}

func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

var podLabels = map[string]string{"app": "web", "role": "frontend"}

func podTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
	}
}

func deployment(replicas *int32, labels, annotations map[string]string) *appsv1.Deployment {
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, Labels: labels, Annotations: annotations},
		Spec: appsv1.DeploymentSpec{
			Replicas: replicas,
			Selector: &metav1.LabelSelector{MatchLabels: podLabels},
			Template: podTemplate(),
		},
	}
}

// statefulSetSelector is narrower than the pod labels, as the selector of a StatefulSet may be.
var statefulSetSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}

func statefulSet(replicas *int32, labels, annotations map[string]string) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, Labels: labels, Annotations: annotations},
		Spec: appsv1.StatefulSetSpec{
			Replicas: replicas,
			Selector: statefulSetSelector.DeepCopy(),
			Template: podTemplate(),
		},
	}
}

func hpa(minReplicas *int32, maxReplicas int32, labels, annotations map[string]string) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{
		TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v2", Kind: "HorizontalPodAutoscaler"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, Labels: labels, Annotations: annotations},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "other"},
			MinReplicas:    minReplicas,
			MaxReplicas:    maxReplicas,
		},
	}
}

// scaling is an HPA that scales the workload of the given kind named "web".
func scaling(kind string, maxReplicas int32) *autoscalingv2.HorizontalPodAutoscaler {
	a := hpa(new(int32(1)), maxReplicas, nil, nil)
	a.Name = "scales-web"
	a.Spec.ScaleTargetRef = autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: kind, Name: "web"}
	return a
}

func typed(componentType string) map[string]string {
	return map[string]string{resourcesv1alpha1.HighAvailabilityConfigType: componentType}
}

// workloadKind builds and reads back one of the two workload kinds, so that a test covers both.
type workloadKind struct {
	kind     string
	new      func(replicas *int32, labels, annotations map[string]string) client.Object
	replicas func(client.Object) *int32
	template func(client.Object) corev1.PodTemplateSpec
}

var workloadKinds = []workloadKind{
	{
		kind:     "Deployment",
		new:      func(r *int32, l, a map[string]string) client.Object { return deployment(r, l, a) },
		replicas: func(o client.Object) *int32 { return o.(*appsv1.Deployment).Spec.Replicas },
		template: func(o client.Object) corev1.PodTemplateSpec { return o.(*appsv1.Deployment).Spec.Template },
	},
	{
		kind:     "StatefulSet",
		new:      func(r *int32, l, a map[string]string) client.Object { return statefulSet(r, l, a) },
		replicas: func(o client.Object) *int32 { return o.(*appsv1.StatefulSet).Spec.Replicas },
		template: func(o client.Object) corev1.PodTemplateSpec { return o.(*appsv1.StatefulSet).Spec.Template },
	},
}

// review sends obj as a CREATE and returns the object as patched, and the response.
func review[T client.Object](t testing.TB, h admission.Handler, obj T) (T, admission.Response) {
	t.Helper()
	out := obj.DeepCopyObject().(T)
	resetTo(out)
	resp := webhooktest.Mutate(t, h, webhooktest.Request(t, admissionv1.Create, obj, nil), out)
	return out, resp
}

// resetTo empties obj, so that decoding into it is not a merge with what it held.
func resetTo(obj client.Object) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		*o = appsv1.Deployment{}
	case *appsv1.StatefulSet:
		*o = appsv1.StatefulSet{}
	case *autoscalingv2.HorizontalPodAutoscaler:
		*o = autoscalingv2.HorizontalPodAutoscaler{}
	}
}

func TestOtherKindsAreAllowedUnchanged(t *testing.T) {
	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns}}
	resp := newHandler(t, nil).Handle(context.Background(), webhooktest.Request(t, admissionv1.Create, pod, nil))
	assert.True(t, resp.Allowed)
	assert.Empty(t, resp.Patches)
}

func TestUpdatesAreMutatedLikeCreates(t *testing.T) {
	old := deployment(new(int32(2)), typed("server"), nil)
	updated := deployment(new(int32(1)), typed("server"), nil)
	out := &appsv1.Deployment{}
	webhooktest.Mutate(t, newHandler(t, nil), webhooktest.Request(t, admissionv1.Update, updated, old), out)
	assert.Equal(t, new(int32(2)), out.Spec.Replicas, "scaling a server down to 1 is undone")
}

func TestMissingNamespaceIsAnError(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(kubernetesscheme.Scheme).Build()
	resp := handlerFor(t, c, testConfig).Handle(context.Background(), webhooktest.Request(t, admissionv1.Create, deployment(new(int32(1)), nil, nil), nil))
	assert.False(t, resp.Allowed)
	assert.EqualValues(t, http.StatusInternalServerError, resp.Result.Code)
}

func TestFailedReadsAreErrors(t *testing.T) {
	for _, list := range []string{"HorizontalPodAutoscalerList", "NodeList"} {
		t.Run(list, func(t *testing.T) {
			namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
			c := fake.NewClientBuilder().WithScheme(kubernetesscheme.Scheme).WithObjects(namespace).WithInterceptorFuncs(interceptor.Funcs{
				List: func(ctx context.Context, c client.WithWatch, l client.ObjectList, opts ...client.ListOption) error {
					if gvk, _ := c.GroupVersionKindFor(l); gvk.Kind == list {
						return errors.New("unavailable")
					}
					return c.List(ctx, l, opts...)
				},
			}).Build()
			resp := handlerFor(t, c, testConfig).Handle(context.Background(), webhooktest.Request(t, admissionv1.Create, deployment(new(int32(1)), nil, nil), nil))
			assert.False(t, resp.Allowed)
			assert.EqualValues(t, http.StatusInternalServerError, resp.Result.Code)
		})
	}
}

func TestGarbageIsABadRequest(t *testing.T) {
	req := webhooktest.Request(t, admissionv1.Create, deployment(new(int32(1)), nil, nil), nil)
	req.Object.Raw = []byte(`{"spec":{"replicas":"many"}}`)
	resp := newHandler(t, nil).Handle(context.Background(), req)
	assert.False(t, resp.Allowed)
	assert.EqualValues(t, http.StatusBadRequest, resp.Result.Code)
}

// A stored object that the webhook mutated comes back unchanged when it is updated: the
// mutation is stable, not accumulating.
func TestMutationIsIdempotent(t *testing.T) {
	annotations := merge(failureTolerance("zone"), map[string]string{resourcesv1alpha1.HighAvailabilityConfigZones: "a,b,c"})
	for _, k := range workloadKinds {
		t.Run(k.kind, func(t *testing.T) {
			h := newHandler(t, annotations, nodes(3)...)
			once, resp := review(t, h, k.new(new(int32(1)), typed("server"), nil))
			require.NotEmpty(t, resp.Patches)
			_, resp = review(t, h, once)
			assert.Empty(t, resp.Patches)
		})
	}
}

// typicalRequest is a Deployment of a server in a shoot namespace with three zones, on a
// cluster with several nodes: every mutation applies.
func typicalRequest(t testing.TB) (admission.Handler, admission.Request) {
	annotations := merge(failureTolerance("zone"), map[string]string{resourcesv1alpha1.HighAvailabilityConfigZones: "eu-1a,eu-1b,eu-1c"})
	h := newHandler(t, annotations, append(nodes(3), scaling("Deployment", 5))...)
	d := deployment(new(int32(1)), typed("server"), nil)
	d.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "web", Effect: corev1.TaintEffectNoSchedule}}
	return h, webhooktest.Request(t, admissionv1.Create, d, nil)
}

func BenchmarkHighAvailabilityConfig(b *testing.B) {
	h, req := typicalRequest(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if resp := h.Handle(ctx, req); !resp.Allowed || len(resp.Patches) == 0 {
			b.Fatalf("not mutated: %+v", resp.Result)
		}
	}
}

func FuzzHighAvailabilityConfig(f *testing.F) {
	h, req := typicalRequest(f)
	statefulSetReq := webhooktest.Request(f, admissionv1.Update, statefulSet(new(int32(3)), typed("controller"), nil), statefulSet(new(int32(1)), nil, nil))
	hpaReq := webhooktest.Request(f, admissionv1.Create, hpa(new(int32(1)), 1, typed("controller"), nil), nil)
	webhooktest.FuzzAdmission(f, webhook.Admission(Name, Path, h, webhooktest.Log),
		webhooktest.AdmissionReview(f, req), webhooktest.AdmissionReview(f, statefulSetReq), webhooktest.AdmissionReview(f, hpaReq))
}

// The Namespace, the HPAs and the node count are read once per TTL and tenant: a Namespace
// annotation changed within the TTL applies once it has passed; another tenant never gets
// the first one's reads.
func TestReadsAreReusedForTheTTLPerTenant(t *testing.T) {
	namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Annotations: failureTolerance("zone")}}
	reads := map[string]int{}
	c := fake.NewClientBuilder().WithScheme(kubernetesscheme.Scheme).WithObjects(append(nodes(3), namespace)...).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			reads["namespace"]++
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, l client.ObjectList, opts ...client.ListOption) error {
			gvk, _ := c.GroupVersionKindFor(l)
			reads[gvk.Kind]++
			return c.List(ctx, l, opts...)
		},
	}).Build()
	clk := testclock.NewFakePassiveClock(time.Unix(0, 0))
	h, err := Handler(c, testConfig, clk, DefaultCacheTTL, webhooktest.Log)
	require.NoError(t, err)
	ctx := context.Background()
	admit := func(ctx context.Context) *appsv1.Deployment {
		t.Helper()
		req := webhooktest.Request(t, admissionv1.Create, deployment(new(int32(1)), typed("server"), nil), nil)
		resp := h.Handle(ctx, req)
		require.True(t, resp.Allowed)
		ops, err := json.Marshal(resp.Patches)
		require.NoError(t, err)
		patch, err := jsonpatch.DecodePatch(ops)
		require.NoError(t, err)
		patched, err := patch.Apply(req.Object.Raw)
		require.NoError(t, err)
		out := &appsv1.Deployment{}
		require.NoError(t, json.Unmarshal(patched, out))
		return out
	}
	once := map[string]int{"namespace": 1, "HorizontalPodAutoscalerList": 1, "NodeList": 1}

	admit(ctx)
	admit(ctx)
	assert.Equal(t, once, reads)

	namespace.Annotations = merge(failureTolerance("zone"), map[string]string{resourcesv1alpha1.HighAvailabilityConfigZones: "a,b"})
	require.NoError(t, c.Update(ctx, namespace))
	clk.SetTime(clk.Now().Add(DefaultCacheTTL))
	assert.Nil(t, admit(ctx).Spec.Template.Spec.Affinity, "within the TTL, the zones are not known yet")
	assert.Equal(t, once, reads)

	otherTenant := tenant.With(ctx, "shoot--other--cluster")
	assert.NotNil(t, admit(otherTenant).Spec.Template.Spec.Affinity, "another tenant reads its own cluster")
	assert.Equal(t, map[string]int{"namespace": 2, "HorizontalPodAutoscalerList": 2, "NodeList": 2}, reads)

	clk.SetTime(clk.Now().Add(time.Nanosecond))
	assert.NotNil(t, admit(ctx).Spec.Template.Spec.Affinity, "after the TTL, the zones apply")
	assert.Equal(t, map[string]int{"namespace": 3, "HorizontalPodAutoscalerList": 3, "NodeList": 3}, reads)
}

func TestConstructorReadsTheCacheTTL(t *testing.T) {
	cfg := &rmv1alpha1.ResourceManagerConfiguration{}
	assert.False(t, Webhook.Enabled(&componentconfig.ResourceManagerFile{ResourceManagerConfiguration: cfg}))
	cfg.Webhooks.HighAvailabilityConfig = testConfig
	assert.True(t, Webhook.Enabled(&componentconfig.ResourceManagerFile{ResourceManagerConfiguration: cfg}))
	deps := webhook.Deps{Target: fake.NewClientBuilder().Build(), Config: cfg, Clock: testclock.NewFakePassiveClock(time.Unix(0, 0)), Log: webhooktest.Log}

	wh, err := Webhook.New(deps)
	require.NoError(t, err)
	assert.Equal(t, Path, wh.Path)
	t.Setenv("HIGH_AVAILABILITY_CONFIG_CACHE_TTL", "soon")
	_, err = Webhook.New(deps)
	assert.Error(t, err)
	_, err = WithCacheTTL(-time.Second).New(deps)
	assert.Error(t, err)
	_, err = WithCacheTTL(0).New(deps)
	assert.NoError(t, err)
}
