package extensionclusterrole

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestIsExtensionServiceAccount(t *testing.T) {
	for _, tc := range []struct {
		name, namespace string
		want            bool
	}{
		{"anything", "seed-aws", true},
		{"extension-shoot--foo", "garden", true},
		{"extension-shoot--foo", "garden-dev", true},
		{"foo", "garden", false},
		{"extension-shoot--foo", "kube-system", false},
		{"anything", "default", false},
	} {
		assert.Equal(t, tc.want, IsExtensionServiceAccount(tc.name, tc.namespace), "%s/%s", tc.namespace, tc.name)
	}
}

func TestServiceAccountSelector(t *testing.T) {
	s, err := ServiceAccountSelector(map[string]string{"authorization.gardener.cloud/extensions-serviceaccount-selector": `{"matchLabels":{"a":"b"}}`})
	require.NoError(t, err)
	assert.True(t, s.Matches(labels.Set{"a": "b"}))
	assert.False(t, s.Matches(labels.Set{"a": "c"}))
	_, err = ServiceAccountSelector(nil)
	assert.EqualError(t, err, "no service account selector annotations present")
	_, err = ServiceAccountSelector(map[string]string{"authorization.gardener.cloud/extensions-serviceaccount-selector": `{`})
	assert.ErrorContains(t, err, "failed unmarshalling extensions service account selector")
}

func TestSubjectsAndBinding(t *testing.T) {
	sa := func(namespace, name string) client.Object {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	}
	subjects := Subjects([]client.Object{sa("seed-b", "x"), sa("default", "y"), sa("seed-a", "z"), sa("seed-a", "a"), sa("garden", "extension-shoot--q")})
	assert.Equal(t, []rbacv1.Subject{
		{Kind: "ServiceAccount", Namespace: "garden", Name: "extension-shoot--q"},
		{Kind: "ServiceAccount", Namespace: "seed-a", Name: "a"},
		{Kind: "ServiceAccount", Namespace: "seed-a", Name: "z"},
		{Kind: "ServiceAccount", Namespace: "seed-b", Name: "x"},
	}, subjects)

	role := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "r", UID: "u"}}
	binding := &rbacv1.ClusterRoleBinding{}
	DesiredBinding(binding, role, subjects)
	require.Len(t, binding.OwnerReferences, 1)
	assert.True(t, *binding.OwnerReferences[0].Controller)
	assert.False(t, *binding.OwnerReferences[0].BlockOwnerDeletion)
	assert.Equal(t, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "r"}, binding.RoleRef)
}
