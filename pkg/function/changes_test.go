package function

import (
	"testing"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestChangeAttributesAreValidCloudEventsNames(t *testing.T) {
	assert.Equal(t, "chspec", ChangeAttribute(ChangedSpec))
	assert.Equal(t, "chmetadata", ChangeAttribute(ChangedMetadata))
	assert.Equal(t, "chstatus", ChangeAttribute(ChangedStatus))
	assert.Equal(t, "chobservedgeneration", ChangeAttribute(StatusField("observedGeneration")))
	assert.NoError(t, Changes{ChangedSpec, ChangedMetadata, StatusField("observedGeneration"), StatusField("lastOperation")}.Validate())
	assert.NoError(t, NoUpdates.Validate())
	assert.ErrorContains(t, Changes{"status.lastOperation.state"}.Validate(), "none of", "a field below a status field")
	assert.ErrorContains(t, Changes{"data"}.Validate(), "none of")
	assert.ErrorContains(t, Changes{StatusField("credentialsRotationStatus")}.Validate(), "longer than 20")
	assert.ErrorContains(t, Changes{StatusField("spec")}.Validate(), "would share its attribute", "status.spec would be told as spec")
	assert.ErrorContains(t, append(Changes{ChangedSpec}, NoUpdates...).Validate(), "no part beside it")
	assert.Empty(t, NoUpdates.Parts())
}

func shootContent(labels map[string]any, replicas int64, seed string, resourceVersion string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "core.gardener.cloud/v1beta1", "kind": "Shoot",
		"metadata": map[string]any{"name": "a", "namespace": "garden-a", "labels": labels, "resourceVersion": resourceVersion,
			"managedFields": []any{map[string]any{"manager": "gardenlet", "time": resourceVersion}}},
		"spec":   map[string]any{"workers": []any{map[string]any{"maximum": replicas}}},
		"status": map[string]any{"seedName": seed, "conditions": []any{map[string]any{"type": "APIServerAvailable", "lastUpdateTime": resourceVersion}}},
	}}
}

// A fingerprint differs exactly in the parts that changed; resourceVersion and managed fields,
// which change with every write, change none.
func TestFingerprintDiffersWhereAPartChanged(t *testing.T) {
	parts := []string{ChangedSpec, ChangedMetadata, ChangedStatus, StatusField("seedName")}
	base := Fingerprint(shootContent(map[string]any{"a": "1"}, 3, "s1", "1"), parts)
	changed := func(obj *unstructured.Unstructured) []bool {
		now := Fingerprint(obj, parts)
		out := make([]bool, len(parts))
		for i := range parts {
			out[i] = now[i] != base[i]
		}
		return out
	}
	sameButWritten := shootContent(map[string]any{"a": "1"}, 3, "s1", "1")
	sameButWritten.SetResourceVersion("2")
	assert.Equal(t, []bool{false, false, false, false}, changed(sameButWritten), "only resourceVersion and managed fields")
	assert.Equal(t, []bool{false, false, true, false}, changed(shootContent(map[string]any{"a": "1"}, 3, "s1", "2")), "a condition's probe time")
	assert.Equal(t, []bool{true, false, false, false}, changed(shootContent(map[string]any{"a": "1"}, 4, "s1", "1")), "the spec")
	assert.Equal(t, []bool{false, true, false, false}, changed(shootContent(map[string]any{"a": "2"}, 3, "s1", "1")), "a label")
	assert.Equal(t, []bool{false, false, true, true}, changed(shootContent(map[string]any{"a": "1"}, 3, "s2", "1")), "status.seedName")
}

func TestChangesOfAFunctionsKind(t *testing.T) {
	shoot := Kind{GroupVersionKind: schema.GroupVersionKind{Group: "core.gardener.cloud", Version: "v1beta1", Kind: "Shoot"}}
	fn := &Function{Watches: []Watch{
		{Kind: shoot, Changes: NoUpdates},
		{Kind: shoot, Changes: Changes{StatusField("seedName"), ChangedSpec}},
	}}
	parts, filtered := fn.ChangesOf(Source, shoot)
	assert.True(t, filtered)
	assert.Equal(t, []string{ChangedSpec, StatusField("seedName")}, parts)

	fn.Watches[0].Changes = NoUpdates
	fn.Watches = fn.Watches[:1]
	parts, filtered = fn.ChangesOf(Source, shoot)
	assert.True(t, filtered, "adds and deletes only")
	assert.Empty(t, parts)

	fn.Watches = append(fn.Watches, Watch{Kind: shoot})
	_, filtered = fn.ChangesOf(Source, shoot)
	assert.False(t, filtered, "a watch of every update lets every update through")
	_, filtered = fn.ChangesOf(Target, shoot)
	require.False(t, filtered, "no watch on the target")
}

// Inside the function, an update the source told of reaches only the watches whose parts it
// changed: the Trigger lets through what any watch of the function acts on.
func TestAnUpdateConcernsTheWatchesOfThePartsItChanged(t *testing.T) {
	update := Event{changed: map[string]bool{"chspec": false, "chmetadata": true}}
	assert.True(t, update.mayConcern(nil), "a watch of every update")
	assert.True(t, update.mayConcern(Changes{ChangedMetadata}))
	assert.False(t, update.mayConcern(Changes{ChangedSpec}), "a metadata write, as a finalizer patch")
	assert.True(t, update.mayConcern(Changes{ChangedSpec, ChangedMetadata}))
	assert.True(t, update.mayConcern(Changes{StatusField("seedName")}), "a part the source told nothing of")
	assert.False(t, update.mayConcern(NoUpdates))
	assert.True(t, Event{}.mayConcern(Changes{ChangedSpec}), "an event of an older source, which tells nothing")
	assert.True(t, Event{Created: true}.mayConcern(NoUpdates))
	assert.True(t, Event{Deleted: true, changed: map[string]bool{"chspec": false}}.mayConcern(Changes{ChangedSpec}))
}

func TestAnEventCarriesWhatTheSourceToldOfItsChanges(t *testing.T) {
	e := cloudevents.NewEvent()
	e.SetID("1")
	e.SetSource("test")
	e.SetType(ResourceUpdateEventType)
	e.SetExtension("chspec", "false")
	e.SetExtension("chseedname", "true")
	require.NoError(t, e.SetData(cloudevents.ApplicationJSON, map[string]any{"apiVersion": "core.gardener.cloud/v1beta1", "kind": "Shoot", "metadata": map[string]any{"namespace": "garden-a", "name": "a"}}))
	ev, ok, err := eventOf(e)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, map[string]bool{"chspec": false, "chseedname": true}, ev.changed)
	assert.False(t, ev.mayConcern(Changes{ChangedSpec}))
	assert.True(t, ev.mayConcern(Changes{StatusField("seedName")}))
}
