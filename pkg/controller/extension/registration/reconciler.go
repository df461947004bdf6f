package registration

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	operatorv1alpha1 "github.com/gardener/gardener/pkg/apis/operator/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// ReconcilerName names the reconciler in the extension function.
const ReconcilerName = "main"

// ResyncSweepName names its sweep.
const ResyncSweepName = "resync"

// Reasons and messages of the Installed condition, as gardener-operator's.
const (
	ReasonReconcileFailed     = "ReconcileFailed"
	ReasonReconcileSuccessful = "ReconcileSuccessful"
	ReasonDeleteFailed        = "DeleteFailed"
	ReasonDeleteSuccessful    = "DeleteSuccessful"
	ReasonInstalledInRuntime  = "InstalledInRuntime"

	MessageReconcileSuccessful = "Extension has been reconciled successfully"
	MessageDeleteSuccessful    = "Extension has been deleted successfully"
	MessageInstalledInRuntime  = "Extension is still required in runtime cluster"
)

// Events gardener-operator records about the registration (reasons from core.gardener.cloud).
const (
	EventApplied = "ControllerRegistration and ControllerDeployment applied successfully"
	EventDeleted = "ControllerRegistration and ControllerDeployment deleted successfully"
)

var ownedSelector = ExtensionLabel

// Watches are the reconciler's events: Extensions that need it (see ExtensionPredicate), and the
// deletion of a ControllerRegistration or ControllerDeployment an Extension owns (its deletion
// may now finish; a live Extension needs it back).
var Watches = []function.Watch{
	{Kind: kinds.Extension, Cluster: function.Target, Reconciler: ReconcilerName, Predicate: ExtensionPredicate},
	{Kind: kinds.ControllerRegistration, Reconciler: ReconcilerName, LabelSelector: ownedSelector, Predicate: OwnedDeletedPredicate, Map: MapToOwningExtension},
	{Kind: kinds.ControllerDeployment, Reconciler: ReconcilerName, LabelSelector: ownedSelector, Predicate: OwnedDeletedPredicate, Map: MapToOwningExtension},
}

// Sweeps is the resync: every Extension against one LIST of the registrations and deployments
// Extensions own, so that missed events and registrations changed behind the function's back
// are caught up with.
var Sweeps = []function.Sweep{{
	Name:       ResyncSweepName,
	Schedule:   "*/10 * * * *",
	Reconciler: ReconcilerName,
	Primary:    function.List{Kind: kinds.Extension, Cluster: function.Target},
	Related: []function.List{
		{Kind: kinds.ControllerRegistration, LabelSelector: ownedSelector},
		{Kind: kinds.ControllerDeployment, LabelSelector: ownedSelector},
	},
}}

// RBAC is what the reconciler does in the garden: the registrations.
var RBAC = []rbacv1.PolicyRule{
	{APIGroups: []string{gardencorev1beta1.SchemeGroupVersion.Group}, Resources: []string{"controllerregistrations", "controllerdeployments"}, Verbs: []string{"get", "list", "create", "patch", "delete"}},
}

// TargetRBAC is what it does in the runtime cluster: the Extensions, and Events about them.
var TargetRBAC = []rbacv1.PolicyRule{
	{APIGroups: []string{operatorv1alpha1.SchemeGroupVersion.Group}, Resources: []string{"extensions"}, Verbs: []string{"get", "list", "patch"}},
	{APIGroups: []string{operatorv1alpha1.SchemeGroupVersion.Group}, Resources: []string{"extensions/status"}, Verbs: []string{"patch"}},
	function.EventsRBAC,
}

// ExtensionPredicate passes what gardener-operator's GenerationChangedPredicate passes, as far
// as the one object an event carries tells: an Extension whose status has not caught up with its
// generation (new, changed, deleted), one without the finalizer or the Installed condition, and
// one being deleted while it still has the finalizer (its deletion waits for the registration,
// and for RequiredRuntime to turn False). Status updates of a reconciled Extension, which the
// other reconcilers write, do not pass.
func ExtensionPredicate(ev function.Event) bool {
	if ev.Deleted {
		return false
	}
	if ev.Object == nil {
		return true
	}
	finalized := slices.Contains(ev.Object.GetFinalizers(), operatorv1alpha1.FinalizerName)
	if ev.Object.GetDeletionTimestamp() != nil {
		return finalized
	}
	observed, _, _ := unstructured.NestedInt64(ev.Object.Object, "status", "observedGeneration")
	conditions, _, _ := unstructured.NestedSlice(ev.Object.Object, "status", "conditions")
	installed := slices.ContainsFunc(conditions, func(c any) bool {
		m, _ := c.(map[string]any)
		return m["type"] == string(operatorv1alpha1.ExtensionInstalled)
	})
	return !finalized || !installed || observed != ev.Object.GetGeneration()
}

// OwnedDeletedPredicate passes the deletion of an object an Extension owns.
func OwnedDeletedPredicate(ev function.Event) bool {
	return ev.Deleted && ev.Object != nil && ev.Object.GetLabels()[ExtensionLabel] != ""
}

// MapToOwningExtension maps an owned object's event to its Extension, from the label: no request.
func MapToOwningExtension(_ context.Context, _ client.Reader, ev function.Event) ([]function.Key, error) {
	return []function.Key{{Name: ev.Object.GetLabels()[ExtensionLabel]}}, nil
}

// New builds the reconciler.
func New(deps function.Deps) (function.Handler, error) {
	return &reconciler{extensions: deps.Target.Writer, registrations: deps.Source.Writer, clock: deps.Clock, events: deps.Events, log: deps.Log}, nil
}

type reconciler struct {
	// extensions writes the Extensions (in the runtime cluster), registrations their
	// ControllerRegistrations and ControllerDeployments (in the garden).
	extensions, registrations function.Writer
	clock                     clock.PassiveClock
	events                    function.EventRecorder
	log                       *slog.Logger
}

// Reconcile reads the Extension in the runtime cluster (req.Reader) and its registration in the
// garden (req.Source).
func (r *reconciler) Reconcile(ctx context.Context, req function.Request) error {
	ext := &operatorv1alpha1.Extension{}
	if err := req.Reader.Get(ctx, req.Key, ext); err != nil {
		return err
	}
	log := r.log.With("extension", ext.Name)
	if ext.DeletionTimestamp != nil {
		if !controllerutil.ContainsFinalizer(ext, operatorv1alpha1.FinalizerName) {
			return nil
		}
		return r.delete(ctx, req.Source, log, ext)
	}
	return r.reconcile(ctx, req.Source, log, ext)
}

// reconcile and delete read the garden with garden.
func (r *reconciler) reconcile(ctx context.Context, garden client.Reader, log *slog.Logger, ext *operatorv1alpha1.Extension) error {
	if !controllerutil.ContainsFinalizer(ext, operatorv1alpha1.FinalizerName) {
		log.Info("Adding finalizer")
		if _, err := r.extensions.Patch(ctx, ext, func() { controllerutil.AddFinalizer(ext, operatorv1alpha1.FinalizerName) }); err != nil {
			return fmt.Errorf("failed to add finalizer: %w", err)
		}
	}

	if err := r.applyRegistration(ctx, garden, log, ext); err != nil {
		if statusErr := r.setInstalled(ctx, ext, gardencorev1beta1.ConditionFalse, ReasonReconcileFailed, err.Error()); statusErr != nil {
			return errors.Join(err, fmt.Errorf("failed to update extension status: %w", statusErr))
		}
		return err
	}
	return r.setInstalled(ctx, ext, gardencorev1beta1.ConditionTrue, ReasonReconcileSuccessful, MessageReconcileSuccessful)
}

// applyRegistration creates or updates the ControllerRegistration and ControllerDeployment, or
// deletes them when the Extension asks for none.
func (r *reconciler) applyRegistration(ctx context.Context, garden client.Reader, log *slog.Logger, ext *operatorv1alpha1.Extension) error {
	if !HasExtensionDeployment(ext) {
		deleted, _, err := r.deleteOwned(ctx, garden, ext)
		if err != nil {
			return err
		}
		if deleted {
			r.events.Event(ctx, ext, corev1.EventTypeNormal, gardencorev1beta1.EventDeleted, EventDeleted)
		}
		return nil
	}

	desiredRegistration, desiredDeployment, err := Desired(ext)
	if err != nil {
		return function.Terminal(err)
	}
	// The deployment first: the registration refers to it.
	deploymentChanged, err := r.applyDeployment(ctx, garden, desiredDeployment)
	if err != nil {
		return fmt.Errorf("failed to reconcile ControllerRegistration: %w", err)
	}
	registrationChanged, err := r.applyControllerRegistration(ctx, garden, desiredRegistration)
	if err != nil {
		return fmt.Errorf("failed to reconcile ControllerRegistration: %w", err)
	}
	if deploymentChanged || registrationChanged {
		log.Info("Deployed ControllerRegistration and ControllerDeployment")
		r.events.Event(ctx, ext, corev1.EventTypeNormal, gardencorev1beta1.EventReconciled, EventApplied)
	}
	return nil
}

func (r *reconciler) applyDeployment(ctx context.Context, garden client.Reader, desired *gardencorev1beta1.ControllerDeployment) (bool, error) {
	existing := &gardencorev1beta1.ControllerDeployment{}
	if err := garden.Get(ctx, client.ObjectKeyFromObject(desired), existing); err != nil {
		if !apierrors.IsNotFound(err) {
			return false, err
		}
		return true, r.registrations.Create(ctx, desired)
	}
	if existing.DeletionTimestamp != nil {
		return false, fmt.Errorf("ControllerDeployment %q is being deleted", existing.Name)
	}
	return r.registrations.Patch(ctx, existing, func() {
		setLabels(existing, desired.Labels)
		existing.Type = desired.Type
		existing.ProviderConfig = desired.ProviderConfig
		existing.InjectGardenKubeconfig = desired.InjectGardenKubeconfig
	})
}

func (r *reconciler) applyControllerRegistration(ctx context.Context, garden client.Reader, desired *gardencorev1beta1.ControllerRegistration) (bool, error) {
	existing := &gardencorev1beta1.ControllerRegistration{}
	if err := garden.Get(ctx, client.ObjectKeyFromObject(desired), existing); err != nil {
		if !apierrors.IsNotFound(err) {
			return false, err
		}
		return true, r.registrations.Create(ctx, desired)
	}
	if existing.DeletionTimestamp != nil {
		return false, fmt.Errorf("ControllerRegistration %q is being deleted", existing.Name)
	}
	return r.registrations.Patch(ctx, existing, func() {
		setLabels(existing, desired.Labels)
		for k, v := range desired.Annotations {
			if existing.Annotations == nil {
				existing.Annotations = map[string]string{}
			}
			existing.Annotations[k] = v
		}
		existing.Spec = desired.Spec
	})
}

func setLabels(obj client.Object, labels map[string]string) {
	merged := obj.GetLabels()
	if merged == nil {
		merged = map[string]string{}
	}
	for k, v := range labels {
		merged[k] = v
	}
	obj.SetLabels(merged)
}

// delete removes the registration and, once it is gone and the Extension is not required in
// the runtime cluster, the finalizer.
func (r *reconciler) delete(ctx context.Context, garden client.Reader, log *slog.Logger, ext *operatorv1alpha1.Extension) error {
	_, remaining, err := r.deleteOwned(ctx, garden, ext)
	if err != nil {
		if statusErr := r.setInstalled(ctx, ext, gardencorev1beta1.ConditionFalse, ReasonDeleteFailed, err.Error()); statusErr != nil {
			return errors.Join(err, fmt.Errorf("failed to update extension status: %w", statusErr))
		}
		return err
	}
	if len(remaining) > 0 {
		// Their finalizers hold them (ControllerInstallations still use the registration; the
		// registration still names the deployment): their deletion events bring the Extension
		// back, and the sweep catches a missed one.
		log.Info("Waiting until the ControllerRegistration and ControllerDeployment are gone", "remaining", remaining)
		return nil
	}

	if isTrue(ext.Status.Conditions, operatorv1alpha1.ExtensionRequiredRuntime) {
		return r.setInstalled(ctx, ext, gardencorev1beta1.ConditionTrue, ReasonInstalledInRuntime, MessageInstalledInRuntime)
	}
	if err := r.setInstalled(ctx, ext, gardencorev1beta1.ConditionFalse, ReasonDeleteSuccessful, MessageDeleteSuccessful); err != nil {
		return err
	}
	log.Info("Removing finalizer")
	if _, err := r.extensions.Patch(ctx, ext, func() { controllerutil.RemoveFinalizer(ext, operatorv1alpha1.FinalizerName) }); err != nil {
		return fmt.Errorf("failed to remove finalizer: %w", err)
	}
	return nil
}

// deleteOwned deletes the ControllerRegistration and ControllerDeployment the Extension owns. It
// reports whether it sent a deletion, and which of them still exist afterwards: those that
// finalizers keep.
func (r *reconciler) deleteOwned(ctx context.Context, garden client.Reader, ext *operatorv1alpha1.Extension) (bool, []string, error) {
	var (
		deleted   bool
		remaining []string
	)
	for _, obj := range []client.Object{
		&gardencorev1beta1.ControllerRegistration{},
		&gardencorev1beta1.ControllerDeployment{},
	} {
		if err := garden.Get(ctx, client.ObjectKey{Name: ext.Name}, obj); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return deleted, remaining, err
		}
		if obj.GetLabels()[ExtensionLabel] != ext.Name {
			continue // not the Extension's: someone else's object of the same name
		}
		if obj.GetDeletionTimestamp() == nil {
			if err := r.registrations.Delete(ctx, obj); err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return deleted, remaining, fmt.Errorf("failed deleting %s: %w", kindName(obj), err)
			}
			deleted = true
		}
		if len(obj.GetFinalizers()) > 0 {
			remaining = append(remaining, kindName(obj))
		}
	}
	return deleted, remaining, nil
}

func kindName(obj client.Object) string {
	switch obj.(type) {
	case *gardencorev1beta1.ControllerRegistration:
		return "ControllerRegistration/" + obj.GetName()
	default:
		return "ControllerDeployment/" + obj.GetName()
	}
}

// setInstalled sets the Installed condition and the observed generation, as gardener-operator's
// status update does; nothing is sent when nothing changes.
func (r *reconciler) setInstalled(ctx context.Context, ext *operatorv1alpha1.Extension, status gardencorev1beta1.ConditionStatus, reason, message string) error {
	_, err := r.extensions.PatchStatus(ctx, ext, func() {
		ext.Status.Conditions = function.SetCondition(r.clock, ext.Status.Conditions, operatorv1alpha1.ExtensionInstalled, status, reason, message)
		ext.Status.ObservedGeneration = ext.Generation
	})
	if err != nil {
		return fmt.Errorf("could not update Extension status: %w", err)
	}
	return nil
}

func isTrue(conditions []gardencorev1beta1.Condition, t gardencorev1beta1.ConditionType) bool {
	c := function.GetCondition(conditions, t)
	return c != nil && c.Status == gardencorev1beta1.ConditionTrue
}
