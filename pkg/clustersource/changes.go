package clustersource

import (
	"strconv"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gardener-knative/gardener-knative/pkg/function"
)

// changeTracker tells of each event which of its parts changed (function.Changes), for the
// Triggers that let through only the updates a function acts on. It holds a fingerprint per
// object it sent an event of (its UID and one hash per part: keys and hashes, never objects),
// compared with the next; what it has not seen counts as changed in every part.
type changeTracker struct {
	parts      []string
	attributes []string
	seen       map[types.UID][]uint64
}

// newChangeTracker tracks parts; nil (tracking nothing, setting no attribute) for none.
func newChangeTracker(parts []string) *changeTracker {
	if len(parts) == 0 {
		return nil
	}
	t := &changeTracker{parts: parts, seen: map[types.UID][]uint64{}}
	for _, part := range parts {
		t.attributes = append(t.attributes, function.ChangeAttribute(part))
	}
	return t
}

// mark sets the change attributes on event, an add, update or delete of obj, and remembers obj's
// fingerprint (forgets it on a delete).
func (t *changeTracker) mark(event *cloudevents.Event, obj *unstructured.Unstructured, deleted bool) {
	if t == nil {
		return
	}
	uid := obj.GetUID()
	previous, known := t.seen[uid]
	current := function.Fingerprint(obj, t.parts)
	if deleted {
		delete(t.seen, uid)
	} else {
		t.seen[uid] = current
	}
	for i, name := range t.attributes {
		event.SetExtension(name, strconv.FormatBool(deleted || !known || previous[i] != current[i]))
	}
}

// forget drops every fingerprint: after a gap in the watch (its place gone), the objects deleted
// meanwhile would stay held forever, and the first event of each object says every part changed.
func (t *changeTracker) forget() {
	if t != nil {
		clear(t.seen)
	}
}
