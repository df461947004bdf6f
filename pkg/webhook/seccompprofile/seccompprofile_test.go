package seccompprofile

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gardener-knative/gardener-knative/pkg/webhook"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/webhooktest"
)

func pod(securityContext *corev1.PodSecurityContext) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "garden"},
		Spec: corev1.PodSpec{
			SecurityContext: securityContext,
			Containers:      []corev1.Container{{Name: "main", Image: "busybox"}},
		},
	}
}

var runtimeDefault = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}

func TestSeccompProfile(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before *corev1.PodSecurityContext
		want   *corev1.PodSecurityContext
	}{
		{name: "no security context", before: nil, want: &corev1.PodSecurityContext{SeccompProfile: runtimeDefault}},
		{name: "no profile", before: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](65532)},
			want: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](65532), SeccompProfile: runtimeDefault}},
		{name: "a profile without a type is replaced whole", before: &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{LocalhostProfile: ptr.To("p.json")}},
			want: &corev1.PodSecurityContext{SeccompProfile: runtimeDefault}},
		{name: "unconfined stays", before: &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}},
			want: &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}}},
		{name: "localhost stays", before: &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("p.json")}},
			want: &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("p.json")}}},
		{name: "runtime default stays", before: &corev1.PodSecurityContext{SeccompProfile: runtimeDefault}, want: &corev1.PodSecurityContext{SeccompProfile: runtimeDefault}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pod(tc.before)
			changed := tc.before == nil || tc.before.SeccompProfile == nil || tc.before.SeccompProfile.Type == ""
			out := &corev1.Pod{}
			resp := webhooktest.Mutate(t, Handler(webhooktest.Log), webhooktest.Request(t, admissionv1.Create, p, nil), out)
			assert.Equal(t, tc.want, out.Spec.SecurityContext)
			assert.Equal(t, changed, len(resp.Patches) > 0)
		})
	}
}

// Only the pod's profile is defaulted: a container's own profile (set or not) is the
// container's; containers without one inherit the pod's.
func TestContainerProfilesStay(t *testing.T) {
	p := pod(nil)
	p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "unconfined", Image: "busybox", SecurityContext: &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}}})
	out := &corev1.Pod{}
	webhooktest.Mutate(t, Handler(webhooktest.Log), webhooktest.Request(t, admissionv1.Create, p, nil), out)
	assert.Equal(t, runtimeDefault, out.Spec.SecurityContext.SeccompProfile)
	assert.Nil(t, out.Spec.Containers[0].SecurityContext)
	assert.Equal(t, p.Spec.Containers[1].SecurityContext, out.Spec.Containers[1].SecurityContext)
}

func TestDeleteAndMalformedObjects(t *testing.T) {
	h := Handler(webhooktest.Log)
	del := h.Handle(context.Background(), webhooktest.Request(t, admissionv1.Delete, nil, pod(nil)))
	assert.True(t, del.Allowed)
	assert.Empty(t, del.Patches)
	assert.Equal(t, int32(http.StatusOK), del.Result.Code)

	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: []byte(`{"spec":{"securityContext":[]}}`)}}}
	resp := h.Handle(context.Background(), req)
	assert.False(t, resp.Allowed)
	assert.Equal(t, int32(http.StatusBadRequest), resp.Result.Code)
}

// Fields the Pod type does not know survive, in the security context too.
func TestUnknownFieldsStay(t *testing.T) {
	raw := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"garden"},` +
		`"spec":{"securityContext":{"futureSecurity":"x"},"futureSpec":1,"containers":[{"name":"main","image":"busybox"}]}}`
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: []byte(raw)}}}
	out := map[string]any{}
	webhooktest.Mutate(t, Handler(webhooktest.Log), req, &out)
	spec := out["spec"].(map[string]any)
	assert.Equal(t, map[string]any{"futureSecurity": "x", "seccompProfile": map[string]any{"type": "RuntimeDefault"}}, spec["securityContext"])
	assert.Equal(t, float64(1), spec["futureSpec"])
}

func typicalRequest(t testing.TB) admission.Request {
	return webhooktest.Request(t, admissionv1.Create, pod(&corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}), nil)
}

func BenchmarkSeccompProfile(b *testing.B) {
	wh := webhook.Admission(Name, Path, Handler(webhooktest.Log), webhooktest.Log)
	webhooktest.BenchmarkAdmission(b, wh, webhooktest.AdmissionReview(b, typicalRequest(b)))
}

func FuzzSeccompProfile(f *testing.F) {
	webhooktest.FuzzAdmission(f, webhook.Admission(Name, Path, Handler(webhooktest.Log), webhooktest.Log), webhooktest.AdmissionReview(f, typicalRequest(f)))
}
