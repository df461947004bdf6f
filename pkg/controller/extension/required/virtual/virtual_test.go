package virtual

import (
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func TestRequired(t *testing.T) {
	installation := func(conditions ...gardencorev1beta1.Condition) gardencorev1beta1.ControllerInstallation {
		ci := gardencorev1beta1.ControllerInstallation{}
		ci.Status.Conditions = conditions
		return ci
	}
	required := func(s gardencorev1beta1.ConditionStatus) gardencorev1beta1.Condition {
		return gardencorev1beta1.Condition{Type: gardencorev1beta1.ControllerInstallationRequired, Status: s}
	}
	for _, tc := range []struct {
		name          string
		installations []gardencorev1beta1.ControllerInstallation
		want          bool
	}{
		{"none", nil, false},
		{"no Required condition", []gardencorev1beta1.ControllerInstallation{installation(gardencorev1beta1.Condition{Type: "Installed", Status: "True"})}, false},
		{"not required", []gardencorev1beta1.ControllerInstallation{installation(required(gardencorev1beta1.ConditionFalse))}, false},
		{"unknown", []gardencorev1beta1.ControllerInstallation{installation(required(gardencorev1beta1.ConditionUnknown))}, false},
		{"one of two required", []gardencorev1beta1.ControllerInstallation{installation(required(gardencorev1beta1.ConditionFalse)), installation(required(gardencorev1beta1.ConditionTrue))}, true},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, Required(tc.installations)) })
	}
}

func TestInstallationPredicate(t *testing.T) {
	assert.True(t, InstallationPredicate(function.Event{Object: &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"registrationRef": map[string]any{"name": "a"}}}}}))
	assert.False(t, InstallationPredicate(function.Event{Object: &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}}))
	assert.False(t, InstallationPredicate(function.Event{}))
}
