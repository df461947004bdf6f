package access_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/access"
)

const ours = "gardener-knative"

func tenantRole(name, serviceAccount string) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{access.RoleLabel: serviceAccount}}}
}

func bindings(t *testing.T, c client.Client, ns string) map[string]rbacv1.Subject {
	t.Helper()
	list := &rbacv1.RoleBindingList{}
	require.NoError(t, c.List(context.Background(), list, client.InNamespace(ns)))
	out := map[string]rbacv1.Subject{}
	for _, b := range list.Items {
		require.Len(t, b.Subjects, 1)
		assert.Equal(t, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: b.Name}, b.RoleRef)
		out[b.Name] = b.Subjects[0]
	}
	return out
}

func TestBindGrantsEveryTenantRoleInTheTenantOnly(t *testing.T) {
	ctx := context.Background()
	unrelated := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "gardener-knative:health"}}
	c := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(
		tenantRole("gardener-knative:health:tenant", "health"),
		tenantRole("gardener-knative:grm-webhooks-tenant-access", "grm-webhooks"),
		unrelated,
	).Build()
	a, b := tenant.Name("shoot--p--a"), tenant.Name("shoot--p--b")

	held, err := access.Bind(ctx, c, a, ours)
	require.NoError(t, err)
	assert.Equal(t, []string{"gardener-knative:grm-webhooks-tenant-access", "gardener-knative:health:tenant"}, held)
	assert.Equal(t, map[string]rbacv1.Subject{
		"gardener-knative:health:tenant":              {Kind: "ServiceAccount", Name: "health", Namespace: ours},
		"gardener-knative:grm-webhooks-tenant-access": {Kind: "ServiceAccount", Name: "grm-webhooks", Namespace: ours},
	}, bindings(t, c, string(a)))
	assert.Empty(t, bindings(t, c, string(b)), "binding one tenant grants nothing in another")

	// Idempotent.
	again, err := access.Bind(ctx, c, a, ours)
	require.NoError(t, err)
	assert.Equal(t, held, again)

	require.NoError(t, access.Unbind(ctx, c, a))
	assert.Empty(t, bindings(t, c, string(a)))
}

// A release that drops a tenant role or renames its ServiceAccount leaves no stale grant behind
// once the tenant is enrolled again; bindings not of ours are left alone.
func TestBindFollowsTheRolesOfTheRelease(t *testing.T) {
	ctx := context.Background()
	a := tenant.Name("shoot--p--a")
	stale := access.Binding(a, "gardener-knative:gone:tenant", "gone", ours)
	renamed := access.Binding(a, "gardener-knative:node:tenant", "old-node", ours)
	foreign := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: string(a), Name: "gardenlets"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "gardenlets"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "gardenlet", Namespace: "garden"}},
	}
	c := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(
		tenantRole("gardener-knative:node:tenant", "node"), stale, renamed, foreign,
	).Build()

	_, err := access.Bind(ctx, c, a, ours)
	require.NoError(t, err)
	assert.Equal(t, map[string]rbacv1.Subject{
		"gardener-knative:node:tenant": {Kind: "ServiceAccount", Name: "node", Namespace: ours},
		"gardenlets":                   foreign.Subjects[0],
	}, bindings(t, c, string(a)))

	require.NoError(t, access.Unbind(ctx, c, a))
	assert.Equal(t, map[string]rbacv1.Subject{"gardenlets": foreign.Subjects[0]}, bindings(t, c, string(a)))
}

func scheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	require.NoError(t, rbacv1.AddToScheme(s))
	return s
}
