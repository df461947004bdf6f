package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Admission serves an admission handler: controller-runtime decodes the AdmissionReview
// (v1 or v1beta1) and answers malformed or wrong-kind requests with a well-formed error
// response; panics are recovered into an error response.
func Admission(name, path string, handler admission.Handler, log *slog.Logger) Webhook {
	base := logrFrom(log.With("webhook", name))
	wh := &admission.Webhook{
		Handler: countOutcomes(name, handler),
		LogConstructor: func(_ logr.Logger, req *admission.Request) logr.Logger {
			return admission.DefaultLogConstructor(base, req)
		},
	}
	wh.WithRecoverPanic(true)
	return Webhook{Name: name, Path: path, Handler: wh}
}

// admissionResponses counts admission answers by outcome; every server registers it.
var admissionResponses = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "gardener_knative_admission_responses_total",
	Help: "Admission responses by webhook and outcome (allowed, patched, denied, errored).",
}, []string{"webhook", "outcome"})

func countOutcomes(name string, handler admission.Handler) admission.Handler {
	return admission.HandlerFunc(func(ctx context.Context, req admission.Request) admission.Response {
		resp := handler.Handle(ctx, req)
		outcome := "allowed"
		switch {
		// Denials come as 403 (forbidden) or 422 (invalid); other codes are errors.
		case resp.Result != nil && resp.Result.Code >= 400 && resp.Result.Code != http.StatusForbidden && resp.Result.Code != http.StatusUnprocessableEntity:
			outcome = "errored"
		case !resp.Allowed:
			outcome = "denied"
		case len(resp.Patches) > 0:
			outcome = "patched"
		}
		admissionResponses.WithLabelValues(name, outcome).Inc()
		return resp
	})
}

// Decode decodes the request's object (or, for DELETE, the old object) into obj.
func Decode(req admission.Request, obj runtime.Object) error {
	raw := req.Object.Raw
	if req.Operation == admissionv1.Delete {
		raw = req.OldObject.Raw
	}
	return json.Unmarshal(raw, obj)
}

// Patch answers with the JSON patch from the request's object to mutated (no patch when
// nothing changed). mutated is a pointer to the typed object the request's object was decoded
// into and then mutated.
//
// The request's object may carry fields that mutated's type does not know (a kube-apiserver
// newer than our k8s.io/api): the typed decode drops them, and a plain diff from the request's
// object to the re-encoded typed object would remove them. Patch keeps them: the patch changes
// only what the mutation changed (see keepUnknownFields).
func Patch(req admission.Request, mutated any) admission.Response {
	return PatchFrom(req, nil, mutated)
}

// PatchFrom is Patch for a caller that kept the object as decoded, before the mutation
// (original, of mutated's type): the check for unknown fields then encodes it instead of
// decoding the request's object once more.
func PatchFrom(req admission.Request, original, mutated any) admission.Response {
	after, err := json.Marshal(mutated)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	resp := admission.PatchResponseFromRaw(req.Object.Raw, after)
	// Only a removal can drop a field the types do not know: the diff is then redone with
	// those fields put back. Most requests (types as new as the API server) stop here.
	if !resp.Allowed || !slices.ContainsFunc(resp.Patches, func(op jsonpatch.JsonPatchOperation) bool { return op.Operation == "remove" }) {
		return resp
	}
	// An unstructured object knows every field: its removals are the mutation's.
	if _, ok := mutated.(runtime.Unstructured); ok {
		return resp
	}
	kept, err := keepUnknownFields(req.Object.Raw, original, mutated, after)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	if bytes.Equal(kept, after) {
		return resp // nothing was unknown: the first diff stands
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, kept)
}

// MutatorFunc mutates a decoded object of type T in place, or returns an error that is
// answered as a denial.
type MutatorFunc[T runtime.Object] func(ctx context.Context, req admission.Request, obj T) error

// Mutator adapts a MutatorFunc over objects of type T (new returns an empty T) into an
// admission handler: it decodes, mutates and answers with the patch.
func Mutator[T runtime.Object](newObj func() T, mutate MutatorFunc[T]) admission.Handler {
	return admission.HandlerFunc(func(ctx context.Context, req admission.Request) admission.Response {
		obj := newObj()
		if err := Decode(req, obj); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		original := obj.DeepCopyObject()
		if err := mutate(ctx, req, obj); err != nil {
			return admission.Errored(http.StatusUnprocessableEntity, err)
		}
		return PatchFrom(req, original, obj)
	})
}
