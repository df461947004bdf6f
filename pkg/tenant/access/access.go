// Package access grants this project's identities what they may do in an enrolled tenant's
// namespace of the seed, and there only: every ClusterRole labelled RoleLabel=<ServiceAccount>
// (config/seed/: a per-seed function's TenantRBAC, the webhook servers' tenant access) is bound
// in the tenant's namespace, by a RoleBinding of the ClusterRole's name, to that ServiceAccount
// of our namespace. The enrolment binds (Bind) and unbinds (Unbind). Nothing of ours is granted
// a tenant's Secrets otherwise, so a namespace that is not enrolled (the garden namespace, a
// shoot that gardenlet's own resource manager serves) is out of reach by RBAC, not by a check in
// code: as Gardener's resource manager of one shoot holds a Role in that shoot's namespace.
package access

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/tenant"
)

// RoleLabel on a ClusterRole names the ServiceAccount (of our namespace) that holds it in every
// enrolled tenant's namespace; on a RoleBinding it marks the binding as made by Bind.
const RoleLabel = "gardener-knative.io/tenant-role"

// Bind binds every ClusterRole labelled RoleLabel in tenant t's namespace to the ServiceAccount
// it names in namespace serviceAccountNamespace, and removes the bindings of ours there whose
// ClusterRole is gone. It returns the names of the bindings it holds. Idempotent.
func Bind(ctx context.Context, c client.Client, t tenant.Name, serviceAccountNamespace string) ([]string, error) {
	roles := &rbacv1.ClusterRoleList{}
	if err := c.List(ctx, roles, client.HasLabels{RoleLabel}); err != nil {
		return nil, fmt.Errorf("listing the tenant roles: %w", err)
	}
	held := sets.New[string]()
	for _, role := range roles.Items {
		binding := Binding(t, role.Name, role.Labels[RoleLabel], serviceAccountNamespace)
		if err := c.Create(ctx, binding); err != nil {
			if !apierrors.IsAlreadyExists(err) {
				return nil, fmt.Errorf("binding %s in %s: %w", role.Name, t, err)
			}
			// A binding's subjects and role cannot change but by a new binding: one of another
			// subject (a renamed ServiceAccount) is made anew.
			existing := &rbacv1.RoleBinding{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(binding), existing); err != nil {
				return nil, err
			}
			if !sameGrant(existing, binding) {
				if err := c.Delete(ctx, existing, client.Preconditions{UID: &existing.UID, ResourceVersion: &existing.ResourceVersion}); err != nil {
					return nil, err
				}
				if err := c.Create(ctx, binding); err != nil {
					return nil, fmt.Errorf("binding %s in %s: %w", role.Name, t, err)
				}
			}
		}
		held.Insert(role.Name)
	}
	bindings := &rbacv1.RoleBindingList{}
	if err := c.List(ctx, bindings, client.InNamespace(string(t)), client.HasLabels{RoleLabel}); err != nil {
		return nil, fmt.Errorf("listing the tenant bindings of %s: %w", t, err)
	}
	for i := range bindings.Items {
		if b := &bindings.Items[i]; !held.Has(b.Name) {
			if err := c.Delete(ctx, b); client.IgnoreNotFound(err) != nil {
				return nil, err
			}
		}
	}
	return sets.List(held), nil
}

// Unbind removes every binding of ours in tenant t's namespace.
func Unbind(ctx context.Context, c client.Client, t tenant.Name) error {
	if err := c.DeleteAllOf(ctx, &rbacv1.RoleBinding{}, client.InNamespace(string(t)), client.HasLabels{RoleLabel}); err != nil {
		return fmt.Errorf("removing the tenant bindings of %s: %w", t, err)
	}
	return nil
}

// Binding is the RoleBinding that grants ClusterRole role to ServiceAccount serviceAccount of
// serviceAccountNamespace in tenant t's namespace.
func Binding(t tenant.Name, role, serviceAccount, serviceAccountNamespace string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		TypeMeta: metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Namespace: string(t), Name: role, Labels: map[string]string{
			RoleLabel: serviceAccount, "app.kubernetes.io/part-of": "gardener-knative",
		}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: serviceAccountNamespace, Name: serviceAccount}},
	}
}

func sameGrant(a, b *rbacv1.RoleBinding) bool {
	return a.RoleRef == b.RoleRef && len(a.Subjects) == 1 && a.Subjects[0] == b.Subjects[0]
}
