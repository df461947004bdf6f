package webhook

import (
	"context"
	"errors"
	"net/http"
	"reflect"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// DefaulterFunc defaults a decoded object of type T in place. An error denies the request (see
// Defaulter for how it is answered).
type DefaulterFunc[T runtime.Object] func(ctx context.Context, req admission.Request, obj T) error

// Defaulter adapts a DefaulterFunc into an admission handler that answers as
// controller-runtime's CustomDefaulter (admission.WithCustomDefaulter) does. Gardener builds
// its pod-scheduler-name, seccomp-profile, pod-kube-apiserver-load-balancing and
// vpa-in-place-updates webhooks on that, so their answers are these:
//   - DELETE: allowed untouched (code 200) without decoding anything;
//   - an object that does not decode with decoder: 400;
//   - an error that carries an API status (e.g. a read's NotFound, even wrapped): denied with
//     exactly that status;
//   - any other error: denied, 403 Forbidden with the error as message;
//   - unchanged: allowed without a patch; changed: the patch (Patch, which keeps the fields
//     T does not know).
//
// decoder is controller-runtime's (admission.NewDecoder) over a scheme that knows T, as
// Gardener's; for *unstructured.Unstructured it decodes any object.
func Defaulter[T runtime.Object](decoder admission.Decoder, newObj func() T, defaultObj DefaulterFunc[T]) admission.Handler {
	return admission.HandlerFunc(func(ctx context.Context, req admission.Request) admission.Response {
		if req.Operation == admissionv1.Delete {
			return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{
				Allowed: true,
				Result:  &metav1.Status{Code: http.StatusOK},
			}}
		}
		obj := newObj()
		if err := decoder.Decode(req, obj); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		original := obj.DeepCopyObject()
		if err := defaultObj(ctx, req, obj); err != nil {
			var apiStatus apierrors.APIStatus
			if errors.As(err, &apiStatus) {
				status := apiStatus.Status()
				return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &status}}
			}
			return admission.Denied(err.Error())
		}
		// Unchanged needs no patch: a diff could only find differences of encoding.
		if reflect.DeepEqual(original, runtime.Object(obj)) {
			return admission.Allowed("")
		}
		// controller-runtime's decoder does not say whether the request held members T lacks:
		// Patch checks, if the patch removes anything.
		return Patch(req, Decoded{original: original}, obj)
	})
}

// ObjectKeyForCreate names the object of a request in logs ("namespace/name"): a CREATE's
// object may lack its namespace (kubernetes/kubernetes#88282), which the request then has, and
// its name, when it has a generateName instead.
func ObjectKeyForCreate(obj metav1.Object, req admission.Request) string {
	namespace, name := obj.GetNamespace(), obj.GetName()
	if namespace == "" {
		namespace = req.Namespace
	}
	if name == "" {
		name = obj.GetGenerateName()
	}
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}
