package conditions

import (
	"context"
	"fmt"
	"log/slog"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	"github.com/gardener/gardener/pkg/apis/seedmanagement"
	seedmanagementv1alpha1 "github.com/gardener/gardener/pkg/apis/seedmanagement/v1alpha1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// Name is the reconciler's name within the shoot function; its sweep has the same name.
const Name = "conditions"

// RBAC is what the reconciler needs: read Shoots, ManagedSeeds and Seeds (GETs and LISTs by
// field for events, LISTs for the sweep) and patch the Shoots' status.
var RBAC = []rbacv1.PolicyRule{
	{APIGroups: []string{kinds.Shoot.Group}, Resources: []string{kinds.Shoot.Resource, kinds.Seed.Resource}, Verbs: []string{"get", "list"}},
	{APIGroups: []string{kinds.Shoot.Group}, Resources: []string{kinds.Shoot.Resource + "/status"}, Verbs: []string{"patch"}},
	{APIGroups: []string{kinds.ManagedSeed.Group}, Resources: []string{kinds.ManagedSeed.Resource}, Verbs: []string{"get", "list"}},
}

// Reconciler merges one Shoot's Seed conditions into its own.
type Reconciler struct {
	Writer function.Writer
	Log    *slog.Logger
}

var _ function.Handler = &Reconciler{}

// New builds the reconciler.
func New(deps function.Deps) (function.Handler, error) {
	return &Reconciler{Writer: deps.Source.Writer, Log: deps.Log}, nil
}

// Reconcile finds the Seed the Shoot is registered as (the ManagedSeed of the Shoot's namespace
// whose spec.shoot.name names it, and the Seed of the ManagedSeed's name) and writes Merge's
// conditions; a Shoot whose conditions are right costs no write.
func (r *Reconciler) Reconcile(ctx context.Context, req function.Request) error {
	shoot := &gardencorev1beta1.Shoot{}
	if err := req.Reader.Get(ctx, req.Key, shoot); err != nil {
		return err
	}
	seed, err := registeredSeed(ctx, req.Reader, shoot)
	if err != nil {
		return err
	}
	changed, err := r.Writer.PatchStatus(ctx, shoot, func() { shoot.Status.Conditions = Merge(shoot.Status.Conditions, seed) })
	if changed && err == nil {
		r.Log.Info("updated shoot conditions", "shoot", req.Key, "registeredAsSeed", seed != nil)
	}
	return err
}

// registeredSeed is the Seed the Shoot is registered as, or nil. More than one ManagedSeed for
// the Shoot is an error, as in Gardener; a ManagedSeed whose Seed does not exist (yet) registers
// none.
func registeredSeed(ctx context.Context, reader client.Reader, shoot *gardencorev1beta1.Shoot) (*gardencorev1beta1.Seed, error) {
	managedSeeds := &seedmanagementv1alpha1.ManagedSeedList{}
	if err := reader.List(ctx, managedSeeds, client.InNamespace(shoot.Namespace), client.MatchingFields{seedmanagement.ManagedSeedShootName: shoot.Name}); err != nil {
		return nil, fmt.Errorf("listing the shoot's ManagedSeeds: %w", err)
	}
	switch len(managedSeeds.Items) {
	case 0:
		return nil, nil
	case 1:
	default:
		return nil, fmt.Errorf("found more than one ManagedSeed objects for shoot %s/%s", shoot.Namespace, shoot.Name)
	}
	seed := &gardencorev1beta1.Seed{}
	if err := reader.Get(ctx, client.ObjectKey{Name: managedSeeds.Items[0].Name}, seed); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading the shoot's Seed: %w", err)
	}
	return seed, nil
}

// Predicate is Gardener's on the Shoot: created Shoots only. Their conditions change with the
// Seed's, whose events come through SeedPredicate.
func Predicate(ev function.Event) bool { return ev.Created }

// SeedPredicate passes every Seed event: Gardener passes creations, deletions and the updates
// that change a Seed's conditions, but an update event carries only the new Seed, so every
// update passes.
func SeedPredicate(function.Event) bool { return true }

// MapSeedToShoot maps a Seed's event to the Shoot registered as it: the ManagedSeed of the Seed's
// name in the garden namespace names it (one GET). A Seed no ManagedSeed manages maps to nothing.
func MapSeedToShoot(ctx context.Context, reader client.Reader, ev function.Event) ([]function.Key, error) {
	managedSeed := &seedmanagementv1alpha1.ManagedSeed{}
	if err := reader.Get(ctx, client.ObjectKey{Namespace: v1beta1constants.GardenNamespace, Name: ev.Key.Name}, managedSeed); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if managedSeed.Spec.Shoot == nil {
		return nil, nil
	}
	return []function.Key{{Namespace: managedSeed.Namespace, Name: managedSeed.Spec.Shoot.Name}}, nil
}

// Watches feeds the reconciler with the events of Shoots and Seeds.
var Watches = []function.Watch{
	{Kind: kinds.Shoot, Reconciler: Name, Predicate: Predicate},
	{Kind: kinds.Seed, Reconciler: Name, Predicate: SeedPredicate, Map: MapSeedToShoot},
}

// Sweeps: every 10 minutes, the Shoots of the garden namespace (ManagedSeeds live there, so only
// its Shoots can be registered as seeds) against one LIST each of its ManagedSeeds, indexed by
// the Shoot they name, and of the Seeds.
var Sweeps = []function.Sweep{{
	Name: Name, Schedule: "4-59/10 * * * *", Reconciler: Name,
	Primary: function.List{Kind: kinds.Shoot, Namespace: v1beta1constants.GardenNamespace},
	Related: []function.List{
		{Kind: kinds.ManagedSeed, Namespace: v1beta1constants.GardenNamespace, Indexes: map[string]function.IndexFunc{
			seedmanagement.ManagedSeedShootName: func(obj client.Object) []string {
				if ms, ok := obj.(*seedmanagementv1alpha1.ManagedSeed); ok && ms.Spec.Shoot != nil {
					return []string{ms.Spec.Shoot.Name}
				}
				return nil
			},
		}},
		{Kind: kinds.Seed},
	},
}}
