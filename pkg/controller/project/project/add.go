package project

import (
	"context"
	"slices"

	"github.com/gardener/gardener/pkg/apis/core"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// ReconcilerName is the Main reconciler's name in the project function; its Events are
// reported by "project-controller", as Gardener's.
const ReconcilerName = "main"

// ResyncSweepName names the Main reconciler's sweep.
const ResyncSweepName = "resync"

// Watches are the Main reconciler's events, as Gardener's controller watches them: Projects
// whose spec changed or that are being deleted, the deletion of a project's Namespace, changes
// of its RoleBindings, and the deletion of the last Shoot of a project being deleted.
var Watches = []function.Watch{
	{Kind: kinds.Project, Reconciler: ReconcilerName, Predicate: ProjectPredicate,
		Changes: function.Changes{function.ChangedMetadata, function.ChangedSpec, function.StatusField("phase"), function.StatusField("observedGeneration")}},
	{Kind: kinds.Namespace, Reconciler: ReconcilerName, Predicate: NamespacePredicate, Map: MapToControllingProject},
	{Kind: kinds.RoleBinding, Reconciler: ReconcilerName, Predicate: RoleBindingPredicate, Map: MapRoleBindingToProject},
	{Kind: kinds.Shoot, Reconciler: ReconcilerName, Predicate: ShootPredicate, Map: MapShootToProjectInDeletion, Changes: function.NoUpdates},
}

// Sweeps is the resync sweep: every project against one LIST of each kind the reconciler reads,
// so that missed events, objects changed behind the controller's back (ClusterRoles,
// ClusterRoleBindings, the ResourceQuota, namespace labels that make a refused namespace
// adoptable) and namespaces that finished terminating are caught up with.
var Sweeps = []function.Sweep{{
	Name:       ResyncSweepName,
	Schedule:   "*/10 * * * *",
	Reconciler: ReconcilerName,
	Primary:    function.List{Kind: kinds.Project},
	Related: []function.List{
		// Every namespace, labelled or not: a namespace that exists must not be created.
		{Kind: kinds.Namespace, MetadataOnly: true},
		{Kind: kinds.ResourceQuota},
		{Kind: kinds.ClusterRole},
		{Kind: kinds.ClusterRoleBinding},
		{Kind: kinds.RoleBinding},
		// Only whether a deleted project's namespace still holds Shoots matters.
		{Kind: kinds.Shoot, MetadataOnly: true},
	},
}}

// RBAC is what the Main reconciler does on the garden cluster.
var RBAC = []rbacv1.PolicyRule{
	// Projects: read, add and remove the finalizer, set .spec.namespace, and the status.
	{APIGroups: []string{gardencorev1beta1.SchemeGroupVersion.Group}, Resources: []string{"projects"}, Verbs: []string{"get", "list", "patch"}},
	{APIGroups: []string{gardencorev1beta1.SchemeGroupVersion.Group}, Resources: []string{"projects/status"}, Verbs: []string{"patch"}},
	// The namespace and the ResourceQuota block their project's deletion (blockOwnerDeletion):
	// where the OwnerReferencesPermissionEnforcement admission plugin runs, that takes the
	// right to update the project's finalizers.
	{APIGroups: []string{gardencorev1beta1.SchemeGroupVersion.Group}, Resources: []string{"projects/finalizers"}, Verbs: []string{"update"}},
	// Whether a project's namespace still holds Shoots.
	{APIGroups: []string{gardencorev1beta1.SchemeGroupVersion.Group}, Resources: []string{"shoots"}, Verbs: []string{"list"}},
	{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "create", "patch", "delete"}},
	{APIGroups: []string{""}, Resources: []string{"resourcequotas"}, Verbs: []string{"get", "list", "create", "patch"}},
	function.EventsRBAC,
	// The project's roles grant rights on the project and its namespace that the function does
	// not hold itself, and extension roles aggregate others: creating such roles takes
	// escalate, binding them bind.
	{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles"}, Verbs: []string{"get", "list", "create", "patch", "delete", "escalate", "bind"}},
	{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterrolebindings"}, Verbs: []string{"get", "list", "create", "patch", "delete"}},
	{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"rolebindings"}, Verbs: []string{"list", "create", "patch", "delete"}},
}

// ProjectPredicate is Gardener's GenerationChangedPredicate as far as one event can tell it:
// Knative sends only the new object, so a project is worth a reconcile while its status has not
// caught up with its generation (a new project, a spec change, a deletion, which bumps the
// generation too) or it has no phase yet. Status updates (the stale and activity reconcilers',
// this reconciler's own) pass only if they leave the project unreconciled. A project whose
// finalizer is gone is past this reconciler.
func ProjectPredicate(ev function.Event) bool {
	if ev.Deleted {
		return false
	}
	if ev.Object == nil {
		return true
	}
	if ev.Object.GetDeletionTimestamp() != nil && !slices.Contains(ev.Object.GetFinalizers(), gardencorev1beta1.GardenerName) {
		return false
	}
	phase, _, _ := unstructured.NestedString(ev.Object.Object, "status", "phase")
	return phase == "" || ev.SpecUnobserved()
}

// NamespacePredicate passes the deletion of a namespace a project controls: a deleted project
// may now drop its finalizer, a live one needs its namespace back.
func NamespacePredicate(ev function.Event) bool {
	return ev.Deleted && ev.Object != nil && controllingProject(ev.Object) != ""
}

// MapToControllingProject maps an event to the project that controls its object, read from the
// object's owner references: no request.
func MapToControllingProject(_ context.Context, _ client.Reader, ev function.Event) ([]function.Key, error) {
	return []function.Key{{Name: controllingProject(ev.Object)}}, nil
}

// RoleBindingPredicate passes events about RoleBindings a project controls. Whether one changed
// in a way that matters is the mapper's question, since it takes the project to answer.
func RoleBindingPredicate(ev function.Event) bool {
	return ev.Object != nil && controllingProject(ev.Object) != ""
}

// MapRoleBindingToProject maps a RoleBinding event to its project when the project would write
// because of it: a binding it wants was deleted or differs from what it wants, or a binding of
// an extension role no member has is still there. It reads the project (one GET); the
// RoleBindings this reconciler writes itself come back through here and map to nothing.
func MapRoleBindingToProject(ctx context.Context, reader client.Reader, ev function.Event) ([]function.Key, error) {
	key := function.Key{Name: controllingProject(ev.Object)}
	project := &gardencorev1beta1.Project{}
	if err := reader.Get(ctx, key, project); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	if project.DeletionTimestamp != nil || ptr.Deref(project.Spec.Namespace, "") != ev.Key.Namespace {
		return nil, nil // a deleted project's bindings go with its namespace
	}
	binding := &rbacv1.RoleBinding{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(ev.Object.Object, binding); err != nil {
		return nil, function.Terminal(err)
	}
	rbac := DesiredRBAC(project)
	desired := findByName(rbac.RoleBindings, binding.Name)
	switch {
	case desired == nil && !ev.Deleted && IsStaleExtensionRoleObject(project.Name, binding, rbac):
		return []function.Key{key}, nil
	case desired == nil:
		return nil, nil
	case ev.Deleted || !RoleBindingUpToDate(binding, desired):
		return []function.Key{key}, nil
	}
	return nil, nil
}

// ShootPredicate passes Shoot deletions: the last one lets a deleted project go on.
func ShootPredicate(ev function.Event) bool { return ev.Deleted }

// MapShootToProjectInDeletion maps the deletion of a Shoot to its project if the project is
// being deleted and its namespace holds no Shoots any more. The project is found with one
// metadata-only LIST by the field selector spec.namespace that gardener-apiserver offers, which
// settles the usual case (a project that is not being deleted) with one request.
func MapShootToProjectInDeletion(ctx context.Context, reader client.Reader, ev function.Event) ([]function.Key, error) {
	projects := &metav1.PartialObjectMetadataList{}
	projects.SetGroupVersionKind(gardencorev1beta1.SchemeGroupVersion.WithKind("ProjectList"))
	if err := reader.List(ctx, projects, client.MatchingFields{core.ProjectNamespace: ev.Key.Namespace}); err != nil {
		return nil, err
	}
	var keys []function.Key
	for _, p := range projects.Items {
		if p.DeletionTimestamp == nil {
			continue
		}
		shoots := &metav1.PartialObjectMetadataList{}
		shoots.SetGroupVersionKind(gardencorev1beta1.SchemeGroupVersion.WithKind("ShootList"))
		if err := reader.List(ctx, shoots, client.InNamespace(ev.Key.Namespace), client.Limit(1)); err != nil {
			return nil, err
		}
		if len(shoots.Items) == 0 {
			keys = append(keys, function.Key{Name: p.Name})
		}
	}
	return keys, nil
}

// controllingProject is the name of the Project that controls obj, or "".
func controllingProject(obj metav1.Object) string {
	ref := metav1.GetControllerOf(obj)
	if ref == nil || ref.Kind != "Project" {
		return ""
	}
	if gv, err := schema.ParseGroupVersion(ref.APIVersion); err != nil || gv.Group != gardencorev1beta1.SchemeGroupVersion.Group {
		return ""
	}
	return ref.Name
}
