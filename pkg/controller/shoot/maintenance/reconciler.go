// Package maintenance is the Maintenance reconciler of GCM's Shoot controller
// (pkg/controllermanager/controller/shoot/maintenance): once per maintenance time window, or
// when asked with gardener.cloud/operation=maintain, it updates a Shoot's Kubernetes and
// machine image versions as its CloudProfile allows (forcing expired ones away), starts due
// credentials rotations, sets the reconcile operation and maintenance tasks, and reports in
// status.lastMaintenance and Events.
package maintenance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/Masterminds/semver/v3"
	cmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/controllermanager/v1alpha1"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// Name names the reconciler and its sweep.
const Name = "maintenance"

// MaintenanceConfig is the reconciler's part of the shoot function's configuration: which
// restarts every maintenance asks gardenlet for.
type MaintenanceConfig struct {
	// RestartControlPlane adds the restartControlPlanePods task.
	// SHOOT_MAINTENANCE_RESTART_CONTROL_PLANE wins over
	// controllers.shootMaintenance.enableShootControlPlaneRestarter (Gardener's default true).
	RestartControlPlane bool `envconfig:"SHOOT_MAINTENANCE_RESTART_CONTROL_PLANE"`
	// RestartCoreAddons adds the restartCoreAddons task. SHOOT_MAINTENANCE_RESTART_CORE_ADDONS
	// wins over controllers.shootMaintenance.enableShootCoreAddonRestarter (default false).
	RestartCoreAddons bool `envconfig:"SHOOT_MAINTENANCE_RESTART_CORE_ADDONS"`
}

// FromControllerManager takes controllers.shootMaintenance.enableShootControlPlaneRestarter
// and enableShootCoreAddonRestarter.
func (c *MaintenanceConfig) FromControllerManager(cm *cmv1alpha1.ControllerManagerConfiguration) {
	c.RestartControlPlane = ptr.Deref(cm.Controllers.ShootMaintenance.EnableShootControlPlaneRestarter, false)
	c.RestartCoreAddons = ptr.Deref(cm.Controllers.ShootMaintenance.EnableShootCoreAddonRestarter, false)
}

// RBAC is what the reconciler needs: Shoots read by events and sweeps and patched (spec,
// annotations, status), the CloudProfiles and NamespacedCloudProfiles it takes versions from
// (listed by the sweep, read by name for events), and its Events.
var RBAC = []rbacv1.PolicyRule{
	{APIGroups: []string{kinds.Shoot.Group}, Resources: []string{kinds.Shoot.Resource}, Verbs: []string{"get", "list", "patch"}},
	{APIGroups: []string{kinds.Shoot.Group}, Resources: []string{kinds.Shoot.Resource + "/status"}, Verbs: []string{"patch"}},
	{APIGroups: []string{kinds.CloudProfile.Group}, Resources: []string{kinds.CloudProfile.Resource, kinds.NamespacedCloudProfile.Resource}, Verbs: []string{"get", "list"}},
	function.EventsRBAC,
}

// Watch is Gardener's trigger for maintenance outside the window: a Shoot that asks for it
// with gardener.cloud/operation=maintain. (Gardener also reconciles when the time window
// changes; here the sweep notices a new window at its next tick.)
var Watch = function.Watch{Kind: kinds.Shoot, Reconciler: Name, Predicate: Predicate}

// Predicate lets through the events of Shoots that ask for maintenance now and are not being
// deleted.
func Predicate(ev function.Event) bool {
	if ev.Deleted || ev.Object == nil || ev.Object.GetDeletionTimestamp() != nil {
		return false
	}
	operation, _, _ := unstructured.NestedString(ev.Object.Object, "metadata", "annotations", v1beta1constants.GardenerOperation)
	return HasMaintainNow(map[string]string{v1beta1constants.GardenerOperation: operation})
}

// Sweep runs the reconciler over every Shoot every minute, against one LIST of Shoots and one
// of each kind of cloud profile; a Shoot outside its window costs a time comparison.
var Sweep = function.Sweep{
	Name: Name, Schedule: "* * * * *", Reconciler: Name,
	Primary: function.List{Kind: kinds.Shoot},
	Related: []function.List{{Kind: kinds.CloudProfile}, {Kind: kinds.NamespacedCloudProfile}},
}

// Reconciler maintains one Shoot when it is due.
type Reconciler struct {
	Writer function.Writer
	Events function.EventRecorder
	Clock  clock.PassiveClock
	Config MaintenanceConfig
	Log    *slog.Logger
}

// New builds the reconciler with its part of the configuration.
func New(deps function.Deps, cfg MaintenanceConfig) (*Reconciler, error) {
	return &Reconciler{Writer: deps.Source.Writer, Events: deps.Events, Clock: deps.Clock, Config: cfg, Log: deps.Log}, nil
}

// Reconcile maintains the Shoot if it is due.
func (r *Reconciler) Reconcile(ctx context.Context, req function.Request) error {
	shoot := &gardencorev1beta1.Shoot{}
	if err := req.Reader.Get(ctx, req.Key, shoot); err != nil {
		return client.IgnoreNotFound(err)
	}
	if shoot.DeletionTimestamp != nil {
		return nil
	}
	if LandedUnfinished(shoot) {
		if err := r.succeed(ctx, shoot); err != nil {
			return err
		}
	}
	now := r.Clock.Now()
	if !Due(shoot, now) {
		return nil
	}
	if _, err := semver.NewVersion(shoot.Spec.Kubernetes.Version); err != nil || (shoot.Spec.CloudProfile == nil && ptr.Deref(shoot.Spec.CloudProfileName, "") == "") {
		// gardener-apiserver admits no such Shoot (only permissive stand-in CRDs do); Gardener
		// would fail on it at every maintenance, a sweep would fail every minute.
		r.Log.Debug("Shoot has no valid Kubernetes version or no cloud profile, cannot maintain it", "shoot", req.Key)
		return nil
	}
	profile, profileName, err := cloudProfileSpec(ctx, req.Reader, shoot)
	if err != nil {
		return err
	}
	return r.maintain(ctx, shoot, profile, profileName, now)
}

func (r *Reconciler) maintain(ctx context.Context, shoot *gardencorev1beta1.Shoot, profile *gardencorev1beta1.CloudProfileSpec, profileName string, now time.Time) error {
	log := r.Log.With("shoot", client.ObjectKeyFromObject(shoot))
	log.Info("Maintaining Shoot")

	maintained := shoot.DeepCopy()
	outcome, err := Maintain(maintained, profile, profileName, now)
	if err != nil {
		// Only a change of the Shoot can help; the next tick in its window tries again.
		return function.Terminal(err)
	}
	for _, err := range outcome.Errors {
		log.Error("Maintenance step failed, continuing with the others", "error", err)
	}
	if operation := SetOperation(maintained, outcome.Credentials); operation != "" {
		outcome.Operations = append(outcome.Operations, fmt.Sprintf("Added %q operation annotation", operation))
	}
	AddTasks(maintained, r.Config)
	metav1.SetMetaDataAnnotation(&maintained.ObjectMeta, MaintainedAtAnnotation, now.UTC().Format(time.RFC3339))

	requiresStatus := outcome.RequiresStatus()
	if requiresStatus {
		description, failureReason := outcome.Messages()
		if _, err := r.Writer.PatchStatus(ctx, shoot, func() {
			shoot.Status.LastMaintenance = &gardencorev1beta1.LastMaintenance{
				Description:   description,
				TriggeredTime: metav1.Time{Time: now},
				State:         gardencorev1beta1.LastOperationStateProcessing,
			}
			if failureReason != "" {
				shoot.Status.LastMaintenance.State = gardencorev1beta1.LastOperationStateFailed
				shoot.Status.LastMaintenance.FailureReason = &failureReason
			}
		}); err != nil {
			return err
		}
	}

	read := shoot.DeepCopy()
	if _, err := r.Writer.Patch(ctx, shoot, func() {
		shoot.Annotations = maintained.Annotations
		shoot.Spec = maintained.Spec
	}); err != nil {
		if requiresStatus && apierrors.IsInvalid(err) {
			return r.rejected(ctx, read, now, err)
		}
		if !apierrors.IsConflict(err) {
			r.Events.Event(ctx, read, corev1.EventTypeWarning, gardencorev1beta1.ShootMaintenanceFailed, err.Error())
		}
		return err
	}

	if last := shoot.Status.LastMaintenance; last != nil && (last.State == gardencorev1beta1.LastOperationStateProcessing ||
		!requiresStatus && last.State == gardencorev1beta1.LastOperationStateFailed) {
		// Processing: this maintenance's changes were applied. Failed without anything to
		// report now: an earlier failure was fixed (by this maintenance or in between).
		if err := r.succeed(ctx, shoot); err != nil {
			return err
		}
	}

	r.recordEvents(ctx, shoot, outcome)
	log.Info("Shoot maintenance completed")
	return nil
}

// succeed ends the Shoot's last maintenance as Succeeded; one that had Failed is described as
// succeeded now.
func (r *Reconciler) succeed(ctx context.Context, shoot *gardencorev1beta1.Shoot) error {
	wasFailed := shoot.Status.LastMaintenance.State == gardencorev1beta1.LastOperationStateFailed
	_, err := r.Writer.PatchStatus(ctx, shoot, func() {
		shoot.Status.LastMaintenance.State = gardencorev1beta1.LastOperationStateSucceeded
		if wasFailed {
			shoot.Status.LastMaintenance.Description = "Maintenance succeeded"
			shoot.Status.LastMaintenance.FailureReason = nil
		}
	})
	return err
}

// rejected handles a maintained Shoot the API server refused (Gardener finds out with a dry
// run): the maintenance is reported as failed, the maintain request consumed, and the Shoot is
// left as it was until its next window.
func (r *Reconciler) rejected(ctx context.Context, shoot *gardencorev1beta1.Shoot, now time.Time, rejection error) error {
	if _, err := r.Writer.Patch(ctx, shoot, func() {
		if HasMaintainNow(shoot.Annotations) {
			delete(shoot.Annotations, v1beta1constants.GardenerOperation)
		}
		metav1.SetMetaDataAnnotation(&shoot.ObjectMeta, MaintainedAtAnnotation, now.UTC().Format(time.RFC3339))
	}); err != nil {
		return err
	}
	if _, err := r.Writer.PatchStatus(ctx, shoot, func() {
		shoot.Status.LastMaintenance = &gardencorev1beta1.LastMaintenance{
			Description:   "Maintenance failed",
			TriggeredTime: metav1.Time{Time: now},
			State:         gardencorev1beta1.LastOperationStateFailed,
			FailureReason: ptr.To(fmt.Sprintf("Updates to the Shoot failed to be applied: %s", rejection.Error())),
		}
	}); err != nil {
		return err
	}
	r.Log.Info("Shoot maintenance failed", "shoot", client.ObjectKeyFromObject(shoot), "reason", rejection)
	return nil
}

// recordEvents reports each version maintenance, as Gardener does.
func (r *Reconciler) recordEvents(ctx context.Context, shoot *gardencorev1beta1.Shoot, o Outcome) {
	if cp := o.ControlPlane; cp != nil {
		if cp.Successful {
			r.Events.Eventf(ctx, shoot, corev1.EventTypeNormal, gardencorev1beta1.ShootEventK8sVersionMaintenance, "Control Plane: %s. Reason: %s.", cp.Description, cp.Reason)
		} else {
			r.Events.Eventf(ctx, shoot, corev1.EventTypeWarning, gardencorev1beta1.ShootEventK8sVersionMaintenance, "Control Plane: Kubernetes version maintenance failed. Reason for update: %s. Error: %v", cp.Reason, cp.Description)
		}
	}
	pools := func(results []NamedResult, reason, kind string) {
		for _, p := range results {
			if p.Successful {
				r.Events.Eventf(ctx, shoot, corev1.EventTypeNormal, reason, "Worker pool %q: %v. Reason: %s.", p.Name, p.Description, p.Reason)
				continue
			}
			r.Events.Eventf(ctx, shoot, corev1.EventTypeWarning, reason, "Worker pool %q: %s version maintenance failed. Reason for update: %s. Error: %v", p.Name, kind, p.Reason, p.Description)
		}
	}
	pools(o.WorkerKubernetes, gardencorev1beta1.ShootEventK8sVersionMaintenance, "Kubernetes")
	pools(o.WorkerImages, gardencorev1beta1.ShootEventImageVersionMaintenance, "Machine image")
}

// cloudProfileSpec is the spec of the Shoot's cloud profile: a CloudProfile's, or a
// NamespacedCloudProfile's status.cloudProfileSpec (its parent's merged with its own, as the
// NamespacedCloudProfile controller writes it), as Gardener reads it.
func cloudProfileSpec(ctx context.Context, reader client.Reader, shoot *gardencorev1beta1.Shoot) (*gardencorev1beta1.CloudProfileSpec, string, error) {
	ref := shoot.Spec.CloudProfile
	if ref == nil {
		ref = &gardencorev1beta1.CloudProfileReference{Name: ptr.Deref(shoot.Spec.CloudProfileName, "")}
	}
	switch ref.Kind {
	case "", v1beta1constants.CloudProfileReferenceKindCloudProfile:
		profile := &gardencorev1beta1.CloudProfile{}
		if err := reader.Get(ctx, client.ObjectKey{Name: ref.Name}, profile); err != nil {
			return nil, "", err
		}
		return &profile.Spec, ref.Name, nil
	case v1beta1constants.CloudProfileReferenceKindNamespacedCloudProfile:
		profile := &gardencorev1beta1.NamespacedCloudProfile{}
		if err := reader.Get(ctx, client.ObjectKey{Namespace: shoot.Namespace, Name: ref.Name}, profile); err != nil {
			return nil, "", err
		}
		return &profile.Status.CloudProfileSpec, ref.Name, nil
	}
	return nil, "", function.Terminal(errors.New("unknown cloud profile kind " + ref.Kind))
}
