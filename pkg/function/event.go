package function

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Decode returns the event's object as a T, for predicates and mappers that decide on typed
// fields. It returns nil and no error for a Reference-mode event (no object), and a Terminal
// error for an object that does not decode: a predicate treats either as "cannot tell here" and
// lets the reconcile read the object properly.
func Decode[T any](ev Event) (*T, error) {
	if ev.Object == nil {
		return nil, nil
	}
	obj := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(ev.Object.Object, obj); err != nil {
		return nil, Terminal(fmt.Errorf("decoding %s %s: %w", ev.Kind.Kind, ev.Key, err))
	}
	return obj, nil
}

// SpecUnobserved says that the event's object has a spec its controller has not observed yet
// (metadata.generation ahead of status.observedGeneration). False without an object.
func (e Event) SpecUnobserved() bool {
	if e.Object == nil {
		return false
	}
	observed, _, _ := unstructured.NestedInt64(e.Object.Object, "status", "observedGeneration")
	return e.Object.GetGeneration() != observed
}
