package podschedulername

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	rmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"

	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/webhook"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/webhooktest"
)

const binPacking = "bin-packing-scheduler"

func pod(schedulerName string) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "kube-system"},
		Spec: corev1.PodSpec{
			SchedulerName: schedulerName,
			Containers:    []corev1.Container{{Name: "main", Image: "busybox"}},
		},
	}
}

func TestSchedulerName(t *testing.T) {
	for _, tc := range []struct {
		name, configured, pod, want string
	}{
		{name: "no scheduler named", configured: binPacking, pod: "", want: binPacking},
		{name: "the default scheduler named", configured: binPacking, pod: corev1.DefaultSchedulerName, want: binPacking},
		{name: "another scheduler named", configured: binPacking, pod: "my-scheduler", want: "my-scheduler"},
		{name: "the configured scheduler named already", configured: binPacking, pod: binPacking, want: binPacking},
		{name: "configured as the default scheduler", configured: corev1.DefaultSchedulerName, pod: "", want: corev1.DefaultSchedulerName},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := &corev1.Pod{}
			resp := webhooktest.Mutate(t, Handler(tc.configured), webhooktest.Request(t, admissionv1.Create, pod(tc.pod), nil), out)
			assert.Equal(t, tc.want, out.Spec.SchedulerName)
			assert.Equal(t, tc.pod != tc.want, len(resp.Patches) > 0, "patched only when the name changes")
		})
	}
}

// A tenant's Pods go to its profile's scheduler; the webhook applies only to bin-packing shoots
// with workers (Gardener does not register it for balanced ones).
func TestTenantsScheduler(t *testing.T) {
	ctx := tenant.WithSettings(context.Background(), &tenant.Settings{SchedulerName: binPacking})
	out := &corev1.Pod{}
	webhooktest.MutateIn(t, ctx, Handler(corev1.DefaultSchedulerName), webhooktest.Request(t, admissionv1.Create, pod(""), nil), out)
	assert.Equal(t, binPacking, out.Spec.SchedulerName)

	assert.True(t, Webhook.AppliesTo(&tenant.Settings{SchedulerName: binPacking}))
	assert.False(t, Webhook.AppliesTo(&tenant.Settings{}), "balanced")
	assert.False(t, Webhook.AppliesTo(&tenant.Settings{SchedulerName: binPacking, Workerless: true}))
}

// As controller-runtime's defaulter, on which Gardener builds the webhook: DELETE is allowed
// untouched with code 200, an object that does not decode is a 400.
func TestDeleteAndMalformedObjects(t *testing.T) {
	h := Handler(binPacking)
	del := h.Handle(context.Background(), webhooktest.Request(t, admissionv1.Delete, nil, pod("")))
	assert.True(t, del.Allowed)
	assert.Empty(t, del.Patches)
	assert.Equal(t, int32(http.StatusOK), del.Result.Code)

	for name, raw := range map[string]string{
		"not json":        `{"spec":`,
		"no content":      ``,
		"another kind":    `{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"}}`,
		"wrongly typed":   `{"apiVersion":"v1","kind":"Pod","spec":{"schedulerName":5}}`,
		"an unknown kind": `{"apiVersion":"v1","kind":"Podd"}`,
	} {
		t.Run(name, func(t *testing.T) {
			req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: []byte(raw)}}}
			resp := h.Handle(context.Background(), req)
			assert.False(t, resp.Allowed)
			assert.Equal(t, int32(http.StatusBadRequest), resp.Result.Code)
		})
	}
}

// Fields the Pod type does not know (a newer kube-apiserver's) survive the mutation.
func TestUnknownFieldsStay(t *testing.T) {
	raw := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"kube-system","futureMeta":"x"},` +
		`"spec":{"futureSpec":{"a":1},"containers":[{"name":"main","image":"busybox","futureContainer":true}]}}`
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: []byte(raw)}}}
	out := map[string]any{}
	webhooktest.Mutate(t, Handler(binPacking), req, &out)
	spec := out["spec"].(map[string]any)
	assert.Equal(t, binPacking, spec["schedulerName"])
	assert.Equal(t, map[string]any{"a": float64(1)}, spec["futureSpec"])
	assert.Equal(t, true, spec["containers"].([]any)[0].(map[string]any)["futureContainer"])
	assert.Equal(t, "x", out["metadata"].(map[string]any)["futureMeta"])
}

func TestConfiguration(t *testing.T) {
	build := func(t *testing.T, schedulerName *string) webhook.Webhook {
		t.Helper()
		cfg := &rmv1alpha1.ResourceManagerConfiguration{}
		cfg.Webhooks.PodSchedulerName.SchedulerName = schedulerName
		wh, err := Webhook.New(webhook.Deps{Config: cfg, Log: webhooktest.Log})
		require.NoError(t, err)
		assert.Equal(t, Path, wh.Path)
		return wh
	}
	name := func(t *testing.T, wh webhook.Webhook) string {
		t.Helper()
		out := &corev1.Pod{}
		webhooktest.Mutate(t, wh.Handler.(*admission.Webhook), webhooktest.Request(t, admissionv1.Create, pod(""), nil), out)
		return out.Spec.SchedulerName
	}
	configured := binPacking
	assert.Equal(t, binPacking, name(t, build(t, &configured)))
	assert.Equal(t, corev1.DefaultSchedulerName, name(t, build(t, nil)), "Gardener's API default")
	t.Setenv("POD_SCHEDULER_NAME_WEBHOOK_SCHEDULER_NAME", "from-env")
	assert.Equal(t, "from-env", name(t, build(t, &configured)))
}

func typicalRequest(t testing.TB) admission.Request {
	return webhooktest.Request(t, admissionv1.Create, pod(""), nil)
}

func BenchmarkPodSchedulerName(b *testing.B) {
	wh := webhook.Admission(Name, Path, Handler(binPacking), webhooktest.Log)
	webhooktest.BenchmarkAdmission(b, wh, webhooktest.AdmissionReview(b, typicalRequest(b)))
}

func FuzzPodSchedulerName(f *testing.F) {
	webhooktest.FuzzAdmission(f, webhook.Admission(Name, Path, Handler(binPacking), webhooktest.Log), webhooktest.AdmissionReview(f, typicalRequest(f)))
}
