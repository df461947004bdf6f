package migration

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/gardener/gardener/pkg/apis/core"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// Name is the reconciler's name within the shoot function; its sweep has the same name.
const Name = "migration"

// RBAC is what the reconciler needs: read Shoots and Seeds (GETs for events, LISTs for the Seed
// mapping and the sweep) and patch the Shoots' status.
var RBAC = []rbacv1.PolicyRule{
	{APIGroups: []string{kinds.Shoot.Group}, Resources: []string{kinds.Shoot.Resource, kinds.Seed.Resource}, Verbs: []string{"get", "list"}},
	{APIGroups: []string{kinds.Shoot.Group}, Resources: []string{kinds.Shoot.Resource + "/status"}, Verbs: []string{"patch"}},
}

// Reconciler maintains one Shoot's ReadyForMigration constraint.
type Reconciler struct {
	Writer function.Writer
	Clock  clock.PassiveClock
	Log    *slog.Logger
}

var _ function.Handler = &Reconciler{}

// New builds the reconciler.
func New(deps function.Deps) (function.Handler, error) {
	return &Reconciler{Writer: deps.Source.Writer, Clock: deps.Clock, Log: deps.Log}, nil
}

// Reconcile removes the constraint from a Shoot that is not migrating, and sets it on a
// migrating one from the state of its destination and source Seeds. A Seed that cannot be read
// is an error, as in Gardener.
func (r *Reconciler) Reconcile(ctx context.Context, req function.Request) error {
	shoot := &gardencorev1beta1.Shoot{}
	if err := req.Reader.Get(ctx, req.Key, shoot); err != nil {
		return err
	}
	log := r.Log.With("shoot", req.Key)
	if !Migrating(shoot) {
		changed, err := r.Writer.PatchStatus(ctx, shoot, func() { shoot.Status.Constraints = Remove(shoot.Status.Constraints) })
		if changed && err == nil {
			log.Info("removed constraint: the shoot is not migrating", "constraint", Constraint)
		}
		return err
	}
	source := &gardencorev1beta1.Seed{}
	if err := req.Reader.Get(ctx, client.ObjectKey{Name: *shoot.Status.SeedName}, source); err != nil {
		return fmt.Errorf("reading source seed %s: %w", *shoot.Status.SeedName, err)
	}
	destination := &gardencorev1beta1.Seed{}
	if err := req.Reader.Get(ctx, client.ObjectKey{Name: *shoot.Spec.SeedName}, destination); err != nil {
		return fmt.Errorf("reading destination seed %s: %w", *shoot.Spec.SeedName, err)
	}
	verdict := Judge(destination, source)
	changed, err := r.Writer.PatchStatus(ctx, shoot, func() { shoot.Status.Constraints = Apply(r.Clock, shoot.Status.Constraints, verdict) })
	if changed && err == nil {
		log.Info("updated constraint", "constraint", Constraint, "status", verdict.Status, "reason", verdict.Reason, "message", verdict.Message)
	}
	return err
}

// Predicate passes the events of Shoots that are migrating or carry the constraint outside a
// migration, as their event object shows. Gardener passes an update whose spec.seedName changed;
// an update event carries only the new Shoot, so every update of a migrating Shoot passes
// (gardenlet's progress reports during the migration among them).
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
	return Migrating(shoot) || NeedsConstraintRemoval(shoot)
}

// SeedPredicate passes every Seed event but deletions: a Seed's readiness (its conditions,
// generation, gardenlet version, deletion) is what the constraint reflects.
func SeedPredicate(ev function.Event) bool { return !ev.Deleted }

// MapSeedToShoots maps a Seed's event to the Shoots migrating to or from it: two LISTs with the
// field selectors gardener-apiserver offers (spec.seedName, status.seedName), each also excluding
// the Shoots that stay on the Seed, so that only migrating Shoots (and new ones not yet
// scheduled there) are read. Gardener instead re-checks every migrating Shoot every five seconds.
func MapSeedToShoots(ctx context.Context, reader client.Reader, ev function.Event) ([]function.Key, error) {
	var keys []function.Key
	for _, selector := range []fields.Selector{
		fields.AndSelectors(fields.OneTermEqualSelector(core.ShootSeedName, ev.Key.Name), fields.OneTermNotEqualSelector(core.ShootStatusSeedName, ev.Key.Name)),
		fields.AndSelectors(fields.OneTermEqualSelector(core.ShootStatusSeedName, ev.Key.Name), fields.OneTermNotEqualSelector(core.ShootSeedName, ev.Key.Name)),
	} {
		shoots := &gardencorev1beta1.ShootList{}
		if err := reader.List(ctx, shoots, client.MatchingFieldsSelector{Selector: selector}); err != nil {
			return nil, err
		}
		for i := range shoots.Items {
			if Migrating(&shoots.Items[i]) {
				keys = append(keys, client.ObjectKeyFromObject(&shoots.Items[i]))
			}
		}
	}
	return keys, nil
}

// Watches feeds the reconciler with the events of Shoots and of their Seeds.
var Watches = []function.Watch{
	{Kind: kinds.Shoot, Reconciler: Name, Predicate: Predicate},
	{Kind: kinds.Seed, Reconciler: Name, Predicate: SeedPredicate, Map: MapSeedToShoots},
}

// Sweeps: every 10 minutes, every Shoot against one LIST of the Seeds, for the events that were
// dropped.
var Sweeps = []function.Sweep{{
	Name: Name, Schedule: "2-59/10 * * * *", Reconciler: Name,
	Primary: function.List{Kind: kinds.Shoot},
	Related: []function.List{{Kind: kinds.Seed}},
}}
