package project

import (
	"fmt"
	"slices"
	"strings"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The names of the RBAC objects of a project, as Gardener names them.
const (
	// AdminClusterRolePrefix + <project> lets the owner manage the project.
	AdminClusterRolePrefix = "gardener.cloud:system:project:"
	// MemberClusterRolePrefix + <project> lets admins and owners use the project.
	MemberClusterRolePrefix = "gardener.cloud:system:project-member:"
	// UAMClusterRolePrefix + <project> lets user access managers manage its members.
	UAMClusterRolePrefix = "gardener.cloud:system:project-uam:"
	// ViewerClusterRolePrefix + <project> lets viewers read it.
	ViewerClusterRolePrefix = "gardener.cloud:system:project-viewer:"
	// ExtensionClusterRolePrefix + <project>:<role> aggregates the ClusterRoles that extensions
	// label rbac.gardener.cloud/aggregate-to-extension-role=<role>, for members with the role
	// "extension:<role>".
	ExtensionClusterRolePrefix = "gardener.cloud:extension:project:"

	// MemberRoleBinding, ViewerRoleBinding and ServiceAccountManagerRoleBinding bind the
	// ClusterRoles of the same name (operators define them) in the project namespace.
	MemberRoleBinding                = "gardener.cloud:system:project-member"
	ViewerRoleBinding                = "gardener.cloud:system:project-viewer"
	ServiceAccountManagerRoleBinding = "gardener.cloud:system:project-serviceaccountmanager"

	// AggregateToExtensionRoleLabel selects the ClusterRoles an extension role aggregates.
	AggregateToExtensionRoleLabel = "rbac.gardener.cloud/aggregate-to-extension-role"
)

// RBACObjects are the RBAC objects a project needs: cluster-wide roles and bindings on the project itself and
// its namespace, and role bindings in the namespace.
type RBACObjects struct {
	ClusterRoles        []rbacv1.ClusterRole
	ClusterRoleBindings []rbacv1.ClusterRoleBinding
	RoleBindings        []rbacv1.RoleBinding
}

// DesiredRBAC is the RBAC of the project's owner and members. The project's .spec.namespace
// must be set. Subjects keep the order of .spec.members, each subject once.
func DesiredRBAC(project *gardencorev1beta1.Project) RBACObjects {
	var (
		namespace                               = ptr.Deref(project.Spec.Namespace, "")
		admins, members, uams, viewers, saAdmin []rbacv1.Subject
		extensionRoles                          []string
		extensionSubjects                       = map[string][]rbacv1.Subject{}
	)
	if project.Spec.Owner != nil {
		admins = append(admins, *project.Spec.Owner)
		saAdmin = append(saAdmin, *project.Spec.Owner)
	}
	for _, member := range project.Spec.Members {
		for _, role := range append([]string{member.Role}, member.Roles...) {
			switch role {
			case gardencorev1beta1.ProjectMemberAdmin:
				members = append(members, member.Subject)
			case gardencorev1beta1.ProjectMemberOwner:
				members = append(members, member.Subject)
				saAdmin = append(saAdmin, member.Subject)
			case gardencorev1beta1.ProjectMemberUserAccessManager:
				uams = append(uams, member.Subject)
			case gardencorev1beta1.ProjectMemberServiceAccountManager:
				saAdmin = append(saAdmin, member.Subject)
			case gardencorev1beta1.ProjectMemberViewer:
				viewers = append(viewers, member.Subject)
			}
			if extensionRole, ok := strings.CutPrefix(role, gardencorev1beta1.ProjectMemberExtensionPrefix); ok {
				if _, seen := extensionSubjects[extensionRole]; !seen {
					extensionRoles = append(extensionRoles, extensionRole)
				}
				extensionSubjects[extensionRole] = append(extensionSubjects[extensionRole], member.Subject)
			}
		}
	}

	namespaceGet := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"}, ResourceNames: []string{namespace}, Verbs: []string{"get"}}
	projectRule := func(verbs ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: []string{gardencorev1beta1.SchemeGroupVersion.Group}, Resources: []string{"projects"}, ResourceNames: []string{project.Name}, Verbs: verbs}
	}
	owner := rbacOwnerRef(project)
	var rbac RBACObjects
	clusterRoleWithBinding := func(name string, subjects []rbacv1.Subject, rules ...rbacv1.PolicyRule) {
		rbac.ClusterRoles = append(rbac.ClusterRoles, rbacv1.ClusterRole{ObjectMeta: objectMeta(name, "", owner, nil), Rules: rules})
		rbac.ClusterRoleBindings = append(rbac.ClusterRoleBindings, rbacv1.ClusterRoleBinding{
			ObjectMeta: objectMeta(name, "", owner, nil), RoleRef: clusterRoleRef(name), Subjects: uniqueSubjects(subjects),
		})
	}
	roleBinding := func(name string, subjects []rbacv1.Subject, labels map[string]string) {
		rbac.RoleBindings = append(rbac.RoleBindings, rbacv1.RoleBinding{
			ObjectMeta: objectMeta(name, namespace, owner, labels), RoleRef: clusterRoleRef(name), Subjects: uniqueSubjects(subjects),
		})
	}

	clusterRoleWithBinding(AdminClusterRolePrefix+project.Name, admins, namespaceGet, projectRule("get", "patch", "manage-members", "update", "delete"))
	clusterRoleWithBinding(UAMClusterRolePrefix+project.Name, uams, projectRule("get", "manage-members", "patch", "update"))
	roleBinding(ServiceAccountManagerRoleBinding, saAdmin, nil)
	clusterRoleWithBinding(MemberClusterRolePrefix+project.Name, members, namespaceGet, projectRule("get", "patch", "update", "delete"))
	roleBinding(MemberRoleBinding, members, nil)
	clusterRoleWithBinding(ViewerClusterRolePrefix+project.Name, viewers, namespaceGet, projectRule("get"))
	roleBinding(ViewerRoleBinding, viewers, nil)

	slices.Sort(extensionRoles)
	for _, role := range extensionRoles {
		name := ExtensionRoleName(project.Name, role)
		rbac.ClusterRoles = append(rbac.ClusterRoles, rbacv1.ClusterRole{
			ObjectMeta: objectMeta(name, "", owner, ExtensionRoleLabels(project.Name)),
			AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
				{MatchLabels: map[string]string{AggregateToExtensionRoleLabel: role}},
			}},
		})
		roleBinding(name, extensionSubjects[role], ExtensionRoleLabels(project.Name))
	}
	return rbac
}

// ExtensionRoleName names the ClusterRole and RoleBinding of the project's extension role.
func ExtensionRoleName(project, role string) string {
	return ExtensionClusterRolePrefix + project + ":" + role
}

// ExtensionRoleLabels mark the ClusterRoles and RoleBindings of the project's extension roles,
// so that those of roles no member has any more are found and deleted.
func ExtensionRoleLabels(project string) map[string]string {
	return map[string]string{
		v1beta1constants.GardenRole:  v1beta1constants.LabelExtensionProjectRole,
		v1beta1constants.ProjectName: project,
	}
}

// ExtensionRoleSelector selects ExtensionRoleLabels.
func ExtensionRoleSelector(project string) string {
	return fmt.Sprintf("%s=%s,%s=%s", v1beta1constants.GardenRole, v1beta1constants.LabelExtensionProjectRole, v1beta1constants.ProjectName, project)
}

// IsStaleExtensionRoleObject says whether obj is a ClusterRole or RoleBinding of one of the
// project's extension roles that rbac no longer has.
func IsStaleExtensionRoleObject(project string, obj metav1.Object, rbac RBACObjects) bool {
	for k, v := range ExtensionRoleLabels(project) {
		if obj.GetLabels()[k] != v {
			return false
		}
	}
	if obj.GetNamespace() == "" {
		return !slices.ContainsFunc(rbac.ClusterRoles, func(cr rbacv1.ClusterRole) bool { return cr.Name == obj.GetName() })
	}
	return !slices.ContainsFunc(rbac.RoleBindings, func(rb rbacv1.RoleBinding) bool { return rb.Name == obj.GetName() })
}

// ApplyClusterRole makes existing what desired says. The rules of an aggregated ClusterRole
// are Kubernetes' aggregation controller's to fill, so they are left alone.
func ApplyClusterRole(existing *rbacv1.ClusterRole, desired *rbacv1.ClusterRole) {
	existing.OwnerReferences = desired.OwnerReferences
	existing.Labels = desired.Labels
	existing.AggregationRule = desired.AggregationRule
	if desired.AggregationRule == nil {
		existing.Rules = desired.Rules
	}
}

// ApplyClusterRoleBinding makes existing what desired says, except the role reference, which
// the API server does not let change: a binding with another one must be recreated
// (RoleRefDiffers).
func ApplyClusterRoleBinding(existing *rbacv1.ClusterRoleBinding, desired *rbacv1.ClusterRoleBinding) {
	existing.OwnerReferences = desired.OwnerReferences
	existing.Labels = desired.Labels
	existing.Subjects = desired.Subjects
}

// ApplyRoleBinding is ApplyClusterRoleBinding for RoleBindings.
func ApplyRoleBinding(existing *rbacv1.RoleBinding, desired *rbacv1.RoleBinding) {
	existing.OwnerReferences = desired.OwnerReferences
	existing.Labels = desired.Labels
	existing.Subjects = desired.Subjects
}

// RoleBindingUpToDate says whether existing is as desired: no write would change it.
func RoleBindingUpToDate(existing *rbacv1.RoleBinding, desired *rbacv1.RoleBinding) bool {
	applied := existing.DeepCopy()
	ApplyRoleBinding(applied, desired)
	return existing.RoleRef == desired.RoleRef && apiequality.Semantic.DeepEqual(applied, existing)
}

// rbacOwnerRef is the project as the controller of its RBAC objects. Unlike the namespace's,
// it does not block the project's deletion.
func rbacOwnerRef(project *gardencorev1beta1.Project) metav1.OwnerReference {
	ref := controllerRef(project)
	ref.BlockOwnerDeletion = ptr.To(false)
	return ref
}

func objectMeta(name, namespace string, owner metav1.OwnerReference, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels, OwnerReferences: []metav1.OwnerReference{owner}}
}

func clusterRoleRef(name string) rbacv1.RoleRef {
	return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}
}

func uniqueSubjects(subjects []rbacv1.Subject) []rbacv1.Subject {
	var unique []rbacv1.Subject
	for _, s := range subjects {
		if !slices.Contains(unique, s) {
			unique = append(unique, s)
		}
	}
	return unique
}
