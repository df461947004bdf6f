package controllerregistration_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/controllerregistration/extensionclusterrole"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
)

// TestExtensionClusterRole: a labelled ClusterRole gets a binding, owned by it, to the
// extension ServiceAccounts its selector selects (in seed namespaces, and extension-shoot--*
// ones in the garden and project namespaces); a new ServiceAccount joins by its event, and the
// sweep converges a binding whose events were lost.
func TestExtensionClusterRole(t *testing.T) {
	f := newFixture(t, functiontest.AsFunction())
	ctx := context.Background()
	seedNamespace := "seed-" + f.name("ecr")
	require.NoError(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: seedNamespace}}))
	selected := map[string]string{"extension": f.name("foo")}
	serviceAccount := func(namespace, name string, labels map[string]string) *corev1.ServiceAccount {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels}}
		require.NoError(t, env.Client.Create(ctx, sa))
		return sa
	}
	serviceAccount(seedNamespace, "extension-foo", selected)
	serviceAccount(seedNamespace, "other", nil)
	serviceAccount(f.ns, "extension-shoot--foo", selected)
	serviceAccount(f.ns, "not-an-extension", selected)

	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{
		Name:        f.name("extension-foo"),
		Labels:      map[string]string{"authorization.gardener.cloud/custom-extensions-permissions": "true"},
		Annotations: map[string]string{"authorization.gardener.cloud/extensions-serviceaccount-selector": `{"matchLabels":{"extension":"` + f.name("foo") + `"}}`},
	}, Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}}}
	require.NoError(t, env.Client.Create(ctx, role))
	t.Cleanup(func() { assert.NoError(t, client.IgnoreNotFound(env.Client.Delete(ctx, role))) })

	f.Send("add", role)
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name}}
	f.get(binding)
	t.Cleanup(func() { assert.NoError(t, client.IgnoreNotFound(env.Client.Delete(ctx, binding))) })
	assert.Equal(t, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name}, binding.RoleRef)
	assert.Equal(t, []metav1.OwnerReference{{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: role.Name, UID: role.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(false)}}, binding.OwnerReferences)
	assert.Equal(t, []rbacv1.Subject{
		{Kind: "ServiceAccount", Name: "extension-shoot--foo", Namespace: f.ns},
		{Kind: "ServiceAccount", Name: "extension-foo", Namespace: seedNamespace},
	}, sortSubjects(binding.Subjects))

	late := serviceAccount(seedNamespace, "extension-late", selected)
	f.Send("add", late)
	f.get(binding)
	assert.Len(t, binding.Subjects, 3, "the new ServiceAccount's event updates the binding")

	require.NoError(t, env.Client.Delete(ctx, late))
	writes := f.Measure(func() { f.Sweep(extensionclusterrole.SweepName) })
	f.get(binding)
	assert.Len(t, binding.Subjects, 2, "the sweep drops the ServiceAccount whose deletion went unnoticed")
	assert.Equal(t, 1, writes["patch"])

	writes = f.Measure(func() { f.Sweep(extensionclusterrole.SweepName) })
	assert.Zero(t, writes["create"]+writes["patch"], "nothing changed, nothing written: %v", writes)
}

func sortSubjects(s []rbacv1.Subject) []rbacv1.Subject {
	out := append([]rbacv1.Subject{}, s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j].Namespace < out[i].Namespace || (out[j].Namespace == out[i].Namespace && out[j].Name < out[i].Name) {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}
