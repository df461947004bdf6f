package shootstate

import (
	"context"
	"fmt"
	"log/slog"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// Name is the name of the function's one reconciler and of its sweep.
const Name = "finalizer"

// Function is GCM's ShootState finalizer controller.
var Function = &function.Function{
	Name:          "shootstate",
	Parts:         []function.Part{function.Runtime},
	WorksOnGarden: true,
	// It reads the metadata of ShootStates (never their state data) and patches their
	// finalizers, and reads Shoots.
	RBAC: []rbacv1.PolicyRule{
		{APIGroups: []string{kinds.ShootState.Group}, Resources: []string{kinds.ShootState.Resource}, Verbs: []string{"get", "list", "patch"}},
		{APIGroups: []string{kinds.Shoot.Group}, Resources: []string{kinds.Shoot.Resource}, Verbs: []string{"get"}},
	},
	Reconcilers: []function.Reconciler{{
		Name: Name,
		For:  kinds.ShootState,
		New: func(deps function.Deps) (function.Handler, error) {
			return &Reconciler{Writer: deps.Source.Writer, Log: deps.Log}, nil
		},
	}},
	Watches: []function.Watch{
		{Kind: kinds.ShootState, Reconciler: Name, Predicate: ShootStatePredicate},
		// A ShootState has its Shoot's namespace and name: the event's key is the ShootState's.
		{Kind: kinds.Shoot, Reconciler: Name, Predicate: ShootPredicate, Map: func(_ context.Context, _ client.Reader, ev function.Event) ([]function.Key, error) {
			return []function.Key{ev.Key}, nil
		}, Changes: function.Changes{function.StatusField("lastOperation")}},
	},
	Sweeps: []function.Sweep{{
		// Every minute, every ShootState (metadata only: their state data can be large, and
		// ShootStates exist only while a migration runs, so there are few), each against a GET of
		// its Shoot: it catches the end of a restore that became a Reconcile operation, which
		// no Shoot event shows (see ShootPredicate), and dropped events.
		Name: Name, Schedule: "* * * * *", Reconciler: Name,
		Primary: function.List{Kind: kinds.ShootState, MetadataOnly: true},
	}},
}

// Reconciler adds or removes the finalizer of one ShootState.
type Reconciler struct {
	Writer function.Writer
	Log    *slog.Logger
}

var _ function.Handler = &Reconciler{}

// Reconcile reads the ShootState's metadata and its Shoot, and applies Want. A Shoot that does
// not exist or has no last operation is an error, as in Gardener, but a terminal one: no retry
// of the event can change it, the Shoot's own events and the sweep come back to it.
func (r *Reconciler) Reconcile(ctx context.Context, req function.Request) error {
	state := &metav1.PartialObjectMetadata{}
	state.SetGroupVersionKind(kinds.ShootState.GroupVersionKind)
	if err := req.Reader.Get(ctx, req.Key, state); err != nil {
		return err
	}
	shoot := &gardencorev1beta1.Shoot{}
	if err := req.Reader.Get(ctx, req.Key, shoot); err != nil {
		err = fmt.Errorf("reading the Shoot of ShootState %s: %w", req.Key, err)
		if apierrors.IsNotFound(err) {
			return function.Terminal(err)
		}
		return err
	}
	op := shoot.Status.LastOperation
	if op == nil {
		return function.Terminal(fmt.Errorf("last operation of Shoot %s is not set", req.Key))
	}
	add, remove := Want(op)
	log := r.Log.With("shootState", req.Key, "shootLastOperationType", op.Type, "shootLastOperationState", op.State)
	switch {
	case add:
		changed, err := r.Writer.Patch(ctx, state, func() { controllerutil.AddFinalizer(state, Finalizer) })
		if changed && err == nil {
			log.Info("added finalizer")
		}
		return err
	case remove:
		changed, err := r.Writer.Patch(ctx, state, func() { controllerutil.RemoveFinalizer(state, Finalizer) })
		if changed && err == nil {
			log.Info("removed finalizer")
		}
		return err
	}
	return nil
}

// ShootStatePredicate is Gardener's: creations and updates of ShootStates, not deletions.
func ShootStatePredicate(ev function.Event) bool { return !ev.Deleted }

// ShootPredicate passes the updates of Shoots whose last operation is a Migrate or a Restore, as
// their event object shows. Gardener passes the transitions into Migrate, from Migrate to
// Restore, from an unfinished Restore to a succeeded one, and from an unfinished Restore to a
// Reconcile; an update event carries only the new Shoot, so every update during a Migrate or
// Restore passes (the first three transitions among them), and the last transition, which
// looks like any Reconcile update, is left to the sweep: passing every Reconcile update of every
// Shoot would cost a GET each for the rare Shoot that has a ShootState.
func ShootPredicate(ev function.Event) bool {
	if ev.Created || ev.Deleted {
		return false
	}
	if ev.Object == nil {
		return true
	}
	opType, _, _ := unstructured.NestedString(ev.Object.Object, "status", "lastOperation", "type")
	return opType == string(gardencorev1beta1.LastOperationTypeMigrate) || opType == string(gardencorev1beta1.LastOperationTypeRestore)
}
