package podkubeapiserverloadbalancing

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/gardener-knative/gardener-knative/pkg/tenant"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubernetesscheme "k8s.io/client-go/kubernetes/scheme"
	testclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gardener-knative/gardener-knative/pkg/webhook"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/webhooktest"
)

const (
	shootNamespace = "shoot--project--name"
	istioNamespace = "istio-ingress"
	// gatewayLabel is the network policy label for istioNamespace's internal gateway.
	gatewayLabel = "networking.resources.gardener.cloud/to-istio-ingress-istio-ingressgateway-internal-tcp-9443"
)

func loadBalancingConfigMap(data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: shootNamespace, Name: "istio-internal-load-balancing"}, Data: data}
}

func gateway(namespace string, clusterIPs ...string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "istio-ingressgateway-internal"},
		Spec:       corev1.ServiceSpec{ClusterIP: clusterIPs[0], ClusterIPs: clusterIPs},
	}
}

// seed holds the ConfigMap (api.example.com and api2.example.com behind istio-ingress) and the
// dual-stack internal gateway.
func seed() []client.Object {
	return []client.Object{
		loadBalancingConfigMap(map[string]string{"hosts": "api.example.com,api2.example.com", "istio-namespace": istioNamespace}),
		gateway(istioNamespace, "10.10.10.10", "fd00::a"),
	}
}

// genericKubeconfigPod mounts the generic token kubeconfig as Gardener's control-plane
// components do: as a source of a projected volume.
func genericKubeconfigPod() *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "kube-controller-manager-abc", Namespace: shootNamespace, Labels: map[string]string{"app": "kubernetes"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "main", Image: "kcm"}},
			Volumes: []corev1.Volume{
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "config"}}}},
				{Name: "kubeconfig", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
					{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "generic-token-kubeconfig-92e9ae14"}}},
				}}}},
			},
		},
	}
}

// target is a fake target holding objs; it counts the reads, which get may answer.
func target(objs []client.Object, get func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error) (client.Reader, *int) {
	reads := 0
	funcs := interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		reads++
		if get != nil {
			return get(ctx, c, key, obj, opts...)
		}
		return c.Get(ctx, key, obj, opts...)
	}}
	return fake.NewClientBuilder().WithScheme(kubernetesscheme.Scheme).WithObjects(objs...).WithInterceptorFuncs(funcs).Build(), &reads
}

func handle(t *testing.T, reader client.Reader, p *corev1.Pod) admission.Response {
	t.Helper()
	return Handler(reader, webhooktest.Log).Handle(context.Background(), webhooktest.Request(t, admissionv1.Create, p, nil))
}

func TestHostAliasesAndLabel(t *testing.T) {
	reader, _ := target(seed(), nil)
	p := genericKubeconfigPod()
	p.Spec.HostAliases = []corev1.HostAlias{{IP: "192.0.2.1", Hostnames: []string{"own.example.com"}}}
	out := &corev1.Pod{}
	webhooktest.Mutate(t, Handler(reader, webhooktest.Log), webhooktest.Request(t, admissionv1.Create, p, nil), out)
	hosts := []string{"api.example.com", "api2.example.com"}
	assert.Equal(t, []corev1.HostAlias{
		{IP: "192.0.2.1", Hostnames: []string{"own.example.com"}},
		{IP: "10.10.10.10", Hostnames: hosts},
		{IP: "fd00::a", Hostnames: hosts},
	}, out.Spec.HostAliases)
	assert.Equal(t, map[string]string{"app": "kubernetes", gatewayLabel: "allowed"}, out.Labels)
}

// The generic token kubeconfig counts as a Secret volume or a projected volume's source, by
// name prefix (Gardener appends a hash).
func TestWhichPodsUseTheGenericKubeconfig(t *testing.T) {
	secretVolume := func(name string) corev1.Volume {
		return corev1.Volume{Name: "v", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: name}}}
	}
	projected := func(name string) corev1.Volume {
		return corev1.Volume{Name: "v", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: name}}},
		}}}}
	}
	for _, tc := range []struct {
		name    string
		volumes []corev1.Volume
		uses    bool
	}{
		{name: "a projected source with hash", volumes: genericKubeconfigPod().Spec.Volumes, uses: true},
		{name: "a secret volume with hash", volumes: []corev1.Volume{secretVolume("generic-token-kubeconfig-92e9ae14")}, uses: true},
		{name: "a secret volume without hash", volumes: []corev1.Volume{secretVolume("generic-token-kubeconfig")}, uses: true},
		{name: "a projected source without hash", volumes: []corev1.Volume{projected("generic-token-kubeconfig")}, uses: true},
		{name: "after other volumes", volumes: []corev1.Volume{secretVolume("other"), projected("other"), secretVolume("generic-token-kubeconfig-1")}, uses: true},
		{name: "no volumes"},
		{name: "other secrets", volumes: []corev1.Volume{secretVolume("shoot-access-kube-controller-manager"), projected("token-kubeconfig")}},
		{name: "the name inside another", volumes: []corev1.Volume{secretVolume("my-generic-token-kubeconfig")}},
		{name: "a ConfigMap of that name", volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "generic-token-kubeconfig"}}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reader, reads := target(seed(), nil)
			p := genericKubeconfigPod()
			p.Spec.Volumes = tc.volumes
			resp := handle(t, reader, p)
			require.True(t, resp.Allowed)
			assert.Equal(t, tc.uses, len(resp.Patches) > 0)
			if !tc.uses {
				assert.Zero(t, *reads, "a pod without the generic kubeconfig costs no read")
			}
		})
	}
}

func TestNamespacesWithoutTheConfigMapAreLeftAlone(t *testing.T) {
	reader, reads := target(seed()[1:], nil)
	resp := handle(t, reader, genericKubeconfigPod())
	assert.True(t, resp.Allowed)
	assert.Empty(t, resp.Patches)
	assert.Equal(t, 1, *reads)
}

// The ConfigMap is looked up in the namespace the Pod's object names, as Gardener does; an
// object without one is left alone.
func TestPodsWithoutNamespaceAreLeftAlone(t *testing.T) {
	reader, reads := target(seed(), nil)
	p := genericKubeconfigPod()
	p.Namespace = ""
	resp := handle(t, reader, p)
	assert.True(t, resp.Allowed)
	assert.Empty(t, resp.Patches)
	assert.Zero(t, *reads)
}

// Without any cluster IP, the Pod gets no host alias but still the label.
func TestGatewayWithoutClusterIPs(t *testing.T) {
	objs := seed()
	objs[1].(*corev1.Service).Spec.ClusterIPs = nil
	reader, _ := target(objs, nil)
	out := &corev1.Pod{}
	webhooktest.Mutate(t, Handler(reader, webhooktest.Log), webhooktest.Request(t, admissionv1.Create, genericKubeconfigPod(), nil), out)
	assert.Empty(t, out.Spec.HostAliases)
	assert.Equal(t, "allowed", out.Labels[gatewayLabel])
}

// Host names are the hosts key split at commas, nothing trimmed or dropped.
func TestHostsAreSplitAtCommas(t *testing.T) {
	objs := seed()
	objs[0].(*corev1.ConfigMap).Data["hosts"] = "api.example.com, api2.example.com,,"
	reader, _ := target(objs, nil)
	out := &corev1.Pod{}
	webhooktest.Mutate(t, Handler(reader, webhooktest.Log), webhooktest.Request(t, admissionv1.Create, genericKubeconfigPod(), nil), out)
	assert.Equal(t, []string{"api.example.com", " api2.example.com", "", ""}, out.Spec.HostAliases[0].Hostnames)
}

// Gardener's answers where it cannot mutate: a plain error is a 403 with the error as message;
// an error that carries an API status is answered with that status.
func TestDenials(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "istio-internal-load-balancing", errors.New("no RBAC"))
	for _, tc := range []struct {
		name string
		objs []client.Object
		get  func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error
		want metav1.Status
	}{
		{
			name: "no hosts",
			objs: []client.Object{loadBalancingConfigMap(map[string]string{"istio-namespace": istioNamespace}), gateway(istioNamespace, "10.10.10.10")},
			want: metav1.Status{Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden,
				Message: `"hosts" key in configmap "shoot--project--name/istio-internal-load-balancing" provides an empty value`},
		},
		{
			name: "empty hosts",
			objs: []client.Object{loadBalancingConfigMap(map[string]string{"hosts": "", "istio-namespace": istioNamespace}), gateway(istioNamespace, "10.10.10.10")},
			want: metav1.Status{Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden,
				Message: `"hosts" key in configmap "shoot--project--name/istio-internal-load-balancing" provides an empty value`},
		},
		{
			name: "no gateway",
			objs: seed()[:1],
			want: notFoundStatus(),
		},
		{
			name: "no istio namespace",
			objs: []client.Object{loadBalancingConfigMap(map[string]string{"hosts": "api.example.com"}), gateway(istioNamespace, "10.10.10.10")},
			want: notFoundStatus(),
		},
		{
			name: "the ConfigMap unreadable",
			objs: seed(),
			get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
				return errors.New("connection refused")
			},
			want: metav1.Status{Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden,
				Message: `failed to get istio-internal-load-balancing configmap "shoot--project--name/istio-internal-load-balancing": connection refused`},
		},
		{
			name: "the ConfigMap forbidden",
			objs: seed(),
			get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
				return forbidden
			},
			want: forbidden.ErrStatus,
		},
		{
			name: "the gateway unreadable",
			objs: seed(),
			get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if _, ok := obj.(*corev1.Service); ok {
					return errors.New("timeout")
				}
				return c.Get(ctx, key, obj, opts...)
			},
			want: metav1.Status{Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden,
				Message: `failed to get internal istio-ingressgateway service "istio-ingress/istio-ingressgateway-internal": timeout`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reader, _ := target(tc.objs, tc.get)
			resp := handle(t, reader, genericKubeconfigPod())
			assert.False(t, resp.Allowed)
			assert.Equal(t, tc.want, *resp.Result)
		})
	}
}

// notFoundStatus is Gardener's answer for a missing gateway Service: the NotFound of its
// informer cache, which names the kind.
func notFoundStatus() metav1.Status {
	return metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
		Message: `Service "istio-ingressgateway-internal" not found`,
		Details: &metav1.StatusDetails{Name: "istio-ingressgateway-internal", Kind: "Service"},
	}
}

func TestNetworkPolicyLabel(t *testing.T) {
	assert.Equal(t, gatewayLabel, NetworkPolicyLabel("istio-ingress-istio-ingressgateway-internal", 9443))
	// Longer than 63 characters after the prefix: cut to 57 and a hash of the whole (computed
	// with sha256sum).
	assert.Equal(t, "networking.resources.gardener.cloud/to-istio-ingress-handler-exposureclass-with-a-long-name-i-18368",
		NetworkPolicyLabel("istio-ingress-handler-exposureclass-with-a-long-name-istio-ingressgateway-internal", 9443))
}

// With a TTL, the ConfigMap and the gateway are read once per TTL (a missing ConfigMap too),
// separately for each tenant.
func TestReadsAreCached(t *testing.T) {
	clk := testclock.NewFakeClock(time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC))
	for _, tc := range []struct {
		name      string
		objs      []client.Object
		readsEach int
	}{
		{name: "a namespace with the ConfigMap", objs: seed(), readsEach: 2},
		{name: "a namespace without", objs: seed()[1:], readsEach: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reader, reads := target(tc.objs, nil)
			h, err := NewHandler(reader, clk, Config{CacheTTL: 5 * time.Second, CacheSize: 10}, webhooktest.Log)
			require.NoError(t, err)
			review := func(ctx context.Context) admission.Response {
				resp := h.Handle(ctx, webhooktest.Request(t, admissionv1.Create, genericKubeconfigPod(), nil))
				require.True(t, resp.Allowed)
				return resp
			}
			first := review(context.Background())
			assert.ElementsMatch(t, first.Patches, review(context.Background()).Patches, "the same answer (jsonpatch orders operations as map iteration does)")
			assert.Equal(t, tc.readsEach, *reads, "the second Pod reads nothing")
			review(tenant.With(context.Background(), "shoot--other--tenant"))
			assert.Equal(t, 2*tc.readsEach, *reads, "another tenant reads for itself")
			clk.Step(6 * time.Second)
			review(context.Background())
			assert.Equal(t, 3*tc.readsEach, *reads, "read again after the TTL")
		})
	}
}

func TestDelete(t *testing.T) {
	reader, reads := target(seed(), nil)
	resp := Handler(reader, webhooktest.Log).Handle(context.Background(), webhooktest.Request(t, admissionv1.Delete, nil, genericKubeconfigPod()))
	assert.True(t, resp.Allowed)
	assert.Empty(t, resp.Patches)
	assert.Equal(t, int32(http.StatusOK), resp.Result.Code)
	assert.Zero(t, *reads)
}

func BenchmarkPodKubeAPIServerLoadBalancing(b *testing.B) {
	reader := fake.NewClientBuilder().WithScheme(kubernetesscheme.Scheme).WithObjects(seed()...).Build()
	wh := webhook.Admission(Name, Path, Handler(reader, webhooktest.Log), webhooktest.Log)
	webhooktest.BenchmarkAdmission(b, wh, webhooktest.AdmissionReview(b, webhooktest.Request(b, admissionv1.Create, genericKubeconfigPod(), nil)))
}

// BenchmarkPodKubeAPIServerLoadBalancingCached is the same with the reads cached (the
// default 5s TTL), as when many Pods of a namespace are created in a burst.
func BenchmarkPodKubeAPIServerLoadBalancingCached(b *testing.B) {
	reader := fake.NewClientBuilder().WithScheme(kubernetesscheme.Scheme).WithObjects(seed()...).Build()
	h, err := NewHandler(reader, testclock.NewFakeClock(time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)), Config{CacheTTL: 5 * time.Second, CacheSize: 10}, webhooktest.Log)
	require.NoError(b, err)
	wh := webhook.Admission(Name, Path, h, webhooktest.Log)
	webhooktest.BenchmarkAdmission(b, wh, webhooktest.AdmissionReview(b, webhooktest.Request(b, admissionv1.Create, genericKubeconfigPod(), nil)))
}

func FuzzPodKubeAPIServerLoadBalancing(f *testing.F) {
	reader := fake.NewClientBuilder().WithScheme(kubernetesscheme.Scheme).WithObjects(seed()...).Build()
	webhooktest.FuzzAdmission(f, webhook.Admission(Name, Path, Handler(reader, webhooktest.Log), webhooktest.Log),
		webhooktest.AdmissionReview(f, webhooktest.Request(f, admissionv1.Create, genericKubeconfigPod(), nil)))
}
