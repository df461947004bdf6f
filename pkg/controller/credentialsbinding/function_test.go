package credentialsbinding

import (
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	securityv1alpha1 "github.com/gardener/gardener/pkg/apis/security/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/gardener-knative/gardener-knative/pkg/controller/internal/binding"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

func TestFunctionIsValid(t *testing.T) {
	require.NoError(t, Function.Validate())
}

func TestDecode(t *testing.T) {
	cb := &securityv1alpha1.CredentialsBinding{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "garden-a"}}
	cb.CredentialsRef = corev1.ObjectReference{APIVersion: "security.gardener.cloud/v1alpha1", Kind: "WorkloadIdentity", Name: "cloud"}
	cb.Provider.Type = "aws"
	cb.Quotas = []corev1.ObjectReference{{Name: "q1"}, {Name: "q2", Namespace: "garden"}}
	assert.Equal(t, binding.Binding{
		Key:           function.Key{Namespace: "garden-a", Name: "b"},
		Credentials:   binding.Reference{GroupVersionKind: kinds.WorkloadIdentity.GroupVersionKind, Key: function.Key{Namespace: "garden-a", Name: "cloud"}},
		ProviderTypes: []string{"aws"},
		Quotas:        []function.Key{{Namespace: "garden-a", Name: "q1"}, {Namespace: "garden", Name: "q2"}},
	}, Decode(cb), "references without a namespace are in the binding's, as gardener-apiserver defaults them")

	cb.CredentialsRef = corev1.ObjectReference{APIVersion: "core.gardener.cloud/v1beta1", Kind: "InternalSecret", Name: "cloud", Namespace: "garden"}
	cb.DeletionTimestamp = ptr.To(metav1.Now())
	b := Decode(cb)
	assert.True(t, b.Deleting)
	assert.Equal(t, binding.Reference{GroupVersionKind: kinds.InternalSecret.GroupVersionKind, Key: function.Key{Namespace: "garden", Name: "cloud"}}, b.Credentials)
}

// The Shoot's binding is read from events (unstructured) and from typed lists: both must agree.
func TestShootFieldMatchesShootUses(t *testing.T) {
	s := &gardencorev1beta1.Shoot{}
	s.Spec.SecretBindingName = ptr.To("b")
	s.Spec.CredentialsBindingName = ptr.To("c")
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(s)
	require.NoError(t, err)
	name, _, _ := unstructured.NestedString(content, Kind.ShootField...)
	assert.Equal(t, "c", name)
	assert.Equal(t, "c", Kind.ShootUses(s))
}
