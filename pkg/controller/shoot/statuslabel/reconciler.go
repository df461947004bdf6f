package statuslabel

import (
	"context"
	"log/slog"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// Name is the reconciler's name within the shoot function; its sweep has the same name.
const Name = "statuslabel"

// Label is the label the reconciler maintains.
const Label = v1beta1constants.ShootStatus

// RBAC is what the reconciler needs: read a Shoot (GET for events, LIST for the sweep) and patch
// its labels.
var RBAC = []rbacv1.PolicyRule{
	{APIGroups: []string{kinds.Shoot.Group}, Resources: []string{kinds.Shoot.Resource}, Verbs: []string{"get", "list", "patch"}},
}

// Reconciler labels one Shoot with its health.
type Reconciler struct {
	Writer function.Writer
	Log    *slog.Logger
}

var _ function.Handler = &Reconciler{}

// New builds the reconciler.
func New(deps function.Deps) (function.Handler, error) {
	return &Reconciler{Writer: deps.Source.Writer, Log: deps.Log}, nil
}

// Reconcile sets the label to the Shoot's health; a Shoot whose label is right costs no write.
func (r *Reconciler) Reconcile(ctx context.Context, req function.Request) error {
	shoot := &gardencorev1beta1.Shoot{}
	if err := req.Reader.Get(ctx, req.Key, shoot); err != nil {
		return err
	}
	status := string(Of(shoot))
	changed, err := r.Writer.Patch(ctx, shoot, func() { metav1.SetMetaDataLabel(&shoot.ObjectMeta, Label, status) })
	if changed && err == nil {
		r.Log.Info("updated shoot status label", "shoot", req.Key, "status", status)
	}
	return err
}

// Predicate is Gardener's: every created Shoot, and an updated Shoot whose label is missing or
// differs from the health its event object shows. Deletions never.
func Predicate(ev function.Event) bool {
	if ev.Deleted {
		return false
	}
	if ev.Created || ev.Object == nil {
		return true
	}
	shoot, err := function.Decode[gardencorev1beta1.Shoot](ev)
	if err != nil {
		return true // the reconcile reads it properly
	}
	current, ok := shoot.Labels[Label]
	return !ok || current != string(Of(shoot))
}

// Watches feeds the reconciler with Shoot events.
var Watches = []function.Watch{{Kind: kinds.Shoot, Reconciler: Name, Predicate: Predicate}}

// Sweeps: every 30 minutes, every Shoot against its label, for events that were dropped. One
// paginated LIST of the Shoots (in full: the health is in their status), no other request, and
// a write only for a Shoot whose label is wrong.
var Sweeps = []function.Sweep{{
	Name: Name, Schedule: "7,37 * * * *", Reconciler: Name,
	Primary: function.List{Kind: kinds.Shoot},
}}
