// Package project is the "Main" reconciler of GCM's Project controller: it gives every Project
// its namespace (created, or adopted when it is labelled for the project), the ResourceQuota the
// operator's templates prescribe, and the RBAC of its owner and members; and when a Project is
// deleted it waits for its Shoots to be gone, releases the namespace and removes its finalizer.
package project

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	cmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/controllermanager/v1alpha1"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/gardener-knative/gardener-knative/pkg/function"
)

// Reconciler reconciles Projects.
type Reconciler struct {
	Writer function.Writer
	Events function.EventRecorder
	Log    *slog.Logger
	Quotas QuotaTemplates
}

var _ function.Handler = &Reconciler{}

// New builds the Main reconciler from the function's Deps. The function's Config must be this
// package's Config or embed it.
func New(deps function.Deps) (function.Handler, error) {
	cfg, ok := deps.Config.(mainReconcilerConfig)
	if !ok {
		return nil, fmt.Errorf("the project function's config %T does not embed the Main reconciler's project.Config", deps.Config)
	}
	quotas := cfg.MainReconcilerConfig().Quotas
	if err := quotas.Validate(); err != nil {
		return nil, err
	}
	return &Reconciler{Writer: deps.Source.Writer, Events: deps.Events, Log: deps.Log, Quotas: quotas}, nil
}

// Reconcile converges the project named by the key.
func (r *Reconciler) Reconcile(ctx context.Context, req function.Request) error {
	project := &gardencorev1beta1.Project{}
	if err := req.Reader.Get(ctx, req.Key, project); err != nil {
		return client.IgnoreNotFound(err)
	}
	log := r.Log.With("project", project.Name)
	if project.DeletionTimestamp != nil {
		return r.delete(ctx, req.Reader, log, project)
	}
	return r.reconcile(ctx, req.Reader, log, project)
}

func (r *Reconciler) reconcile(ctx context.Context, reader client.Reader, log *slog.Logger, project *gardencorev1beta1.Project) error {
	// Events are recorded when the project is not yet in its reconciled state, not on every
	// pass: duplicated events, retries and sweeps revisit unchanged projects all the time.
	unsettled := project.Status.Phase != gardencorev1beta1.ProjectReady || project.Status.ObservedGeneration != project.Generation

	if !controllerutil.ContainsFinalizer(project, gardencorev1beta1.GardenerName) {
		log.Info("Adding finalizer")
		if _, err := r.Writer.Patch(ctx, project, func() { controllerutil.AddFinalizer(project, gardencorev1beta1.GardenerName) }); err != nil {
			return fmt.Errorf("could not add finalizer: %w", err)
		}
	}
	if project.Status.Phase == "" {
		if _, err := r.setPhase(ctx, project, gardencorev1beta1.ProjectPending); err != nil {
			return err
		}
	}

	namespace := NamespaceName(project)
	nsWritten, err := r.reconcileNamespace(ctx, reader, log, project, namespace)
	if err != nil {
		return r.fail(ctx, project, err, err.Error())
	}
	if unsettled || nsWritten {
		r.Events.Eventf(ctx, project, corev1.EventTypeNormal, gardencorev1beta1.ProjectEventNamespaceReconcileSuccessful, "Successfully reconciled namespace %q for project", namespace)
	}

	if project.Spec.Namespace == nil {
		if _, err := r.Writer.Patch(ctx, project, func() { project.Spec.Namespace = ptr.To(namespace) }); err != nil {
			return r.fail(ctx, project, err, err.Error())
		}
	}

	template, err := QuotaTemplateFor(r.Quotas, project)
	if err == nil && template != nil {
		err = r.reconcileResourceQuota(ctx, reader, project, namespace, template)
	}
	if err != nil {
		return r.fail(ctx, project, err, fmt.Sprintf("Error while setting up ResourceQuota: %v", err))
	}

	rbac := DesiredRBAC(project)
	if err := r.reconcileRBAC(ctx, reader, log, project, rbac); err != nil {
		return r.fail(ctx, project, err, fmt.Sprintf("Error while reconciling RBAC resources for namespace %q: %v", namespace, err))
	}

	if _, err := r.setPhase(ctx, project, gardencorev1beta1.ProjectReady); err != nil {
		if !isRace(err) {
			r.Events.Eventf(ctx, project, corev1.EventTypeWarning, gardencorev1beta1.ProjectEventNamespaceReconcileFailed, "Error while trying to mark project as ready: %v", err)
		}
		return err
	}
	return nil
}

// reconcileNamespace creates the project's namespace, or adopts the existing one if it is
// labelled for the project; it reports whether it wrote. A refused namespace is left untouched
// and fails the reconcile terminally: only a change of the namespace's labels or of the
// project's .spec.namespace can help, and the sweep looks again.
func (r *Reconciler) reconcileNamespace(ctx context.Context, reader client.Reader, log *slog.Logger, project *gardencorev1beta1.Project, name string) (bool, error) {
	ns := namespaceMetadata()
	exists, err := getIfExists(ctx, reader, name, ns)
	if err != nil {
		return false, err
	}
	if !exists {
		log.Info("Creating Namespace for Project", "namespace", name)
		return true, r.Writer.Create(ctx, NewNamespace(project, name))
	}
	var refusal error
	adopted, err := r.Writer.Patch(ctx, ns, func() { refusal = AdoptNamespace(project, &ns.ObjectMeta) })
	if refusal != nil {
		return false, function.Terminal(fmt.Errorf("namespace %q: %w", name, refusal))
	}
	if adopted {
		log.Info("Adopted Namespace for Project", "namespace", name)
	}
	return adopted, err
}

func (r *Reconciler) reconcileResourceQuota(ctx context.Context, reader client.Reader, project *gardencorev1beta1.Project, namespace string, template *cmv1alpha1.QuotaConfiguration) error {
	quota := &corev1.ResourceQuota{}
	if err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ResourceQuotaName}, quota); err != nil {
		if !apierrors.IsNotFound(err) {
			return err
		}
		return r.Writer.Create(ctx, NewResourceQuota(namespace, project, template))
	}
	_, err := r.Writer.Patch(ctx, quota, func() { ApplyQuotaTemplate(quota, project, template) })
	return err
}

// reconcileRBAC creates or corrects every ClusterRole, ClusterRoleBinding and RoleBinding of
// rbac, and deletes those of extension roles that no member has any more. It reads the four
// ClusterRoles and ClusterRoleBindings of the project one by one, and the rest with one LIST of
// the namespace's RoleBindings and one of the project's extension ClusterRoles.
func (r *Reconciler) reconcileRBAC(ctx context.Context, reader client.Reader, log *slog.Logger, project *gardencorev1beta1.Project, rbac RBACObjects) error {
	extensionRoles := &rbacv1.ClusterRoleList{}
	selector, err := labels.Parse(ExtensionRoleSelector(project.Name))
	if err != nil {
		return err
	}
	if err := reader.List(ctx, extensionRoles, client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return err
	}
	roleBindings := &rbacv1.RoleBindingList{}
	if err := reader.List(ctx, roleBindings, client.InNamespace(ptr.Deref(project.Spec.Namespace, ""))); err != nil {
		return err
	}

	var errs []error
	for i := range rbac.ClusterRoles {
		desired := &rbac.ClusterRoles[i]
		current := findByName(extensionRoles.Items, desired.Name)
		exists := current != nil
		if !exists {
			current = &rbacv1.ClusterRole{}
			if exists, err = getIfExists(ctx, reader, desired.Name, current); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		if !exists {
			errs = append(errs, r.Writer.Create(ctx, desired.DeepCopy()))
			continue
		}
		_, err := r.Writer.Patch(ctx, current, func() { ApplyClusterRole(current, desired) })
		errs = append(errs, err)
	}
	for i := range rbac.ClusterRoleBindings {
		desired := &rbac.ClusterRoleBindings[i]
		current := &rbacv1.ClusterRoleBinding{}
		exists, err := getIfExists(ctx, reader, desired.Name, current)
		switch {
		case err != nil:
			errs = append(errs, err)
		case !exists:
			errs = append(errs, r.Writer.Create(ctx, desired.DeepCopy()))
		default:
			errs = append(errs, r.convergeBinding(ctx, log, current, desired, current.RoleRef == desired.RoleRef, func() { ApplyClusterRoleBinding(current, desired) }))
		}
	}
	for i := range rbac.RoleBindings {
		desired := &rbac.RoleBindings[i]
		current := findByName(roleBindings.Items, desired.Name)
		if current == nil {
			errs = append(errs, r.Writer.Create(ctx, desired.DeepCopy()))
			continue
		}
		errs = append(errs, r.convergeBinding(ctx, log, current, desired, current.RoleRef == desired.RoleRef, func() { ApplyRoleBinding(current, desired) }))
	}

	for i := range extensionRoles.Items {
		if cr := &extensionRoles.Items[i]; IsStaleExtensionRoleObject(project.Name, cr, rbac) {
			log.Info("Deleting ClusterRole of an extension role no member has", "clusterRole", cr.Name)
			errs = append(errs, client.IgnoreNotFound(r.Writer.Delete(ctx, cr)))
		}
	}
	for i := range roleBindings.Items {
		if rb := &roleBindings.Items[i]; IsStaleExtensionRoleObject(project.Name, rb, rbac) {
			log.Info("Deleting RoleBinding of an extension role no member has", "roleBinding", client.ObjectKeyFromObject(rb))
			errs = append(errs, client.IgnoreNotFound(r.Writer.Delete(ctx, rb)))
		}
	}
	return errors.Join(errs...)
}

// convergeBinding patches the existing binding current with apply when it binds the desired
// role, and replaces it otherwise: the API server does not let a binding's roleRef change.
func (r *Reconciler) convergeBinding(ctx context.Context, log *slog.Logger, current, desired client.Object, sameRole bool, apply func()) error {
	if sameRole {
		_, err := r.Writer.Patch(ctx, current, apply)
		return err
	}
	log.Info("Replacing a binding of another role", "kind", fmt.Sprintf("%T", current), "binding", client.ObjectKeyFromObject(current))
	if err := r.Writer.Delete(ctx, current); client.IgnoreNotFound(err) != nil {
		return err
	}
	return r.Writer.Create(ctx, desired.DeepCopyObject().(client.Object))
}

func (r *Reconciler) delete(ctx context.Context, reader client.Reader, log *slog.Logger, project *gardencorev1beta1.Project) error {
	if !controllerutil.ContainsFinalizer(project, gardencorev1beta1.GardenerName) {
		return nil
	}
	if namespace := ptr.Deref(project.Spec.Namespace, ""); namespace != "" {
		shoots := &metav1.PartialObjectMetadataList{}
		shoots.SetGroupVersionKind(gardencorev1beta1.SchemeGroupVersion.WithKind("ShootList"))
		if err := reader.List(ctx, shoots, client.InNamespace(namespace), client.Limit(1)); err != nil {
			return fmt.Errorf("failed to check if namespace is empty: %w", err)
		}
		if len(shoots.Items) > 0 {
			log.Info("Cannot release Project Namespace because it still contains Shoots", "namespace", namespace)
			changed, err := r.setPhase(ctx, project, gardencorev1beta1.ProjectTerminating)
			if changed {
				r.Events.Eventf(ctx, project, corev1.EventTypeWarning, gardencorev1beta1.ProjectEventNamespaceNotEmpty, "Cannot release namespace %q because it still contains Shoots", namespace)
			}
			return err
		}

		released, err := r.releaseNamespace(ctx, reader, log, project, namespace)
		if err != nil {
			if isRace(err) {
				return err
			}
			r.Events.Eventf(ctx, project, corev1.EventTypeWarning, gardencorev1beta1.ProjectEventNamespaceDeletionFailed, "Failed to release project namespace %q: %v", namespace, err)
			if _, perr := r.setPhase(ctx, project, gardencorev1beta1.ProjectFailed); perr != nil {
				return errors.Join(perr, err)
			}
			return fmt.Errorf("failed to release project namespace: %w", err)
		}
		if !released {
			// The Namespace's deletion event brings the project back here once it is gone.
			_, err := r.setPhase(ctx, project, gardencorev1beta1.ProjectTerminating)
			return err
		}
	}
	log.Info("Removing finalizer")
	if _, err := r.Writer.Patch(ctx, project, func() { controllerutil.RemoveFinalizer(project, gardencorev1beta1.GardenerName) }); err != nil {
		return fmt.Errorf("failed to remove finalizer: %w", err)
	}
	return nil
}

// releaseNamespace deletes the project's namespace, or strips it of the project's metadata when
// it is to be kept; released means the finalizer may go now.
func (r *Reconciler) releaseNamespace(ctx context.Context, reader client.Reader, log *slog.Logger, project *gardencorev1beta1.Project, name string) (released bool, err error) {
	ns := namespaceMetadata()
	exists, err := getIfExists(ctx, reader, name, ns)
	if err != nil {
		return false, err
	}
	var meta *metav1.ObjectMeta
	if exists {
		meta = &ns.ObjectMeta
	}
	switch ReleaseOf(project, meta) {
	case ReleaseWhenGone:
		log.Info("Project Namespace is already marked for deletion, waiting for it to be gone", "namespace", name)
		return false, nil
	case ReleaseByKeeping:
		log.Info("Project Namespace is to be kept, removing the project's labels, annotations and owner reference", "namespace", name)
		_, err := r.Writer.Patch(ctx, ns, func() { StripProjectMetadata(project, &ns.ObjectMeta) })
		return err == nil, err
	case ReleaseByDeleting:
		log.Info("Deleting Project Namespace", "namespace", name)
		// Gardener's delete options: dependents first, a minute's grace.
		if err := r.Writer.Delete(ctx, ns, client.PropagationPolicy(metav1.DeletePropagationForeground), client.GracePeriodSeconds(60)); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		r.Events.Eventf(ctx, project, corev1.EventTypeNormal, gardencorev1beta1.ProjectEventNamespaceMarkedForDeletion, "Successfully marked project namespace %q for deletion", name)
		return false, nil
	}
	log.Info("Project Namespace is gone or not the project's, nothing to release", "namespace", name)
	return true, nil
}

// fail marks the project Failed and records why, then returns err for the runtime to decide
// whether to retry. A write conflict or a create racing another is not a failure of the
// project: the runtime reconciles again from live state, so the phase is left alone.
func (r *Reconciler) fail(ctx context.Context, project *gardencorev1beta1.Project, err error, message string) error {
	if isRace(err) {
		return err
	}
	changed, perr := r.setPhase(ctx, project, gardencorev1beta1.ProjectFailed)
	if changed {
		r.Events.Event(ctx, project, corev1.EventTypeWarning, gardencorev1beta1.ProjectEventNamespaceReconcileFailed, message)
	}
	if perr != nil {
		return errors.Join(perr, err)
	}
	return err
}

// setPhase patches the project's phase and observed generation; it reports whether that
// changed anything.
func (r *Reconciler) setPhase(ctx context.Context, project *gardencorev1beta1.Project, phase gardencorev1beta1.ProjectPhase) (bool, error) {
	return r.Writer.PatchStatus(ctx, project, func() {
		project.Status.Phase = phase
		project.Status.ObservedGeneration = project.Generation
	})
}

// getIfExists reads the cluster-scoped object name into obj; false when there is none.
func getIfExists(ctx context.Context, reader client.Reader, name string, obj client.Object) (bool, error) {
	if err := reader.Get(ctx, client.ObjectKey{Name: name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

func isRace(err error) bool { return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) }

func namespaceMetadata() *metav1.PartialObjectMetadata {
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	return ns
}

func findByName[T any, PT interface {
	*T
	client.Object
}](items []T, name string) PT {
	for i := range items {
		if PT(&items[i]).GetName() == name {
			return &items[i]
		}
	}
	return nil
}
