package quota

import (
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	securityv1alpha1 "github.com/gardener/gardener/pkg/apis/security/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/gardener-knative/gardener-knative/pkg/controller/referenceprotection"
	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func TestFunctionIsValid(t *testing.T) {
	require.NoError(t, Function.Validate())
	for _, ref := range Protection.Referrers {
		assert.Nil(t, ref.ReferenceMayHaveChanged, "%s quotas are immutable: only deletions release", ref.Kind.Kind)
	}
}

func TestReferences(t *testing.T) {
	refs := []corev1.ObjectReference{{Namespace: "garden", Name: "trial"}, {Namespace: "garden-dev", Name: "project"}}
	want := []function.Key{{Namespace: "garden", Name: "trial"}, {Namespace: "garden-dev", Name: "project"}}
	assert.Equal(t, want, SecretBindingReferences(&gardencorev1beta1.SecretBinding{Quotas: refs}))
	assert.Equal(t, want, CredentialsBindingReferences(&securityv1alpha1.CredentialsBinding{Quotas: refs}))
	assert.Empty(t, SecretBindingReferences(&gardencorev1beta1.SecretBinding{}))
}

func TestBlockedMessage(t *testing.T) {
	assert.Equal(t, "Cannot delete Quota, because the following resources are still referencing it: SecretBindings - [garden-dev/sb], CredentialsBindings - []",
		Protection.Blocked(function.Key{Namespace: "garden", Name: "trial"}, []referenceprotection.Referencing{{Kind: "SecretBinding", Names: []string{"garden-dev/sb"}}}),
		"both kinds, as Gardener reports them")
}
