package function

import (
	"encoding/json"
	"fmt"
	"net/http"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The CloudEvent types the sources send (knative.dev/eventing/pkg/apis/sources and
// sourcesv1.PingSourceEventType; spelled out here so that function binaries do not link
// Knative's API machinery, and checked against Knative's constants by a test).
const (
	PingEventType = "dev.knative.sources.ping"

	ResourceAddEventType    = "dev.knative.apiserver.resource.add"
	ResourceUpdateEventType = "dev.knative.apiserver.resource.update"
	ResourceDeleteEventType = "dev.knative.apiserver.resource.delete"
	RefAddEventType         = "dev.knative.apiserver.ref.add"
	RefUpdateEventType      = "dev.knative.apiserver.ref.update"
	RefDeleteEventType      = "dev.knative.apiserver.ref.delete"
)

// eventError is an event the function will never be able to handle: the answer is final.
type eventError struct {
	code   int
	reason string
}

func (e *eventError) Error() string { return e.reason }

func rejected(format string, args ...any) error {
	return &eventError{code: http.StatusBadRequest, reason: fmt.Sprintf(format, args...)}
}

func unprocessable(format string, args ...any) error {
	return &eventError{code: http.StatusUnprocessableEntity, reason: fmt.Sprintf(format, args...)}
}

// objectOf decodes the object an ApiServerSource event is about. ok is false when the event
// is not an ApiServerSource event.
func objectOf(e cloudevents.Event) (obj Object, ok bool, err error) {
	switch e.Type() {
	case RefAddEventType, RefUpdateEventType, RefDeleteEventType:
		var ref corev1.ObjectReference
		if err := json.Unmarshal(e.Data(), &ref); err != nil {
			return Object{}, true, rejected("%s event data is not an object reference: %v", e.Type(), err)
		}
		obj.GVK = schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
		obj.Key = Key{Namespace: ref.Namespace, Name: ref.Name}
	case ResourceAddEventType, ResourceUpdateEventType, ResourceDeleteEventType:
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(e.Data()); err != nil {
			return Object{}, true, rejected("%s event data is not a Kubernetes object: %v", e.Type(), err)
		}
		obj.GVK = u.GroupVersionKind()
		obj.Key = Key{Namespace: u.GetNamespace(), Name: u.GetName()}
		obj.Resource = u
	default:
		return Object{}, false, nil
	}
	if obj.GVK.Kind == "" || obj.GVK.Version == "" || obj.Key.Name == "" {
		return Object{}, true, rejected("%s event names no object: apiVersion, kind and name are required", e.Type())
	}
	obj.Deleted = e.Type() == RefDeleteEventType || e.Type() == ResourceDeleteEventType
	return obj, true, nil
}

// pingPayload is the data of the PingSources in sources: which sweep to run.
type pingPayload struct {
	Sweep string `json:"sweep"`
}

func sweepOf(e cloudevents.Event) (string, error) {
	var p pingPayload
	if len(e.Data()) == 0 {
		return "", unprocessable(`ping carries no data; expected {"sweep":"<name>"}`)
	}
	if err := json.Unmarshal(e.Data(), &p); err != nil || p.Sweep == "" {
		return "", unprocessable(`ping data %q is not {"sweep":"<name>"}`, truncate(e.Data(), 200))
	}
	return p.Sweep, nil
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
