package tokeninvalidator

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

	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/webhook"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/webhooktest"
)

func secret(labels map[string]string, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: "sa-token", Namespace: "kube-system", Labels: labels},
		Type:       corev1.SecretTypeServiceAccountToken,
		Data:       data,
	}
}

var consider = map[string]string{LabelConsider: "true"}

// Gardener v1.113's handler cases, through the admission path.
func TestInvalidate(t *testing.T) {
	for _, tc := range []struct {
		name      string
		labels    map[string]string
		data      map[string][]byte
		wantToken []byte
		patched   bool
	}{
		{name: "data nil", labels: consider, data: nil, wantToken: nil},
		{name: "consider label: invalidated", labels: consider, data: map[string][]byte{"ca.crt": []byte("key"), "token": []byte("token")}, wantToken: InvalidToken, patched: true},
		{name: "consider label, already invalid", labels: consider, data: map[string][]byte{"token": InvalidToken}, wantToken: InvalidToken},
		{name: "consider label, no token yet: invalid one set", labels: consider, data: map[string][]byte{"ca.crt": []byte("key")}, wantToken: InvalidToken, patched: true},
		{name: "no label, invalid token: removed for regeneration", data: map[string][]byte{"ca.crt": []byte("key"), "token": InvalidToken}, wantToken: nil, patched: true},
		{name: "no label, valid token: kept", data: map[string][]byte{"ca.crt": []byte("key"), "token": []byte("token")}, wantToken: []byte("token")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := &corev1.Secret{}
			resp := webhooktest.Mutate(t, Handler(), webhooktest.Request(t, admissionv1.Update, secret(tc.labels, tc.data), nil), out)
			assert.Equal(t, tc.wantToken, out.Data[corev1.ServiceAccountTokenKey])
			assert.Equal(t, tc.patched, len(resp.Patches) > 0)
			if tc.data != nil {
				assert.Equal(t, tc.data["ca.crt"], out.Data["ca.crt"], "other keys untouched")
			}
		})
	}
}

// As controller-runtime's CustomDefaulter, on which Gardener built the webhook.
func TestDeleteAndMalformedObjects(t *testing.T) {
	h := Handler()
	del := h.Handle(context.Background(), webhooktest.Request(t, admissionv1.Delete, nil, secret(consider, nil)))
	assert.True(t, del.Allowed)
	assert.Equal(t, int32(http.StatusOK), del.Result.Code)
	for name, raw := range map[string]string{
		"not json":      `{"data":`,
		"another kind":  `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}`,
		"wrongly typed": `{"apiVersion":"v1","kind":"Secret","data":{"token":5}}`,
	} {
		t.Run(name, func(t *testing.T) {
			req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: []byte(raw)}}}
			resp := h.Handle(context.Background(), req)
			assert.False(t, resp.Allowed)
			assert.Equal(t, int32(http.StatusBadRequest), resp.Result.Code)
		})
	}
}

// Enabled by v1.113's webhooks.tokenInvalidator.enabled, which v1.150's type lacks.
func TestEnabled(t *testing.T) {
	file := &componentconfig.ResourceManagerFile{ResourceManagerConfiguration: &rmv1alpha1.ResourceManagerConfiguration{}}
	assert.False(t, Webhook.Enabled(file))
	file.Extensions.Webhooks.TokenInvalidator.Enabled = true
	assert.True(t, Webhook.Enabled(file))
	wh, err := Webhook.New(webhook.Deps{Config: file.ResourceManagerConfiguration, Log: webhooktest.Log})
	require.NoError(t, err)
	assert.Equal(t, Path, wh.Path)
}

func typicalRequest(t testing.TB) admission.Request {
	return webhooktest.Request(t, admissionv1.Create, secret(consider, map[string][]byte{"token": []byte("eyJhbGciOi")}), nil)
}

func BenchmarkTokenInvalidator(b *testing.B) {
	wh := webhook.Admission(Name, Path, Handler(), webhooktest.Log)
	webhooktest.BenchmarkAdmission(b, wh, webhooktest.AdmissionReview(b, typicalRequest(b)))
}

func FuzzTokenInvalidator(f *testing.F) {
	webhooktest.FuzzAdmission(f, webhook.Admission(Name, Path, Handler(), webhooktest.Log), webhooktest.AdmissionReview(f, typicalRequest(f)))
}
