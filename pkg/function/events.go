package function

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gardener-knative/gardener-knative/pkg/tenant"
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

// ClusterExtension is the CloudEvents extension a cluster's source sets (through its
// ceOverrides) to the cluster it watches: source (the cluster its part runs in), target (the
// tenants of a seed, or one target) or garden; events without it come from the Source cluster.
const ClusterExtension = "cluster"

// TenantExtension is the CloudEvents extension the multi-tenant event source sets on a Target
// event to the tenant (the shoot's control-plane namespace in the seed) whose cluster it watched.
const TenantExtension = "tenant"

// eventOf decodes the object an ApiServerSource event is about. ok is false when the event
// is not an ApiServerSource event.
func eventOf(e cloudevents.Event) (ev Event, ok bool, err error) {
	switch e.Type() {
	case RefAddEventType, RefUpdateEventType, RefDeleteEventType:
		var ref corev1.ObjectReference
		if err := json.Unmarshal(e.Data(), &ref); err != nil {
			return Event{}, true, rejected("%s event data is not an object reference: %v", e.Type(), err)
		}
		ev.Kind = schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
		ev.Key = Key{Namespace: ref.Namespace, Name: ref.Name}
	case ResourceAddEventType, ResourceUpdateEventType, ResourceDeleteEventType:
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(e.Data()); err != nil {
			return Event{}, true, rejected("%s event data is not a Kubernetes object: %v", e.Type(), err)
		}
		ev.Kind = u.GroupVersionKind()
		ev.Key = Key{Namespace: u.GetNamespace(), Name: u.GetName()}
		ev.Object = u
	default:
		return Event{}, false, nil
	}
	if ev.Kind.Kind == "" || ev.Kind.Version == "" || ev.Key.Name == "" {
		return Event{}, true, rejected("%s event names no object: apiVersion, kind and name are required", e.Type())
	}
	ev.Created = e.Type() == RefAddEventType || e.Type() == ResourceAddEventType
	ev.Deleted = e.Type() == RefDeleteEventType || e.Type() == ResourceDeleteEventType
	ev.Cluster = Source
	if c, ok := e.Extensions()[ClusterExtension]; ok {
		switch Cluster(fmt.Sprint(c)) {
		case Source:
		case Target:
			ev.Cluster = Target
		case Garden:
			ev.Cluster = Garden
		default:
			return Event{}, true, rejected("unknown %s extension %q", ClusterExtension, c)
		}
	}
	for name, value := range e.Extensions() {
		if !strings.HasPrefix(name, changeAttributePrefix) {
			continue
		}
		if changed, err := strconv.ParseBool(fmt.Sprint(value)); err == nil {
			if ev.changed == nil {
				ev.changed = map[string]bool{}
			}
			ev.changed[name] = changed
		}
	}
	if t, ok := e.Extensions()[TenantExtension]; ok {
		name := fmt.Sprint(t)
		if ev.Cluster != Target || len(validation.IsDNS1123Label(name)) > 0 {
			return Event{}, true, rejected("%s extension %q: a tenant is a namespace name, on target events only", TenantExtension, name)
		}
		ev.Tenant = tenant.Name(name)
	}
	return ev, true, nil
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
