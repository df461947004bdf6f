package projectedtokenmount

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	rmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubernetesscheme "k8s.io/client-go/kubernetes/scheme"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/webhook"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/webhooktest"
)

const namespace = "ns"

func serviceAccount(name string, automount *bool) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, AutomountServiceAccountToken: automount}
}

// target holds ServiceAccounts "no-automount" (false), "automount" (true) and "unset" (nil).
func target() client.Client {
	return fake.NewClientBuilder().WithScheme(kubernetesscheme.Scheme).WithObjects(
		serviceAccount("no-automount", ptr.To(false)),
		serviceAccount("automount", ptr.To(true)),
		serviceAccount("unset", nil),
	).Build()
}

// pod meets every precondition. Its namespace is left empty, as in some CREATE requests: the
// handler must take the request's.
func pod() *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: corev1.PodSpec{
			ServiceAccountName: "no-automount",
			InitContainers:     []corev1.Container{{Name: "init"}},
			Containers: []corev1.Container{
				{Name: "a"},
				{Name: "b", VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}},
			},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
}

func review(t *testing.T, c client.Reader, expiration int64, p *corev1.Pod) (*corev1.Pod, []string) {
	t.Helper()
	req := webhooktest.Request(t, admissionv1.Create, p, nil)
	req.Namespace = namespace
	out := &corev1.Pod{}
	resp := webhooktest.Mutate(t, Handler(c, expiration), req, out)
	var paths []string
	for _, op := range resp.Patches {
		paths = append(paths, op.Path)
	}
	return out, paths
}

var tokenMount = corev1.VolumeMount{Name: "kube-api-access-gardener", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}

func TestMountsTokenIntoEveryContainer(t *testing.T) {
	out, _ := review(t, target(), 1337, pod())

	require.Len(t, out.Spec.Volumes, 2)
	assert.Equal(t, "data", out.Spec.Volumes[0].Name, "existing volumes stay")
	expiration := int64(1337)
	assert.Equal(t, corev1.Volume{
		Name: "kube-api-access-gardener",
		VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			DefaultMode: ptr.To[int32](420),
			Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: &expiration, Path: "token"}},
				{ConfigMap: &corev1.ConfigMapProjection{
					LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
					Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
				}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{
					FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"},
					Path:     "namespace",
				}}}},
			},
		}},
	}, out.Spec.Volumes[1])
	assert.Equal(t, []corev1.VolumeMount{tokenMount}, out.Spec.InitContainers[0].VolumeMounts)
	assert.Equal(t, []corev1.VolumeMount{tokenMount}, out.Spec.Containers[0].VolumeMounts)
	assert.Equal(t, []corev1.VolumeMount{{Name: "data", MountPath: "/data"}, tokenMount}, out.Spec.Containers[1].VolumeMounts)
}

func TestExpirationAnnotationOverridesDefault(t *testing.T) {
	p := pod()
	p.Annotations = map[string]string{"projected-token-mount.resources.gardener.cloud/expiration-seconds": "8998"}
	out, _ := review(t, target(), 1337, p)
	require.Len(t, out.Spec.Volumes, 2)
	assert.Equal(t, int64(8998), *out.Spec.Volumes[1].Projected.Sources[0].ServiceAccountToken.ExpirationSeconds)
}

func TestPreconditions(t *testing.T) {
	for name, change := range map[string]func(*corev1.Pod){
		"skip label": func(p *corev1.Pod) {
			p.Labels = map[string]string{"projected-token-mount.resources.gardener.cloud/skip": "true"}
		},
		"no service account name":                func(p *corev1.Pod) { p.Spec.ServiceAccountName = "" },
		"default service account":                func(p *corev1.Pod) { p.Spec.ServiceAccountName = "default" },
		"service account automounts":             func(p *corev1.Pod) { p.Spec.ServiceAccountName = "automount" },
		"service account leaves automount unset": func(p *corev1.Pod) { p.Spec.ServiceAccountName = "unset" },
		"pod refuses a token":                    func(p *corev1.Pod) { p.Spec.AutomountServiceAccountToken = ptr.To(false) },
		"pod has a kube-api-access- volume already": func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "kube-api-access-2138h"})
		},
	} {
		t.Run(name, func(t *testing.T) {
			p := pod()
			change(p)
			_, patches := review(t, target(), 1337, p)
			assert.Empty(t, patches)
		})
	}
}

// Only the value "true" opts out, as the spec says; any other value of the label is left to
// the registration's object selector.
func TestSkipLabelOtherValueDoesNotOptOut(t *testing.T) {
	p := pod()
	p.Labels = map[string]string{"projected-token-mount.resources.gardener.cloud/skip": "false"}
	out, _ := review(t, target(), 1337, p)
	assert.Len(t, out.Spec.Volumes, 2)
}

func TestPodRequestingATokenExplicitlyIsMounted(t *testing.T) {
	p := pod()
	p.Spec.AutomountServiceAccountToken = ptr.To(true)
	out, _ := review(t, target(), 1337, p)
	assert.Len(t, out.Spec.Volumes, 2)
}

// TestAnswersAsGardener pins every answer that is not a patch to Gardener v1.150's handler (a
// controller-runtime CustomDefaulter): the code, reason and message of each denial.
func TestAnswersAsGardener(t *testing.T) {
	forbiddenRead := interceptor.Funcs{Get: func(_ context.Context, _ client.WithWatch, key client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
		return apierrors.NewForbidden(corev1.Resource("serviceaccounts"), key.Name, errors.New("RBAC says no"))
	}}
	timedOutRead := interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
		return context.DeadlineExceeded
	}}
	for _, tc := range []struct {
		name    string
		change  func(*corev1.Pod)
		reads   *interceptor.Funcs
		op      admissionv1.Operation
		allowed bool
		want    *metav1.Status
	}{
		{
			name:   "missing ServiceAccount: the API's 404 NotFound",
			change: func(p *corev1.Pod) { p.Spec.ServiceAccountName = "missing" },
			want: &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
				Message: `serviceaccounts "missing" not found`, Details: &metav1.StatusDetails{Name: "missing", Kind: "serviceaccounts"}},
		},
		{
			name: "missing ServiceAccount of a Pod refusing a token: still 404, the ServiceAccount is read first",
			change: func(p *corev1.Pod) {
				p.Spec.ServiceAccountName = "missing"
				p.Spec.AutomountServiceAccountToken = ptr.To(false)
			},
			want: &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
				Message: `serviceaccounts "missing" not found`, Details: &metav1.StatusDetails{Name: "missing", Kind: "serviceaccounts"}},
		},
		{
			name: "missing ServiceAccount of a Pod with a token volume already: still 404",
			change: func(p *corev1.Pod) {
				p.Spec.ServiceAccountName = "missing"
				p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "kube-api-access-x"})
			},
			want: &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
				Message: `serviceaccounts "missing" not found`, Details: &metav1.StatusDetails{Name: "missing", Kind: "serviceaccounts"}},
		},
		{
			name:  "ServiceAccount read forbidden: the API's 403 Forbidden",
			reads: &forbiddenRead,
			want: &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden,
				Message: `serviceaccounts "no-automount" is forbidden: RBAC says no`, Details: &metav1.StatusDetails{Name: "no-automount", Kind: "serviceaccounts"}},
		},
		{
			name:  "ServiceAccount read fails without an API status: 403 Forbidden with the error",
			reads: &timedOutRead,
			want:  &metav1.Status{Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden, Message: "context deadline exceeded"},
		},
		{
			name: "invalid expiration annotation: 403 Forbidden with strconv's message",
			change: func(p *corev1.Pod) {
				p.Annotations = map[string]string{"projected-token-mount.resources.gardener.cloud/expiration-seconds": "12h"}
			},
			want: &metav1.Status{Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden, Message: `strconv.ParseInt: parsing "12h": invalid syntax`},
		},
		{
			name: "invalid annotation on a Pod that gets no token: allowed, the annotation is not looked at",
			change: func(p *corev1.Pod) {
				p.Spec.ServiceAccountName = "automount"
				p.Annotations = map[string]string{"projected-token-mount.resources.gardener.cloud/expiration-seconds": "12h"}
			},
			allowed: true,
		},
		{name: "nothing to do: allowed without a status", change: func(p *corev1.Pod) { p.Spec.ServiceAccountName = "unset" }, allowed: true},
		{name: "DELETE: allowed with status 200", op: admissionv1.Delete, allowed: true, want: &metav1.Status{Code: http.StatusOK}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pod()
			if tc.change != nil {
				tc.change(p)
			}
			var c client.Reader = target()
			if tc.reads != nil {
				c = interceptor.NewClient(target().(client.WithWatch), *tc.reads)
			}
			op := admissionv1.Create
			var obj, old runtime.Object = p, nil
			if tc.op == admissionv1.Delete {
				op, obj, old = admissionv1.Delete, nil, p
			}
			req := webhooktest.Request(t, op, obj, old)
			req.Namespace = namespace
			resp := Handler(c, 1337).Handle(context.Background(), req)
			assert.Equal(t, tc.allowed, resp.Allowed)
			assert.Equal(t, tc.want, resp.Result)
			assert.Empty(t, resp.Patches)
		})
	}
}

func TestMalformedPodIsABadRequest(t *testing.T) {
	req := webhooktest.Request(t, admissionv1.Create, pod(), nil)
	req.Object.Raw = []byte(`{"spec":{"containers":"not a list"}}`)
	resp := Handler(target(), 1337).Handle(context.Background(), req)
	assert.False(t, resp.Allowed)
	assert.Equal(t, int32(http.StatusBadRequest), resp.Result.Code)
}

// Pods that fail a cheap precondition cost no API call.
func TestNoReadUnlessNeeded(t *testing.T) {
	reads := 0
	c := fake.NewClientBuilder().WithScheme(kubernetesscheme.Scheme).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			reads++
			return c.Get(ctx, key, obj, opts...)
		},
	}).Build()
	p := pod()
	p.Spec.ServiceAccountName = "default"
	review(t, c, 1337, p)
	assert.Zero(t, reads)
}

// ServiceAccounts are read once per TTL; a missing one is read again on the next Pod, so a
// ServiceAccount created right after a refused Pod is found.
func TestServiceAccountsAreCachedBriefly(t *testing.T) {
	reads := 0
	c := interceptor.NewClient(target().(client.WithWatch), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			reads++
			return c.Get(ctx, key, obj, opts...)
		},
	})
	clk := testclock.NewFakeClock(time.Now())
	h, err := NewHandler(c, 1337, clk, Config{ServiceAccountCacheTTL: 5 * time.Second, ServiceAccountCacheSize: 10})
	require.NoError(t, err)
	admit := func(serviceAccount string) admission.Response {
		p := pod()
		p.Spec.ServiceAccountName = serviceAccount
		req := webhooktest.Request(t, admissionv1.Create, p, nil)
		req.Namespace = namespace
		return h.Handle(context.Background(), req)
	}

	for range 3 {
		resp := admit("no-automount")
		require.True(t, resp.Allowed)
		require.NotEmpty(t, resp.Patches)
	}
	assert.Equal(t, 1, reads, "one read serves the TTL")
	clk.Step(6 * time.Second)
	admit("no-automount")
	assert.Equal(t, 2, reads, "expired entries are read again")

	assert.Equal(t, int32(http.StatusNotFound), admit("late").Result.Code)
	require.NoError(t, c.Create(context.Background(), serviceAccount("late", ptr.To(false))))
	resp := admit("late")
	assert.True(t, resp.Allowed)
	assert.NotEmpty(t, resp.Patches, "a NotFound is not remembered")
}

// The constructor serves the configured expiration, defaulted to 12h when unset.
func TestConstructorDefaultsExpiration(t *testing.T) {
	for name, tc := range map[string]struct {
		configured *int64
		want       string
	}{
		"unset":      {nil, `"expirationSeconds":43200`},
		"configured": {ptr.To[int64](3600), `"expirationSeconds":3600`},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := &rmv1alpha1.ResourceManagerConfiguration{}
			cfg.Webhooks.ProjectedTokenMount = rmv1alpha1.ProjectedTokenMountWebhookConfig{Enabled: true, ExpirationSeconds: tc.configured}
			require.True(t, Webhook.Enabled(&componentconfig.ResourceManagerFile{ResourceManagerConfiguration: cfg}))
			wh, err := Webhook.New(webhook.Deps{Target: target(), Config: cfg, Log: webhooktest.Log})
			require.NoError(t, err)
			assert.Equal(t, Path, wh.Path)

			req := webhooktest.Request(t, admissionv1.Create, pod(), nil)
			req.Namespace = namespace
			rec := httptest.NewRecorder()
			post := httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(webhooktest.AdmissionReview(t, req)))
			post.Header.Set("Content-Type", "application/json")
			wh.Handler.ServeHTTP(rec, post)
			var answer admissionv1.AdmissionReview
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &answer))
			require.True(t, answer.Response.Allowed, "%+v", answer.Response.Result)
			assert.Contains(t, string(answer.Response.Patch), tc.want)
		})
	}
}

func FuzzProjectedTokenMount(f *testing.F) {
	req := webhooktest.Request(f, admissionv1.Create, pod(), nil)
	req.Namespace = namespace
	webhooktest.FuzzAdmission(f, webhook.Admission(Name, Path, Handler(target(), 1337), webhooktest.Log),
		webhooktest.AdmissionReview(f, req))
}

// BenchmarkProjectedTokenMount reviews a Pod that gets the token (its ServiceAccount read from
// the in-memory fake client, on every Pod or once per TTL; a GET to the API server in
// production) and one of the default ServiceAccount, which most Pods are and which costs no
// read.
func BenchmarkProjectedTokenMount(b *testing.B) {
	for _, bc := range []struct {
		name, serviceAccount string
		cacheTTL             time.Duration
	}{
		{"mounted", "no-automount", 0},
		{"mounted, ServiceAccount cached", "no-automount", time.Minute},
		{"default ServiceAccount", "default", 0},
	} {
		b.Run(bc.name, func(b *testing.B) {
			h, err := NewHandler(target(), DefaultExpirationSeconds, nil, Config{ServiceAccountCacheTTL: bc.cacheTTL, ServiceAccountCacheSize: 10})
			require.NoError(b, err)
			p := pod()
			p.Spec.ServiceAccountName = bc.serviceAccount
			req := webhooktest.Request(b, admissionv1.Create, p, nil)
			req.Namespace = namespace
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if resp := h.Handle(ctx, req); !resp.Allowed {
					b.Fatal(resp.Result)
				}
			}
		})
	}
}
