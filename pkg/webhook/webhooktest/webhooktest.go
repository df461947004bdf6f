// Package webhooktest helps test admission handlers: review an object as the kube-apiserver
// would send it, read back the mutated object, and fuzz a webhook's request decoding.
package webhooktest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gardener-knative/gardener-knative/pkg/webhook"
)

// Log discards.
var Log = slog.New(slog.NewTextHandler(io.Discard, nil))

// Request builds an admission request for obj (and oldObj, for UPDATE and DELETE) with the
// given operation; namespace and kind are taken from the objects.
func Request(t testing.TB, op admissionv1.Operation, obj, oldObj runtime.Object) admission.Request {
	t.Helper()
	req, err := NewRequest(op, obj, oldObj)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// NewRequest is Request outside tests (e.g. hack/webhookload): it returns the encoding error.
func NewRequest(op admissionv1.Operation, obj, oldObj runtime.Object) (admission.Request, error) {
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
	var err error
	if obj != nil {
		if req.Object.Raw, err = json.Marshal(obj); err != nil {
			return admission.Request{}, err
		}
	}
	if oldObj != nil {
		if req.OldObject.Raw, err = json.Marshal(oldObj); err != nil {
			return admission.Request{}, err
		}
	}
	return req, nil
}

// Mutate reviews obj with handler and decodes the patched result into out (which may be obj).
// It fails the test when the handler does not allow the object.
func Mutate(t testing.TB, handler admission.Handler, req admission.Request, out any) admission.Response {
	t.Helper()
	return MutateIn(t, context.Background(), handler, req, out)
}

// MutateIn is Mutate for a request with ctx (e.g. a tenant's, with its settings).
func MutateIn(t testing.TB, ctx context.Context, handler admission.Handler, req admission.Request, out any) admission.Response {
	t.Helper()
	resp := handler.Handle(ctx, req)
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

// AdmissionReview wraps a request into the body the kube-apiserver POSTs.
func AdmissionReview(t testing.TB, req admission.Request) []byte {
	t.Helper()
	body, err := NewAdmissionReview(req)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// NewAdmissionReview is AdmissionReview outside tests: it returns the encoding error.
func NewAdmissionReview(req admission.Request) ([]byte, error) {
	return json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  &req.AdmissionRequest,
	})
}

// ServingAddr is the host:port serving says the webhook server listens at.
func ServingAddr(serving *envtest.WebhookInstallOptions) string {
	return serving.LocalServingHost + ":" + strconv.Itoa(serving.LocalServingPort)
}

// StartServer serves webhooks over TLS at serving's address with serving's certificate (which
// a kube-apiserver or client trusts through serving.LocalServingCAData), as the server command
// does, until ctx ends. It returns once the server accepts connections; served reports how
// serving ended.
func StartServer(ctx context.Context, serving *envtest.WebhookInstallOptions, webhooks []webhook.Webhook, log *slog.Logger) (served <-chan error, err error) {
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- webhook.Serve(ctx, webhook.ServeOptions{
			Addr:           ServingAddr(serving),
			CertFile:       filepath.Join(serving.LocalServingCertDir, "tls.crt"),
			KeyFile:        filepath.Join(serving.LocalServingCertDir, "tls.key"),
			RequestTimeout: 10 * time.Second, ShutdownTimeout: 5 * time.Second,
			Ready: func(net.Addr) { close(ready) },
		}, webhooks, prometheus.NewRegistry(), log)
	}()
	select {
	case <-ready:
		return done, nil
	case err := <-done:
		return nil, err
	case <-time.After(10 * time.Second):
		return nil, errors.New("webhook server did not start")
	}
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
