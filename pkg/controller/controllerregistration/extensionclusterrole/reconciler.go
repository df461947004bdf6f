// Package extensionclusterrole is the "Extension ClusterRole" reconciler of GCM's
// ControllerRegistration controller: a ClusterRole labelled
// authorization.gardener.cloud/custom-extensions-permissions=true gets a ClusterRoleBinding of
// the same name, owned by it, that binds it to the extensions' ServiceAccounts its annotation
// authorization.gardener.cloud/extensions-serviceaccount-selector selects.
package extensionclusterrole

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"strings"

	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
	"github.com/gardener-knative/gardener-knative/pkg/kube"
)

// The reconciler's and its sweep's names.
const (
	ReconcilerName = "extension-clusterrole"
	SweepName      = "extension-clusterroles"
)

// LabelSelector selects the ClusterRoles the reconciler manages bindings for.
const LabelSelector = v1beta1constants.LabelAuthorizationCustomExtensionsPermissions + "=true"

// Labelled tells whether a ClusterRole carries the label that puts its binding in the
// reconciler's hands (authorization.gardener.cloud/custom-extensions-permissions=true).
func Labelled(clusterRole metav1.Object) bool {
	return clusterRole.GetLabels()[v1beta1constants.LabelAuthorizationCustomExtensionsPermissions] == "true"
}

const pageSize = 500

// IsExtensionServiceAccount: ServiceAccounts of seed namespaces ("seed-*"), and those named
// "extension-shoot--*" in the garden namespace or a project namespace ("garden-*").
func IsExtensionServiceAccount(name, namespace string) bool {
	if strings.HasPrefix(namespace, "seed-") {
		return true
	}
	if !strings.HasPrefix(name, v1beta1constants.ExtensionShootServiceAccountPrefix) {
		return false
	}
	return namespace == v1beta1constants.GardenNamespace || strings.HasPrefix(namespace, "garden-")
}

// ServiceAccountSelector parses a ClusterRole's service account selector annotation (a JSON
// metav1.LabelSelector).
func ServiceAccountSelector(annotations map[string]string) (labels.Selector, error) {
	selectorJSON, ok := annotations[v1beta1constants.LabelAuthorizationExtensionsServiceAccountSelector]
	if !ok {
		return nil, fmt.Errorf("no service account selector annotations present")
	}
	var selector metav1.LabelSelector
	if err := json.Unmarshal([]byte(selectorJSON), &selector); err != nil {
		return nil, fmt.Errorf("failed unmarshalling extensions service account selector %s: %w", selectorJSON, err)
	}
	s, err := metav1.LabelSelectorAsSelector(&selector)
	if err != nil {
		return nil, fmt.Errorf("failed parsing label selector %s: %w", selectorJSON, err)
	}
	return s, nil
}

// Subjects are the extension ServiceAccounts among serviceAccounts, sorted by namespace and
// name.
func Subjects(serviceAccounts []client.Object) []rbacv1.Subject {
	var subjects []rbacv1.Subject
	for _, sa := range serviceAccounts {
		if IsExtensionServiceAccount(sa.GetName(), sa.GetNamespace()) {
			subjects = append(subjects, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: sa.GetName(), Namespace: sa.GetNamespace()})
		}
	}
	sort.Slice(subjects, func(i, j int) bool {
		if subjects[i].Namespace != subjects[j].Namespace {
			return subjects[i].Namespace < subjects[j].Namespace
		}
		return subjects[i].Name < subjects[j].Name
	})
	return subjects
}

// DesiredBinding mutates binding into the ClusterRole's: owned by it (controller, not blocking
// its deletion), referencing it, bound to subjects.
func DesiredBinding(binding *rbacv1.ClusterRoleBinding, clusterRole *metav1.PartialObjectMetadata, subjects []rbacv1.Subject) {
	owner := metav1.NewControllerRef(clusterRole, rbacv1.SchemeGroupVersion.WithKind("ClusterRole"))
	owner.BlockOwnerDeletion = ptr.To(false)
	binding.OwnerReferences = []metav1.OwnerReference{*owner}
	binding.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole.Name}
	binding.Subjects = subjects
}

// Reconciler maintains one ClusterRole's binding.
type Reconciler struct {
	Writer function.Writer
	Log    *slog.Logger
}

// Reconcile converges the binding of the ClusterRole the key names.
func (r *Reconciler) Reconcile(ctx context.Context, req function.Request) error {
	clusterRole := &metav1.PartialObjectMetadata{}
	clusterRole.SetGroupVersionKind(rbacv1.SchemeGroupVersion.WithKind("ClusterRole"))
	if err := req.Reader.Get(ctx, req.Key, clusterRole); err != nil {
		return client.IgnoreNotFound(err)
	}
	if clusterRole.DeletionTimestamp != nil {
		return nil
	}
	if !Labelled(clusterRole) {
		// Events are hints: the key may name a ClusterRole that never had the label (a forged or
		// stale event) or has lost it since. Only the ClusterRole as read now counts, and without
		// the label it is not the reconciler's: nothing is bound. Like GCM, whose watch drops a
		// ClusterRole's events once its label is gone, a binding made while it was labelled is
		// left as it is (neither updated nor deleted); it goes with the ClusterRole, its owner.
		r.Log.Debug("ClusterRole is not labelled for extensions' permissions, binding nothing", "clusterRole", clusterRole.Name)
		return nil
	}
	selector, err := ServiceAccountSelector(clusterRole.Annotations)
	if err != nil {
		// Only a change of the ClusterRole can repair its annotation; its event brings it back.
		return function.Terminal(fmt.Errorf("failed computing subjects for ClusterRoleBinding: failed parsing label selector: %w", err))
	}
	// The binding first, then the ServiceAccounts: the subjects written are then listed after
	// the version of the binding the write is conditional on, so that a concurrent reconcile's
	// newer subjects are never overwritten by an older list (its write makes this one conflict).
	binding := &rbacv1.ClusterRoleBinding{}
	bindingErr := req.Reader.Get(ctx, client.ObjectKey{Name: clusterRole.Name}, binding)
	if bindingErr != nil && !apierrors.IsNotFound(bindingErr) {
		return bindingErr
	}
	serviceAccounts := &metav1.PartialObjectMetadataList{}
	serviceAccounts.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ServiceAccountList"))
	items, err := kube.ListAll(ctx, req.Reader, serviceAccounts, pageSize, client.MatchingLabelsSelector{Selector: selector})
	if err != nil {
		return fmt.Errorf("failed computing subjects for ClusterRoleBinding: failed listing ServiceAccounts with label selector %s: %w", selector, err)
	}
	subjects := Subjects(items)

	if apierrors.IsNotFound(bindingErr) {
		binding = &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: clusterRole.Name}}
		DesiredBinding(binding, clusterRole, subjects)
		r.Log.Info("Creating ClusterRoleBinding for extension ClusterRole", "clusterRole", clusterRole.Name, "subjects", len(subjects))
		return r.Writer.Create(ctx, binding)
	}
	changed, err := r.Writer.Patch(ctx, binding, func() { DesiredBinding(binding, clusterRole, subjects) })
	if changed && err == nil {
		r.Log.Info("Updated ClusterRoleBinding for extension ClusterRole", "clusterRole", clusterRole.Name, "subjects", len(subjects))
	}
	return err
}

// ClusterRolePredicate passes the events of labelled ClusterRoles that still exist. It only
// saves work: Reconcile checks the label again on the ClusterRole it reads.
func ClusterRolePredicate(ev function.Event) bool {
	return !ev.Deleted && (ev.Object == nil || Labelled(ev.Object))
}

// ServiceAccountPredicate passes the events of extension ServiceAccounts (their creation,
// relabelling and deletion change bindings).
func ServiceAccountPredicate(ev function.Event) bool {
	return IsExtensionServiceAccount(ev.Key.Name, ev.Key.Namespace)
}

// MapServiceAccountToClusterRoles maps a ServiceAccount's event to the labelled ClusterRoles
// whose selector matches its labels, with one metadata-only LIST of those ClusterRoles. A
// ClusterRole whose selector cannot be parsed is skipped (its own reconcile reports it).
func MapServiceAccountToClusterRoles(ctx context.Context, reader client.Reader, ev function.Event) ([]function.Key, error) {
	if ev.Object == nil {
		return nil, nil
	}
	clusterRoles := &metav1.PartialObjectMetadataList{}
	clusterRoles.SetGroupVersionKind(rbacv1.SchemeGroupVersion.WithKind("ClusterRoleList"))
	selector, _ := labels.Parse(LabelSelector)
	items, err := kube.ListAll(ctx, reader, clusterRoles, pageSize, client.MatchingLabelsSelector{Selector: selector})
	if err != nil {
		return nil, err
	}
	var keys []function.Key
	for _, item := range items {
		s, err := ServiceAccountSelector(item.GetAnnotations())
		if err != nil {
			continue
		}
		if s.Matches(labels.Set(ev.Object.GetLabels())) {
			keys = append(keys, function.Key{Name: item.GetName()})
		}
	}
	return keys, nil
}

// New builds the reconciler.
func New(deps function.Deps) (function.Handler, error) {
	return &Reconciler{Writer: deps.Source.Writer, Log: deps.Log}, nil
}

// The reconciler's part of the function: Declaration is its reconciler.
var (
	Declaration = function.Reconciler{Name: ReconcilerName, For: kinds.ClusterRole, New: New}
	Watches     = []function.Watch{
		{Kind: kinds.ClusterRole, Reconciler: ReconcilerName, Predicate: ClusterRolePredicate, LabelSelector: LabelSelector},
		{Kind: kinds.ServiceAccount, Reconciler: ReconcilerName, Predicate: ServiceAccountPredicate, Map: MapServiceAccountToClusterRoles},
	}
	// Sweep lists the labelled ClusterRoles, every ServiceAccount (metadata-only: only names,
	// namespaces and labels decide) and every ClusterRoleBinding once; each ClusterRole's
	// selector is then answered from the snapshot.
	Sweep = function.Sweep{
		Name: SweepName, Schedule: "41 * * * *", Reconciler: ReconcilerName,
		Primary: function.List{Kind: kinds.ClusterRole, MetadataOnly: true, LabelSelector: LabelSelector},
		Related: []function.List{
			{Kind: kinds.ServiceAccount, MetadataOnly: true},
			{Kind: kinds.ClusterRoleBinding},
		},
	}
	// RBAC: read the ClusterRoles and bind them (the binding grants what they grant, which the
	// function does not hold itself), list ServiceAccounts, manage the bindings.
	RBAC = []rbacv1.PolicyRule{
		{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles"}, Verbs: []string{"get", "list", "bind"}},
		{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterrolebindings"}, Verbs: []string{"get", "list", "create", "patch"}},
		{APIGroups: []string{corev1.GroupName}, Resources: []string{"serviceaccounts"}, Verbs: []string{"list"}},
	}
)
