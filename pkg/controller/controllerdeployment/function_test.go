package controllerdeployment

import (
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gardener-knative/gardener-knative/pkg/controller/referenceprotection"
	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func TestFunctionIsValid(t *testing.T) {
	require.NoError(t, Function.Validate())
	assert.False(t, Protection.RecordEvent, "Gardener records no Event for ControllerDeployments")
}

func TestControllerRegistrationReferences(t *testing.T) {
	r := &gardencorev1beta1.ControllerRegistration{}
	assert.Empty(t, ControllerRegistrationReferences(r), "no deployment")
	r.Spec.Deployment = &gardencorev1beta1.ControllerRegistrationDeployment{DeploymentRefs: []gardencorev1beta1.DeploymentRef{{Name: "provider-local"}}}
	assert.Equal(t, []function.Key{{Name: "provider-local"}}, ControllerRegistrationReferences(r))
}

func TestBlockedMessage(t *testing.T) {
	assert.Equal(t, `cannot remove finalizer of ControllerDeployment "provider-local" because still found ControllerRegistrations: [a b]`,
		Protection.Blocked(function.Key{Name: "provider-local"}, []referenceprotection.Referencing{{Kind: "ControllerRegistration", Names: []string{"a", "b"}}}))
}
