package clustersource

import (
	"testing"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gardener-knative/gardener-knative/pkg/function"
)

// The tracker tells which parts each event of an object changed: all of them for what it has not
// seen (an add, an object first seen after the watch began or after a gap) and for a delete; for
// an update, exactly the parts that differ from the last event it told of.
func TestChangeTrackerTellsWhichPartsChanged(t *testing.T) {
	assert.Nil(t, newChangeTracker(nil), "nothing tracked, nothing held")
	tracker := newChangeTracker([]string{function.ChangedSpec, function.ChangedMetadata, function.StatusField("seedName")})
	object := func(uid, label string, maximum int64, seed string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"metadata": map[string]any{"uid": uid, "name": uid, "labels": map[string]any{"l": label}},
			"spec":     map[string]any{"maximum": maximum},
			"status":   map[string]any{"seedName": seed, "conditions": []any{label + seed}},
		}}
	}
	told := func(obj *unstructured.Unstructured, deleted bool) map[string]any {
		event := cloudevents.NewEvent()
		tracker.mark(&event, obj, deleted)
		return map[string]any{"spec": event.Extensions()["chspec"], "metadata": event.Extensions()["chmetadata"], "seedName": event.Extensions()["chseedname"]}
	}
	all := map[string]any{"spec": "true", "metadata": "true", "seedName": "true"}
	assert.Equal(t, all, told(object("a", "1", 3, "s1"), false), "first seen")
	assert.Equal(t, map[string]any{"spec": "false", "metadata": "false", "seedName": "false"}, told(object("a", "1", 3, "s1"), false), "nothing tracked changed")
	assert.Equal(t, map[string]any{"spec": "true", "metadata": "false", "seedName": "false"}, told(object("a", "1", 4, "s1"), false))
	assert.Equal(t, map[string]any{"spec": "false", "metadata": "true", "seedName": "false"}, told(object("a", "2", 4, "s1"), false))
	assert.Equal(t, map[string]any{"spec": "false", "metadata": "false", "seedName": "true"}, told(object("a", "2", 4, "s2"), false))
	assert.Equal(t, all, told(object("b", "2", 4, "s2"), false), "another object is its own")
	assert.Equal(t, all, told(object("a", "2", 4, "s2"), true), "a delete")
	assert.NotContains(t, tracker.seen, object("a", "", 0, "").GetUID(), "a deleted object is forgotten")
	tracker.forget()
	assert.Empty(t, tracker.seen)
	assert.Equal(t, all, told(object("b", "2", 4, "s2"), false), "after a gap, first seen again")
}
