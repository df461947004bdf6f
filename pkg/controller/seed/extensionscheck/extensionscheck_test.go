package extensionscheck

import (
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gardener-knative/gardener-knative/pkg/function"
)

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// installation has the four checked conditions, healthy, with the given statuses overridden.
func installation(name string, override map[gardencorev1beta1.ConditionType]gardencorev1beta1.ConditionStatus, drop ...gardencorev1beta1.ConditionType) gardencorev1beta1.ControllerInstallation {
	ci := gardencorev1beta1.ControllerInstallation{ObjectMeta: metav1.ObjectMeta{Name: name}}
	statuses := map[gardencorev1beta1.ConditionType]gardencorev1beta1.ConditionStatus{
		gardencorev1beta1.ControllerInstallationValid: "True", gardencorev1beta1.ControllerInstallationInstalled: "True",
		gardencorev1beta1.ControllerInstallationHealthy: "True", gardencorev1beta1.ControllerInstallationProgressing: "False",
	}
	for _, t := range checked {
		status := statuses[t]
		if s, ok := override[t]; ok {
			status = s
		}
		dropped := false
		for _, d := range drop {
			dropped = dropped || d == t
		}
		if !dropped {
			ci.Status.Conditions = append(ci.Status.Conditions, gardencorev1beta1.Condition{Type: t, Status: status, Message: string(t) + " of " + name})
		}
	}
	return ci
}

func TestCondition(t *testing.T) {
	healthy := installation("a", nil)
	for name, tc := range map[string]struct {
		installations []gardencorev1beta1.ControllerInstallation
		current       *gardencorev1beta1.Condition
		threshold     time.Duration
		wantStatus    gardencorev1beta1.ConditionStatus
		wantReason    string
		wantMessage   string
	}{
		"all healthy":   {[]gardencorev1beta1.ControllerInstallation{healthy, installation("b", nil)}, nil, 0, "True", ReasonReady, MessageReady},
		"none is ready": {nil, nil, 0, "True", ReasonReady, MessageReady},
		"not valid wins over the rest": {[]gardencorev1beta1.ControllerInstallation{
			installation("b", map[gardencorev1beta1.ConditionType]gardencorev1beta1.ConditionStatus{gardencorev1beta1.ControllerInstallationHealthy: "False"}),
			installation("c", map[gardencorev1beta1.ConditionType]gardencorev1beta1.ConditionStatus{gardencorev1beta1.ControllerInstallationValid: "False"}),
		}, nil, 0, "False", ReasonNotValid, "Some extensions are not valid: map[c:Valid of c]"},
		"never installed": {[]gardencorev1beta1.ControllerInstallation{{ObjectMeta: metav1.ObjectMeta{Name: "new"}}}, nil, 0, "False", ReasonNotInstalled,
			"Some extensions are not installed: map[new:extension was not yet installed]"},
		"not healthy, sorted": {[]gardencorev1beta1.ControllerInstallation{
			installation("z", map[gardencorev1beta1.ConditionType]gardencorev1beta1.ConditionStatus{gardencorev1beta1.ControllerInstallationHealthy: "Unknown"}),
			installation("b", map[gardencorev1beta1.ConditionType]gardencorev1beta1.ConditionStatus{gardencorev1beta1.ControllerInstallationHealthy: "False"}),
		}, nil, 0, "False", ReasonNotHealthy, "Some extensions are not healthy: map[b:Healthy of b z:Healthy of z]"},
		"a missing condition is unhealthy": {[]gardencorev1beta1.ControllerInstallation{installation("b", nil, gardencorev1beta1.ControllerInstallationProgressing)}, nil, 0, "False", ReasonNotHealthy,
			"Some extensions are not healthy: map[b:not all required conditions found in ControllerInstallation]"},
		"progressing": {[]gardencorev1beta1.ControllerInstallation{installation("b", map[gardencorev1beta1.ConditionType]gardencorev1beta1.ConditionStatus{gardencorev1beta1.ControllerInstallationProgressing: "True"})}, nil, 0, "False", ReasonProgressing,
			"Some extensions are progressing: map[b:Progressing of b]"},
		"threshold after True": {[]gardencorev1beta1.ControllerInstallation{installation("b", map[gardencorev1beta1.ConditionType]gardencorev1beta1.ConditionStatus{gardencorev1beta1.ControllerInstallationProgressing: "True"})},
			&gardencorev1beta1.Condition{Type: gardencorev1beta1.SeedExtensionsReady, Status: "True", LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}, time.Minute, "Progressing", ReasonProgressing,
			"Some extensions are progressing: map[b:Progressing of b]"},
	} {
		t.Run(name, func(t *testing.T) {
			got := Condition(now, tc.threshold, tc.current, tc.installations)
			assert.Equal(t, gardencorev1beta1.SeedExtensionsReady, got.Type)
			assert.Equal(t, tc.wantStatus, got.Status)
			assert.Equal(t, tc.wantReason, got.Reason)
			assert.Equal(t, tc.wantMessage, got.Message)
		})
	}
}

func TestPredicateAndMapper(t *testing.T) {
	withSeed := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"seedRef": map[string]any{"name": "s1"}}}}
	assert.True(t, ControllerInstallationPredicate(function.Event{Object: withSeed}))
	assert.True(t, ControllerInstallationPredicate(function.Event{Deleted: true, Object: withSeed}))
	assert.False(t, ControllerInstallationPredicate(function.Event{Object: &unstructured.Unstructured{Object: map[string]any{}}}))
	keys, err := MapControllerInstallationToSeed(t.Context(), nil, function.Event{Object: withSeed})
	assert.NoError(t, err)
	assert.Equal(t, []function.Key{{Name: "s1"}}, keys)
}
