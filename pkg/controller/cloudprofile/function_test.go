package cloudprofile

import (
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/utils/ptr"

	"github.com/gardener-knative/gardener-knative/pkg/controller/referenceprotection"
	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func TestFunctionIsValid(t *testing.T) {
	require.NoError(t, Function.Validate())
	assert.Contains(t, Function.RBAC, rbacv1.PolicyRule{APIGroups: []string{"core.gardener.cloud"}, Resources: []string{"cloudprofiles/status"}, Verbs: []string{"patch"}})
	_, ok := Function.Sweep(VersionsReconcilerName)
	assert.True(t, ok)
}

func TestShootReferences(t *testing.T) {
	shoot := func(name *string, ref *gardencorev1beta1.CloudProfileReference) *gardencorev1beta1.Shoot {
		s := &gardencorev1beta1.Shoot{}
		s.Namespace = "garden-dev"
		s.Spec.CloudProfileName, s.Spec.CloudProfile = name, ref
		return s
	}
	assert.Equal(t, []function.Key{{Name: "aws"}}, ShootReferences(shoot(ptr.To("aws"), nil)), "by spec.cloudProfileName")
	assert.Equal(t, []function.Key{{Name: "aws"}}, ShootReferences(shoot(nil, &gardencorev1beta1.CloudProfileReference{Kind: "CloudProfile", Name: "aws"})), "by spec.cloudProfile")
	assert.Equal(t, []function.Key{{Name: "aws"}, {Name: "aws"}}, ShootReferences(shoot(ptr.To("aws"), &gardencorev1beta1.CloudProfileReference{Kind: "CloudProfile", Name: "aws"})), "both (counted once by the mechanism)")
	assert.Empty(t, ShootReferences(shoot(nil, &gardencorev1beta1.CloudProfileReference{Kind: "NamespacedCloudProfile", Name: "aws"})), "a NamespacedCloudProfile is another object")
	assert.Empty(t, ShootReferences(shoot(nil, nil)))
}

func TestNamespacedCloudProfileReferences(t *testing.T) {
	p := &gardencorev1beta1.NamespacedCloudProfile{}
	p.Spec.Parent = gardencorev1beta1.CloudProfileReference{Kind: "CloudProfile", Name: "aws"}
	assert.Equal(t, []function.Key{{Name: "aws"}}, NamespacedCloudProfileReferences(p))
}

func TestBlockedMessages(t *testing.T) {
	assert.Equal(t, "Cannot delete CloudProfile, because the following NamespacedCloudProfiles are still referencing it: [garden-a/custom]",
		blocked(function.Key{Name: "aws"}, []referenceprotection.Referencing{{Kind: "NamespacedCloudProfile", Names: []string{"garden-a/custom"}}, {Kind: "Shoot", Names: []string{"garden-a/s"}}}),
		"NamespacedCloudProfiles first, alone, as Gardener reports them")
	assert.Equal(t, "Cannot delete CloudProfile, because the following Shoots are still referencing it: [garden-a/s garden-b/t]",
		blocked(function.Key{Name: "aws"}, []referenceprotection.Referencing{{Kind: "Shoot", Names: []string{"garden-a/s", "garden-b/t"}}}))
}
