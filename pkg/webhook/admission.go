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
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	sigsjson "sigs.k8s.io/json"
)

// Admission serves an admission handler: controller-runtime decodes the AdmissionReview
// (v1 or v1beta1) and answers malformed or wrong-kind requests with a well-formed error
// response; panics are recovered into an error response.
func Admission(name, path string, handler admission.Handler, log *slog.Logger) Webhook {
	base := logrFrom(log.With("webhook", name))
	wh := &admission.Webhook{
		Handler: countOutcomes(name, handler),
		LogConstructor: func(_ logr.Logger, req *admission.Request) logr.Logger {
			if req == nil {
				return base
			}
			return requestLogger(base, "object", klog.KRef(req.Namespace, req.Name), "namespace", req.Namespace, "name", req.Name,
				"resource", req.Resource, "user", req.UserInfo.Username, "requestID", req.UID)
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
	// The webhook's series, looked up once rather than per request.
	allowed, patched, denied, errored := admissionResponses.WithLabelValues(name, "allowed"), admissionResponses.WithLabelValues(name, "patched"),
		admissionResponses.WithLabelValues(name, "denied"), admissionResponses.WithLabelValues(name, "errored")
	return admission.HandlerFunc(func(ctx context.Context, req admission.Request) admission.Response {
		resp := handler.Handle(ctx, req)
		switch {
		// Denials come as 403 (forbidden) or 422 (invalid); other codes are errors.
		case resp.Result != nil && resp.Result.Code >= 400 && resp.Result.Code != http.StatusForbidden && resp.Result.Code != http.StatusUnprocessableEntity:
			errored.Inc()
		case !resp.Allowed:
			denied.Inc()
		case len(resp.Patches) > 0:
			patched.Inc()
		default:
			allowed.Inc()
		}
		return resp
	})
}

// Decoded is what Patch needs to know of a request's object as Decode decoded it: whether the
// request held members the type lacks (a kube-apiserver newer than our k8s.io/api, or a
// member's name in another case) or drops (nulls), and only then a copy of the object before
// the mutation.
type Decoded struct {
	original runtime.Object
}

// Decode decodes the request's object (or, for DELETE, the old object) into obj,
// case-sensitively, as the kube-apiserver and controller-runtime's decoder do. It notes the
// members obj's type lacks in the same pass, so that a request without any (nearly all) costs
// Patch no second look at them.
func Decode(req admission.Request, obj runtime.Object) (Decoded, error) {
	raw := req.Object.Raw
	if req.Operation == admissionv1.Delete {
		raw = req.OldObject.Raw
	}
	unknown, err := sigsjson.UnmarshalStrict(raw, obj, sigsjson.DisallowUnknownFields)
	if err != nil {
		return Decoded{}, err
	}
	// A null is a member the typed encoding omits, so Patch keeps it as it keeps an unknown
	// one. The kube-apiserver sends none; a request that has one takes the exact path.
	if len(unknown) == 0 && !bytes.Contains(raw, []byte("null")) {
		return Decoded{}, nil
	}
	return Decoded{original: obj.DeepCopyObject()}, nil
}

// Patch answers with the JSON patch from the request's object to mutated (no patch when
// nothing changed). mutated is a pointer to the typed object the request's object was decoded
// into (decoded says how) and then mutated.
//
// The request's object may carry members that mutated's type does not know: the typed decode
// drops them, and a plain diff from the request's object to the re-encoded typed object would
// remove them. Patch keeps them: the patch changes only what the mutation changed (see
// keepUnknownFields).
func Patch(req admission.Request, decoded Decoded, mutated any) admission.Response {
	after, err := json.Marshal(mutated)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	resp := patchResponse(req.Object.Raw, after)
	// Only a removal can drop a member the types do not know: the diff is then redone with
	// those members put back. Most requests (types as new as the API server) stop here.
	if decoded.original == nil || !resp.Allowed || !slices.ContainsFunc(resp.Patches, func(op jsonpatch.JsonPatchOperation) bool { return op.Operation == "remove" }) {
		return resp
	}
	// An unstructured object knows every member: its removals are the mutation's.
	if _, ok := mutated.(runtime.Unstructured); ok {
		return resp
	}
	kept, err := keepUnknownFields(req.Object.Raw, decoded.original, after)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	if bytes.Equal(kept, after) {
		return resp // nothing unknown was removed: the first diff stands
	}
	return patchResponse(req.Object.Raw, kept)
}

// MutatorFunc mutates a decoded object of type T in place, or returns an error that is
// answered as a denial.
type MutatorFunc[T runtime.Object] func(ctx context.Context, req admission.Request, obj T) error

// Mutator adapts a MutatorFunc over objects of type T (new returns an empty T) into an
// admission handler: it decodes, mutates and answers with the patch.
func Mutator[T runtime.Object](newObj func() T, mutate MutatorFunc[T]) admission.Handler {
	return admission.HandlerFunc(func(ctx context.Context, req admission.Request) admission.Response {
		obj := newObj()
		decoded, err := Decode(req, obj)
		if err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		if err := mutate(ctx, req, obj); err != nil {
			return admission.Errored(http.StatusUnprocessableEntity, err)
		}
		return Patch(req, decoded, obj)
	})
}
