package exposureclass

import (
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	"github.com/gardener-knative/gardener-knative/pkg/controller/referenceprotection"
	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func TestFunctionIsValid(t *testing.T) {
	require.NoError(t, Function.Validate())
}

func TestShootReferences(t *testing.T) {
	s := &gardencorev1beta1.Shoot{}
	assert.Empty(t, ShootReferences(s))
	s.Spec.ExposureClassName = ptr.To("internet")
	assert.Equal(t, []function.Key{{Name: "internet"}}, ShootReferences(s))
}

func TestBlockedMessage(t *testing.T) {
	assert.Equal(t, "Cannot delete ExposureClass, because it is still associated by the following Shoots: [garden-a/s]",
		Protection.Blocked(function.Key{Name: "internet"}, []referenceprotection.Referencing{{Kind: "Shoot", Names: []string{"garden-a/s"}}}))
}
