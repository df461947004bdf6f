package project

import (
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func user(name string) rbacv1.Subject {
	return rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: name}
}

func member(name, role string, roles ...string) gardencorev1beta1.ProjectMember {
	return gardencorev1beta1.ProjectMember{Subject: user(name), Role: role, Roles: roles}
}

func projectWithMembers() *gardencorev1beta1.Project {
	p := newProject("dev")
	p.Spec.Namespace = ptr.To("garden-dev")
	p.Spec.Owner = ptr.To(user("olivia"))
	p.Spec.Members = []gardencorev1beta1.ProjectMember{
		member("olivia", "admin", "owner"),
		member("adam", "admin", "viewer", "extension:monitoring"),
		member("ulla", "uam"),
		member("sam", "serviceaccountmanager", "extension:monitoring", "extension:logging"),
		member("vic", "viewer", "viewer"),
	}
	return p
}

func clusterRole(t *testing.T, rbac RBACObjects, name string) rbacv1.ClusterRole {
	t.Helper()
	cr := findByName(rbac.ClusterRoles, name)
	require.NotNil(t, cr, "ClusterRole %s", name)
	return *cr
}

func clusterRoleBinding(t *testing.T, rbac RBACObjects, name string) rbacv1.ClusterRoleBinding {
	t.Helper()
	crb := findByName(rbac.ClusterRoleBindings, name)
	require.NotNil(t, crb, "ClusterRoleBinding %s", name)
	return *crb
}

func roleBinding(t *testing.T, rbac RBACObjects, name string) rbacv1.RoleBinding {
	t.Helper()
	rb := findByName(rbac.RoleBindings, name)
	require.NotNil(t, rb, "RoleBinding %s", name)
	return *rb
}

func TestDesiredRBAC(t *testing.T) {
	p := projectWithMembers()
	rbac := DesiredRBAC(p)

	assert.Len(t, rbac.ClusterRoles, 6, "admin, uam, member, viewer and two extension roles")
	assert.Len(t, rbac.ClusterRoleBindings, 4, "extension roles are bound in the namespace only")
	assert.Len(t, rbac.RoleBindings, 5, "service account manager, member, viewer and two extension roles")

	owner := metav1.OwnerReference{APIVersion: "core.gardener.cloud/v1beta1", Kind: "Project", Name: "dev", UID: "3f0a0ad4-uid", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(false)}
	namespaceGet := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"}, ResourceNames: []string{"garden-dev"}, Verbs: []string{"get"}}
	projectRule := func(verbs ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: []string{"core.gardener.cloud"}, Resources: []string{"projects"}, ResourceNames: []string{"dev"}, Verbs: verbs}
	}

	t.Run("admin", func(t *testing.T) {
		cr := clusterRole(t, rbac, "gardener.cloud:system:project:dev")
		assert.Equal(t, []metav1.OwnerReference{owner}, cr.OwnerReferences)
		assert.Nil(t, cr.Labels)
		assert.Equal(t, []rbacv1.PolicyRule{namespaceGet, projectRule("get", "patch", "manage-members", "update", "delete")}, cr.Rules)
		crb := clusterRoleBinding(t, rbac, "gardener.cloud:system:project:dev")
		assert.Equal(t, rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "gardener.cloud:system:project:dev"}, crb.RoleRef)
		assert.Equal(t, []rbacv1.Subject{user("olivia")}, crb.Subjects, "the owner only")
	})
	t.Run("member", func(t *testing.T) {
		cr := clusterRole(t, rbac, "gardener.cloud:system:project-member:dev")
		assert.Equal(t, []rbacv1.PolicyRule{namespaceGet, projectRule("get", "patch", "update", "delete")}, cr.Rules)
		members := []rbacv1.Subject{user("olivia"), user("adam")}
		assert.Equal(t, members, clusterRoleBinding(t, rbac, "gardener.cloud:system:project-member:dev").Subjects, "admins and owners, each once")
		rb := roleBinding(t, rbac, "gardener.cloud:system:project-member")
		assert.Equal(t, "garden-dev", rb.Namespace)
		assert.Equal(t, "gardener.cloud:system:project-member", rb.RoleRef.Name, "the operator's ClusterRole of the same name")
		assert.Equal(t, members, rb.Subjects)
	})
	t.Run("viewer", func(t *testing.T) {
		cr := clusterRole(t, rbac, "gardener.cloud:system:project-viewer:dev")
		assert.Equal(t, []rbacv1.PolicyRule{namespaceGet, projectRule("get")}, cr.Rules)
		viewers := []rbacv1.Subject{user("adam"), user("vic")}
		assert.Equal(t, viewers, clusterRoleBinding(t, rbac, "gardener.cloud:system:project-viewer:dev").Subjects)
		assert.Equal(t, viewers, roleBinding(t, rbac, "gardener.cloud:system:project-viewer").Subjects)
	})
	t.Run("user access manager", func(t *testing.T) {
		cr := clusterRole(t, rbac, "gardener.cloud:system:project-uam:dev")
		assert.Equal(t, []rbacv1.PolicyRule{projectRule("get", "manage-members", "patch", "update")}, cr.Rules)
		assert.Equal(t, []rbacv1.Subject{user("ulla")}, clusterRoleBinding(t, rbac, "gardener.cloud:system:project-uam:dev").Subjects)
	})
	t.Run("service account manager", func(t *testing.T) {
		rb := roleBinding(t, rbac, "gardener.cloud:system:project-serviceaccountmanager")
		assert.Equal(t, "gardener.cloud:system:project-serviceaccountmanager", rb.RoleRef.Name)
		assert.Equal(t, []rbacv1.Subject{user("olivia"), user("sam")}, rb.Subjects, "the owner, owners and service account managers")
	})
	t.Run("extension roles", func(t *testing.T) {
		labels := map[string]string{"gardener.cloud/role": "extension-project-role", "project.gardener.cloud/name": "dev"}
		cr := clusterRole(t, rbac, "gardener.cloud:extension:project:dev:monitoring")
		assert.Equal(t, labels, cr.Labels)
		assert.Nil(t, cr.Rules, "aggregated")
		assert.Equal(t, &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
			{MatchLabels: map[string]string{"rbac.gardener.cloud/aggregate-to-extension-role": "monitoring"}},
		}}, cr.AggregationRule)
		rb := roleBinding(t, rbac, "gardener.cloud:extension:project:dev:monitoring")
		assert.Equal(t, labels, rb.Labels)
		assert.Equal(t, "gardener.cloud:extension:project:dev:monitoring", rb.RoleRef.Name)
		assert.Equal(t, []rbacv1.Subject{user("adam"), user("sam")}, rb.Subjects)
		assert.Equal(t, []rbacv1.Subject{user("sam")}, roleBinding(t, rbac, "gardener.cloud:extension:project:dev:logging").Subjects)
	})

	t.Run("a project without members binds nobody", func(t *testing.T) {
		empty := newProject("lonely")
		empty.Spec.Namespace = ptr.To("garden-lonely")
		rbac := DesiredRBAC(empty)
		assert.Len(t, rbac.ClusterRoles, 4)
		for _, crb := range rbac.ClusterRoleBindings {
			assert.Empty(t, crb.Subjects, crb.Name)
		}
		for _, rb := range rbac.RoleBindings {
			assert.Empty(t, rb.Subjects, rb.Name)
		}
	})
}

func TestIsStaleExtensionRoleObject(t *testing.T) {
	p := projectWithMembers()
	rbac := DesiredRBAC(p)
	labels := ExtensionRoleLabels("dev")
	meta := func(name, namespace string, labels map[string]string) *metav1.ObjectMeta {
		return &metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels}
	}
	assert.False(t, IsStaleExtensionRoleObject("dev", meta("gardener.cloud:extension:project:dev:monitoring", "", labels), rbac))
	assert.False(t, IsStaleExtensionRoleObject("dev", meta("gardener.cloud:extension:project:dev:monitoring", "garden-dev", labels), rbac))
	assert.True(t, IsStaleExtensionRoleObject("dev", meta("gardener.cloud:extension:project:dev:billing", "", labels), rbac))
	assert.True(t, IsStaleExtensionRoleObject("dev", meta("gardener.cloud:extension:project:dev:billing", "garden-dev", labels), rbac))
	assert.False(t, IsStaleExtensionRoleObject("dev", meta("gardener.cloud:extension:project:dev:billing", "", nil), rbac), "not labelled as the project's")
	assert.False(t, IsStaleExtensionRoleObject("dev", meta("gardener.cloud:extension:project:prod:billing", "", ExtensionRoleLabels("prod")), rbac), "another project's")
	assert.False(t, IsStaleExtensionRoleObject("dev", meta("some-binding", "garden-dev", nil), rbac), "the user's own binding")
}

func TestApplyClusterRole(t *testing.T) {
	rbac := DesiredRBAC(projectWithMembers())
	desired := clusterRole(t, rbac, "gardener.cloud:system:project-viewer:dev")
	existing := rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: desired.Name, Labels: map[string]string{"x": "y"}},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}},
	}
	ApplyClusterRole(&existing, &desired)
	assert.Equal(t, desired.Rules, existing.Rules)
	assert.Nil(t, existing.Labels, "the controller owns the labels")
	assert.Equal(t, desired.OwnerReferences, existing.OwnerReferences)

	aggregated := clusterRole(t, rbac, "gardener.cloud:extension:project:dev:monitoring")
	filled := rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: aggregated.Name},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"monitoring.example"}, Resources: []string{"dashboards"}, Verbs: []string{"get"}}},
	}
	rules := filled.Rules
	ApplyClusterRole(&filled, &aggregated)
	assert.Equal(t, rules, filled.Rules, "the aggregation controller's rules stay")
	assert.Equal(t, aggregated.AggregationRule, filled.AggregationRule)
	assert.Equal(t, aggregated.Labels, filled.Labels)
}

func TestBindings(t *testing.T) {
	rbac := DesiredRBAC(projectWithMembers())
	desired := roleBinding(t, rbac, "gardener.cloud:system:project-member")

	assert.True(t, RoleBindingUpToDate(desired.DeepCopy(), &desired))

	tampered := desired.DeepCopy()
	tampered.Subjects = append(tampered.Subjects, user("mallory"))
	assert.False(t, RoleBindingUpToDate(tampered, &desired))
	ApplyRoleBinding(tampered, &desired)
	assert.Equal(t, desired.Subjects, tampered.Subjects)

	otherRole := desired.DeepCopy()
	otherRole.RoleRef.Name = "cluster-admin"
	assert.False(t, RoleBindingUpToDate(otherRole, &desired))

	relabelled := desired.DeepCopy()
	relabelled.Labels = map[string]string{"x": "y"}
	assert.False(t, RoleBindingUpToDate(relabelled, &desired))

	disowned := desired.DeepCopy()
	disowned.OwnerReferences = nil
	assert.False(t, RoleBindingUpToDate(disowned, &desired))

	crb := clusterRoleBinding(t, rbac, "gardener.cloud:system:project-viewer:dev")
	existing := crb.DeepCopy()
	existing.Subjects = nil
	existing.Labels = map[string]string{"x": "y"}
	ApplyClusterRoleBinding(existing, &crb)
	assert.Equal(t, crb.Subjects, existing.Subjects)
	assert.Nil(t, existing.Labels)
}
