// Package webhooktest helps test admission handlers: review an object as the kube-apiserver
// would send it, read back the mutated object, and fuzz a webhook's request decoding.
package webhooktest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gardener-knative/gardener-knative/pkg/webhook"
)

// Log discards.
var Log = slog.New(slog.NewTextHandler(io.Discard, nil))

// Request builds an admission request for obj (and oldObj, for UPDATE and DELETE) with the
// given operation; namespace and kind are taken from the objects.
func Request(t testing.TB, op admissionv1.Operation, obj, oldObj runtime.Object) admission.Request {
	t.Helper()
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: types.UID("test-uid"), Operation: op, UserInfo: authenticationv1.UserInfo{Username: "test"},
	}}
	for _, o := range []runtime.Object{obj, oldObj} {
		if o == nil {
			continue
		}
		if m, ok := o.(metav1.Object); ok {
			req.Namespace, req.Name = m.GetNamespace(), m.GetName()
		}
		gvk := o.GetObjectKind().GroupVersionKind()
		req.Kind = metav1.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind}
	}
	if obj != nil {
		req.Object = runtime.RawExtension{Raw: mustJSON(t, obj)}
	}
	if oldObj != nil {
		req.OldObject = runtime.RawExtension{Raw: mustJSON(t, oldObj)}
	}
	return req
}

// Mutate reviews obj with handler and decodes the patched result into out (which may be obj).
// It fails the test when the handler does not allow the object.
func Mutate(t testing.TB, handler admission.Handler, req admission.Request, out any) admission.Response {
	t.Helper()
	resp := handler.Handle(context.Background(), req)
	if !resp.Allowed {
		t.Fatalf("not allowed: %+v", resp.Result)
	}
	patched := req.Object.Raw
	if len(resp.Patches) > 0 {
		ops, err := json.Marshal(resp.Patches)
		if err != nil {
			t.Fatal(err)
		}
		patch, err := jsonpatch.DecodePatch(ops)
		if err != nil {
			t.Fatal(err)
		}
		if patched, err = patch.Apply(req.Object.Raw); err != nil {
			t.Fatal(err)
		}
	}
	if err := json.Unmarshal(patched, out); err != nil {
		t.Fatal(err)
	}
	return resp
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// AdmissionReview wraps a request into the body the kube-apiserver POSTs.
func AdmissionReview(t testing.TB, req admission.Request) []byte {
	t.Helper()
	return mustJSON(t, admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  &req.AdmissionRequest,
	})
}

// FuzzAdmission fuzzes the body POSTed to an admission webhook: whatever arrives, the webhook
// answers 200 with a well-formed AdmissionReview (an error response for garbage), never
// panics and never hangs. Seeds are AdmissionReview bodies.
func FuzzAdmission(f *testing.F, wh webhook.Webhook, seeds ...[]byte) {
	for _, s := range append(seeds, []byte(`{}`), []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`), []byte(`not json`)) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, wh.Path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		wh.Handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("HTTP %d: %s", rec.Code, rec.Body.String())
		}
		var review admissionv1.AdmissionReview
		if err := json.Unmarshal(rec.Body.Bytes(), &review); err != nil || review.Response == nil {
			t.Fatalf("not an AdmissionReview answer (%v): %s", err, rec.Body.String())
		}
	})
}

// BenchmarkAdmission measures the webhook answering body, AdmissionReview decoding and
// encoding included, as the kube-apiserver's request reaches it.
func BenchmarkAdmission(b *testing.B, wh webhook.Webhook, body []byte) {
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, wh.Path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		wh.Handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("HTTP %d", rec.Code)
		}
	}
}
