package retry

import (
	"context"
	"log/slog"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/gardener-knative/gardener-knative/pkg/controller/shoot/statuslabel"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// Name is the reconciler's name within the shoot function; its sweep has the same name.
const Name = "retry"

// RBAC is what the reconciler needs: read a Shoot (GET for events, LIST for the sweep) and
// annotate it.
var RBAC = []rbacv1.PolicyRule{
	{APIGroups: []string{kinds.Shoot.Group}, Resources: []string{kinds.Shoot.Resource}, Verbs: []string{"get", "list", "patch"}},
}

// Reconciler retries one Shoot when it is due.
type Reconciler struct {
	Writer  function.Writer
	Clock   clock.PassiveClock
	Periods Periods
	Log     *slog.Logger
}

var _ function.Handler = &Reconciler{}

// New builds the reconciler with its periods.
func New(deps function.Deps, periods Periods) (function.Handler, error) {
	if err := periods.Validate(); err != nil {
		return nil, err
	}
	return &Reconciler{Writer: deps.Source.Writer, Clock: deps.Clock, Periods: periods, Log: deps.Log}, nil
}

// Reconcile annotates the Shoot with gardener.cloud/operation=retry when it is due; gardenlet
// then reconciles it and removes the annotation. A Shoot not yet due is left to the next event
// or sweep after its retry time.
func (r *Reconciler) Reconcile(ctx context.Context, req function.Request) error {
	shoot := &gardencorev1beta1.Shoot{}
	if err := req.Reader.Get(ctx, req.Key, shoot); err != nil {
		return err
	}
	if !FailedDueToRateLimits(shoot) {
		return nil
	}
	if !Due(r.Clock.Now(), shoot, r.Periods) {
		r.Log.Debug("retry of failed shoot scheduled", "shoot", req.Key, "retryAt", RetryAt(shoot, r.Periods))
		return nil
	}
	changed, err := r.Writer.Patch(ctx, shoot, func() {
		metav1.SetMetaDataAnnotation(&shoot.ObjectMeta, v1beta1constants.GardenerOperation, v1beta1constants.ShootOperationRetry)
	})
	if changed && err == nil {
		r.Log.Info("retrying failed shoot", "shoot", req.Key)
	}
	return err
}

// Predicate passes the events of Shoots that failed due to rate limits, as their event object
// shows. Gardener passes every creation and the update that makes a Shoot fail, and re-queues
// the Shoot for its retry time; here the sweep comes back for it, so the events that cannot
// lead to a retry cost nothing.
func Predicate(ev function.Event) bool {
	if ev.Deleted {
		return false
	}
	if ev.Object == nil {
		return true
	}
	shoot, err := function.Decode[gardencorev1beta1.Shoot](ev)
	if err != nil {
		return true // the reconcile reads it properly
	}
	return FailedDueToRateLimits(shoot)
}

// Watches feeds the reconciler with Shoot events.
var Watches = []function.Watch{{Kind: kinds.Shoot, Reconciler: Name, Predicate: Predicate}}

// Sweeps: every minute, the Shoots labelled unhealthy, so that a failed Shoot is retried within
// a minute of its retry time. Every failed Shoot is unhealthy by Gardener's health computation,
// and the statuslabel reconciler keeps the label, so the LIST is narrowed on the server to a
// small part of the Shoots.
var Sweeps = []function.Sweep{{
	Name: Name, Schedule: "* * * * *", Reconciler: Name,
	Primary: function.List{Kind: kinds.Shoot, LabelSelector: statuslabel.Label + "=" + string(statuslabel.Unhealthy)},
}}
