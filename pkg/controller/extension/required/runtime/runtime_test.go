package runtime

import (
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	operatorv1alpha1 "github.com/gardener/gardener/pkg/apis/operator/v1alpha1"
	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func TestRequiredKinds(t *testing.T) {
	ext := func(resources ...gardencorev1beta1.ControllerResource) operatorv1alpha1.Extension {
		e := operatorv1alpha1.Extension{}
		e.Spec.Resources = resources
		return e
	}
	local := ext(
		gardencorev1beta1.ControllerResource{Kind: "DNSRecord", Type: "local"},
		gardencorev1beta1.ControllerResource{Kind: "BackupBucket", Type: "local"},
		gardencorev1beta1.ControllerResource{Kind: "Extension", Type: "Audit"},
	)
	autoEnabled := ext(gardencorev1beta1.ControllerResource{Kind: "Extension", Type: "audit", AutoEnable: []gardencorev1beta1.ClusterType{"garden"}})
	shootOnly := ext(gardencorev1beta1.ControllerResource{Kind: "Extension", Type: "audit", AutoEnable: []gardencorev1beta1.ClusterType{"shoot"}})
	for _, tc := range []struct {
		name        string
		gardenTypes map[string]sets.Set[string]
		all         []operatorv1alpha1.Extension
		want        []string
	}{
		{name: "nothing in the garden"},
		{name: "objects of its kinds and types", gardenTypes: map[string]sets.Set[string]{"DNSRecord": sets.New("local"), "BackupBucket": sets.New("local", "aws")}, want: []string{"BackupBucket", "DNSRecord"}},
		{name: "objects of other types", gardenTypes: map[string]sets.Set[string]{"DNSRecord": sets.New("aws")}},
		{name: "auto-enabled for the garden (type case-insensitively)", all: []operatorv1alpha1.Extension{autoEnabled}, want: []string{"Extension"}},
		{name: "auto-enabled for shoots only", all: []operatorv1alpha1.Extension{shootOnly}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := RequiredKinds(&local, tc.gardenTypes, tc.all)
			if tc.want == nil {
				assert.Empty(t, got)
				return
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestGardenObjectPredicate(t *testing.T) {
	record := func(class string) *unstructured.Unstructured {
		spec := map[string]any{"type": "local"}
		if class != "" {
			spec["class"] = class
		}
		return &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	}
	assert.True(t, GardenObjectPredicate(function.Event{Object: record("garden"), Created: true}))
	assert.True(t, GardenObjectPredicate(function.Event{Object: record("garden"), Deleted: true}))
	assert.False(t, GardenObjectPredicate(function.Event{Object: record("garden")}), "class and type are immutable: updates change nothing")
	assert.False(t, GardenObjectPredicate(function.Event{Object: record(""), Created: true}), "a shoot's")
	assert.False(t, GardenObjectPredicate(function.Event{Object: record("seed"), Created: true}))
}

func TestExtensionPredicate(t *testing.T) {
	obj := func(generation, observed int64, conditions ...any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"metadata": map[string]any{"name": "a", "generation": generation},
			"status":   map[string]any{"observedGeneration": observed, "conditions": conditions},
		}}
	}
	condition := map[string]any{"type": "RequiredRuntime", "status": "False"}
	assert.True(t, ExtensionPredicate(function.Event{Object: obj(1, 0), Created: true}))
	assert.True(t, ExtensionPredicate(function.Event{Object: obj(1, 1)}), "no condition yet")
	assert.False(t, ExtensionPredicate(function.Event{Object: obj(1, 1, condition)}), "a status update")
	assert.True(t, ExtensionPredicate(function.Event{Object: obj(2, 1, condition)}), "a spec change")
	assert.False(t, ExtensionPredicate(function.Event{Object: obj(2, 1, condition), Deleted: true}))
}
