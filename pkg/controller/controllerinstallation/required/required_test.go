package required

import (
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/sets"
)

func TestDecide(t *testing.T) {
	worker := gardencorev1beta1.ControllerResource{Kind: "Worker", Type: "foo"}
	infra := gardencorev1beta1.ControllerResource{Kind: "Infrastructure", Type: "foo"}
	tests := []struct {
		name      string
		resources []gardencorev1beta1.ControllerResource
		existing  TypesByKind
		want      Decision
		decided   bool
	}{
		{"no resources served: not required", nil, TypesByKind{}, Decision{Message: MessageNoExtensionObjects}, true},
		{"no object of the type", []gardencorev1beta1.ControllerResource{worker}, TypesByKind{"Worker": sets.New("bar")},
			Decision{Message: MessageNoExtensionObjects}, true},
		{"an object of the kind and type", []gardencorev1beta1.ControllerResource{worker}, TypesByKind{"Worker": sets.New("foo")},
			Decision{Required: true, Message: "extension objects still exist in the seed: [Worker/foo]"}, true},
		{"the type under another kind does not count", []gardencorev1beta1.ControllerResource{worker}, TypesByKind{"Worker": sets.New[string](), "Infrastructure": sets.New("foo")},
			Decision{Message: MessageNoExtensionObjects}, true},
		{"several combinations, sorted", []gardencorev1beta1.ControllerResource{worker, infra}, TypesByKind{"Worker": sets.New("foo"), "Infrastructure": sets.New("foo")},
			Decision{Required: true, Message: "extension objects still exist in the seed: [Infrastructure/foo Worker/foo]"}, true},
		{"a kind not read and none found: undecided", []gardencorev1beta1.ControllerResource{worker, {Kind: "Unknown", Type: "foo"}}, TypesByKind{"Worker": sets.New[string]()},
			Decision{}, false},
		{"a kind not read but another requires it", []gardencorev1beta1.ControllerResource{worker, {Kind: "Unknown", Type: "foo"}}, TypesByKind{"Worker": sets.New("foo")},
			Decision{Required: true, Message: "extension objects still exist in the seed: [Worker/foo]"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, decided := Decide(tt.resources, tt.existing)
			require.Equal(t, tt.decided, decided)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestDecisionCondition(t *testing.T) {
	require.Equal(t, gardencorev1beta1.ConditionTrue, Decision{Required: true}.Status())
	require.Equal(t, "ExtensionObjectsExist", Decision{Required: true}.Reason())
	require.Equal(t, gardencorev1beta1.ConditionFalse, Decision{}.Status())
	require.Equal(t, "NoExtensionObjects", Decision{}.Reason())
}

func TestRequiringTypes(t *testing.T) {
	worker := func(typ string, class *extensionsv1alpha1.ExtensionClass) extensionsv1alpha1.Object {
		w := &extensionsv1alpha1.Worker{}
		w.Spec.Type, w.Spec.Class = typ, class
		return w
	}
	class := func(c extensionsv1alpha1.ExtensionClass) *extensionsv1alpha1.ExtensionClass { return &c }
	tests := []struct {
		name    string
		objects []extensionsv1alpha1.Object
		want    sets.Set[string]
	}{
		{"none", nil, sets.New[string]()},
		{"no class means shoot", []extensionsv1alpha1.Object{worker("a", nil)}, sets.New("a")},
		{"shoot and seed count", []extensionsv1alpha1.Object{worker("a", class(extensionsv1alpha1.ExtensionClassShoot)), worker("b", class(extensionsv1alpha1.ExtensionClassSeed))}, sets.New("a", "b")},
		{"garden does not", []extensionsv1alpha1.Object{worker("a", class(extensionsv1alpha1.ExtensionClassGarden))}, sets.New[string]()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, RequiringTypes(tt.objects))
		})
	}
}

func TestSeedListsAreOnePerKindOnTheSeed(t *testing.T) {
	lists := SeedLists()
	require.Len(t, lists, 12)
	seen := map[string]bool{}
	for _, l := range lists {
		require.Equal(t, "target", string(l.Cluster))
		require.False(t, l.MetadataOnly, "the decision reads spec.type and spec.class")
		require.False(t, seen[l.Kind.Kind], "%s listed twice", l.Kind.Kind)
		seen[l.Kind.Kind] = true
	}
}
