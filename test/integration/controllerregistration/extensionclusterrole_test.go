package controllerregistration_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// TestExtensionClusterRoleUnlabelled: events are hints, the label on the live ClusterRole
// decides. A key naming a ClusterRole without the label binds nothing, even when the event
// still shows it labelled; a ClusterRole that lost the label keeps the binding it had, untouched
// (as in GCM, whose watch drops its events from then on), until its deletion takes it along.
func TestExtensionClusterRoleUnlabelled(t *testing.T) {
	f := newFixture(t, functiontest.AsFunction())
	ctx := context.Background()
	seedNamespace := "seed-" + f.name("ecr-unlabelled")
	require.NoError(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: seedNamespace}}))
	selected := map[string]string{"extension": f.name("bar")}
	require.NoError(t, env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "extension-bar", Namespace: seedNamespace, Labels: selected}}))

	const label = "authorization.gardener.cloud/custom-extensions-permissions"
	clusterRole := func(name string, labels map[string]string) *rbacv1.ClusterRole {
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{
			Name:        f.name(name),
			Labels:      labels,
			Annotations: map[string]string{"authorization.gardener.cloud/extensions-serviceaccount-selector": `{"matchLabels":{"extension":"` + f.name("bar") + `"}}`},
		}, Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}}}
		require.NoError(t, env.Client.Create(ctx, role))
		t.Cleanup(func() { assert.NoError(t, client.IgnoreNotFound(env.Client.Delete(ctx, role))) })
		return role
	}
	// labelledHint is an event's view of role: labelled, whatever the live object says.
	labelledHint := func(role *rbacv1.ClusterRole) *rbacv1.ClusterRole {
		hint := role.DeepCopy()
		hint.Labels = map[string]string{label: "true"}
		return hint
	}

	t.Run("never labelled", func(t *testing.T) {
		role := clusterRole("unlabelled", nil)
		writes := f.Measure(func() { f.Send("add", labelledHint(role)) })
		assert.Zero(t, writes["create"]+writes["patch"]+writes["delete"], "nothing written: %v", writes)
		err := env.Client.Get(ctx, client.ObjectKey{Name: role.Name}, &rbacv1.ClusterRoleBinding{})
		assert.True(t, apierrors.IsNotFound(err), "no ClusterRoleBinding for the unlabelled ClusterRole: %v", err)
	})

	t.Run("label lost", func(t *testing.T) {
		role := clusterRole("lost-label", map[string]string{label: "true"})
		f.Send("add", role)
		before := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name}}
		f.get(before)
		t.Cleanup(func() { assert.NoError(t, client.IgnoreNotFound(env.Client.Delete(ctx, before))) })
		require.Len(t, before.Subjects, 1)

		patch := client.MergeFrom(role.DeepCopy())
		delete(role.Labels, label)
		require.NoError(t, env.Client.Patch(ctx, role, patch))
		// A ServiceAccount the selector matches joins: were the ClusterRole still labelled, its
		// binding would grow.
		late := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "extension-late", Namespace: seedNamespace, Labels: selected}}
		require.NoError(t, env.Client.Create(ctx, late))
		writes := f.Measure(func() {
			f.Send("update", labelledHint(role)) // a stale event from before the label went
			f.Send("add", late)
			f.Sweep(extensionclusterrole.SweepName)
		})
		assert.Zero(t, writes["create"]+writes["patch"]+writes["delete"], "nothing written: %v", writes)
		after := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name}}
		f.get(after)
		assert.Equal(t, before.ResourceVersion, after.ResourceVersion, "the binding is left as it was")
		assert.Equal(t, before.Subjects, after.Subjects)
	})
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
