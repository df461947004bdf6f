// Package hibernation is the Hibernation reconciler of GCM's Shoot controller
// (pkg/controllermanager/controller/shoot/hibernation): it hibernates and wakes up Shoots at the
// boundaries of their .spec.hibernation.schedules.
//
// Gardener requeues each Shoot for its next boundary; a stateless function has no queue, so a
// sweep every minute (cron's granularity) decides every Shoot from its schedules and
// status.lastHibernationTriggerTime alone, as Gardener's reconcile does whenever it runs.
package hibernation

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	cmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/controllermanager/v1alpha1"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// Name names the reconciler and its sweep.
const Name = "hibernation"

// HibernationConfig is the reconciler's part of the shoot function's configuration.
type HibernationConfig struct {
	// TriggerDeadline is how late a boundary may still be acted on (e.g. after an outage);
	// zero means no limit but Gardener's seven days. SHOOT_HIBERNATION_TRIGGER_DEADLINE wins
	// over controllers.shootHibernation.triggerDeadlineDuration (Gardener's default 2h).
	TriggerDeadline time.Duration `envconfig:"SHOOT_HIBERNATION_TRIGGER_DEADLINE"`
}

// FromControllerManager takes controllers.shootHibernation.triggerDeadlineDuration.
func (c *HibernationConfig) FromControllerManager(cm *cmv1alpha1.ControllerManagerConfiguration) {
	if d := cm.Controllers.ShootHibernation.TriggerDeadlineDuration; d != nil {
		c.TriggerDeadline = d.Duration
	}
}

// RBAC is what the reconciler needs: its sweep's LIST of Shoots, a GET of a Shoot whose patch
// conflicted (the runtime decides again from live state), the patches of
// spec.hibernation.enabled and status.lastHibernationTriggerTime, and its Events.
var RBAC = []rbacv1.PolicyRule{
	{APIGroups: []string{kinds.Shoot.Group}, Resources: []string{kinds.Shoot.Resource}, Verbs: []string{"get", "list", "patch"}},
	{APIGroups: []string{kinds.Shoot.Group}, Resources: []string{kinds.Shoot.Resource + "/status"}, Verbs: []string{"patch"}},
	function.EventsRBAC,
}

// Sweep runs the reconciler over every Shoot every minute: cron schedules have a minute's
// granularity, so no boundary waits longer than a tick. It costs the pages of one LIST of
// Shoots; a Shoot without schedules costs a map lookup and nothing else.
var Sweep = function.Sweep{
	Name: Name, Schedule: "* * * * *", Reconciler: Name,
	Primary: function.List{Kind: kinds.Shoot},
}

// Reconciler hibernates or wakes up one Shoot when a boundary of its schedules has passed.
type Reconciler struct {
	Writer          function.Writer
	Events          function.EventRecorder
	Clock           clock.PassiveClock
	TriggerDeadline time.Duration
	Log             *slog.Logger
}

// New builds the reconciler with its part of the configuration.
func New(deps function.Deps, cfg HibernationConfig) (*Reconciler, error) {
	if cfg.TriggerDeadline < 0 {
		return nil, fmt.Errorf("shoot hibernation trigger deadline must not be negative, got %s", cfg.TriggerDeadline)
	}
	return &Reconciler{Writer: deps.Source.Writer, Events: deps.Events, Clock: deps.Clock, TriggerDeadline: cfg.TriggerDeadline, Log: deps.Log}, nil
}

// Reconcile applies the most recent boundary the Shoot has not acted on yet, if any.
func (r *Reconciler) Reconcile(ctx context.Context, req function.Request) error {
	shoot := &gardencorev1beta1.Shoot{}
	if err := req.Reader.Get(ctx, req.Key, shoot); err != nil {
		return client.IgnoreNotFound(err)
	}
	if shoot.Spec.Hibernation == nil || len(shoot.Spec.Hibernation.Schedules) == 0 || shoot.DeletionTimestamp != nil {
		return nil
	}
	log := r.Log.With("shoot", req.Key)
	schedules, err := Parse(shoot.Spec.Hibernation.Schedules)
	if err != nil {
		// Gardener's API validation refuses invalid schedules; one that got through anyway can
		// only be fixed by its owner.
		log.Info("Invalid hibernation schedules, not acting on them", "error", err)
		return nil
	}
	if FailedAndUpToDate(shoot) {
		log.Info("Shoot is in Failed state, its hibernation schedules wait until it is retried or changed")
		return nil
	}
	now := r.Clock.Now()
	var lastTrigger *time.Time
	if shoot.Status.LastHibernationTriggerTime != nil {
		lastTrigger = &shoot.Status.LastHibernationTriggerTime.Time
	}
	operation, due := Due(schedules, shoot.CreationTimestamp.Time, lastTrigger, r.TriggerDeadline, now)
	if !due {
		return nil
	}
	if _, err := r.Writer.Patch(ctx, shoot, func() { shoot.Spec.Hibernation.Enabled = ptr.To(operation == Hibernate) }); err != nil {
		return err
	}
	if _, err := r.Writer.PatchStatus(ctx, shoot, func() { shoot.Status.LastHibernationTriggerTime = &metav1.Time{Time: now} }); err != nil {
		return err
	}
	if operation == Hibernate {
		r.Events.Event(ctx, shoot, corev1.EventTypeNormal, gardencorev1beta1.ShootEventHibernationEnabled, "Hibernating cluster due to schedule")
	} else {
		r.Events.Event(ctx, shoot, corev1.EventTypeNormal, gardencorev1beta1.ShootEventHibernationDisabled, "Waking up cluster due to schedule")
	}
	log.Info("Successfully set hibernation.enabled", "enabled", operation == Hibernate)
	return nil
}

// FailedAndUpToDate is Gardener's test for a Shoot whose last operation failed and that nothing
// has changed since: its generation is the one observed. (Gardener also requires
// status.gardener.version to be GCM's own version, so that an upgrade of Gardener lets failed
// Shoots be retried; this function is no Gardener build and has no such version, so a failed
// Shoot waits until its spec changes or gardenlet's retry updates its last operation.)
func FailedAndUpToDate(shoot *gardencorev1beta1.Shoot) bool {
	last := shoot.Status.LastOperation
	return last != nil && last.State == gardencorev1beta1.LastOperationStateFailed && shoot.Generation == shoot.Status.ObservedGeneration
}
