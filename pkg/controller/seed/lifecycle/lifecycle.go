// Package lifecycle is the "Lifecycle" reconciler of GCM's Seed controller (Gardener's
// gardenlet-lifecycle controller for seeds): every 10 s it compares each seed's gardenlet Lease
// with the monitor period. A gardenlet that stopped renewing it gets its seed's GardenletReady
// condition set to Unknown; after the shoot monitor period the conditions and constraints of
// every Shoot on the seed follow, since nobody maintains them any more; and a ManagedSeed whose
// gardenlet's client certificate expired is told to reconcile, which bootstraps the gardenlet
// anew.
package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/gardener/gardener/pkg/apis/core"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	seedmanagementv1alpha1 "github.com/gardener/gardener/pkg/apis/seedmanagement/v1alpha1"
	coordinationv1 "k8s.io/api/coordination/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// ReconcilerName names the reconciler and its sweep in the seed function.
const ReconcilerName = "lifecycle"

// LeaseNamespace is where each gardenlet renews the Lease named after its seed.
const LeaseNamespace = gardencorev1beta1.GardenerSeedLeaseNamespace

// PageSize is the page size of the sweep's LISTs of Seeds and Leases: a landscape's seeds fit
// in one page, so a tick costs one request per kind.
const PageSize = 5000

// Gardener's reason and messages of conditions set to Unknown for a silent gardenlet.
const (
	ReasonStatusUnknown = "StatusUnknown"
	MessageSeed         = "Gardenlet stopped posting status updates."
	MessageShoot        = "Gardenlet stopped sending heartbeats."
)

// Decision is what a tick does for one seed.
type Decision struct {
	// GardenletReady is the seed's condition when the gardenlet is overdue; nil when it is not
	// (or never reported anything yet), and then nothing else happens either.
	GardenletReady *gardencorev1beta1.Condition
	// ReconcileManagedSeed: the gardenlet's client certificate expired; its ManagedSeed, if
	// any, is to bootstrap it anew.
	ReconcileManagedSeed bool
	// ShootsUnknown: the gardenlet has been silent for the shoot monitor period; the seed's
	// Shoots' conditions and constraints are to be Unknown.
	ShootsUnknown bool
}

// Decide looks at a seed and its gardenlet's Lease (nil when there is none) at now. A seed
// without conditions is new: its gardenlet never reported, so it is given time. A gardenlet is
// overdue when its Lease was not renewed within monitorPeriod (or has no renewal at all); the
// shoot monitor period counts from the moment GardenletReady turned Unknown.
func Decide(now time.Time, monitorPeriod, shootMonitorPeriod time.Duration, seed *gardencorev1beta1.Seed, lease *coordinationv1.Lease) Decision {
	if len(seed.Status.Conditions) == 0 {
		return Decision{}
	}
	if lease != nil && lease.Spec.RenewTime != nil && lease.Spec.RenewTime.UTC().Add(monitorPeriod).After(now.UTC()) {
		return Decision{}
	}
	old := function.GetOrInitCondition(now, seed.Status.Conditions, gardencorev1beta1.GardenletReady)
	ready := function.UpdatedCondition(now, old, gardencorev1beta1.ConditionUnknown, ReasonStatusUnknown, MessageSeed)
	expiry := seed.Status.ClientCertificateExpirationTimestamp
	return Decision{
		GardenletReady:       &ready,
		ReconcileManagedSeed: expiry != nil && expiry.UTC().Before(now.UTC()),
		ShootsUnknown:        !ready.LastTransitionTime.UTC().Add(shootMonitorPeriod).After(now.UTC()),
	}
}

// shootConditionTypes are the conditions gardenlet maintains on a Shoot; workerless Shoots have
// no nodes.
func shootConditionTypes(shoot *gardencorev1beta1.Shoot) []gardencorev1beta1.ConditionType {
	types := []gardencorev1beta1.ConditionType{
		gardencorev1beta1.ShootAPIServerAvailable,
		gardencorev1beta1.ShootControlPlaneHealthy,
		gardencorev1beta1.ShootObservabilityComponentsHealthy,
	}
	if len(shoot.Spec.Provider.Workers) > 0 {
		types = append(types, gardencorev1beta1.ShootEveryNodeReady)
	}
	return append(types, gardencorev1beta1.ShootSystemComponentsHealthy)
}

// shootConstraintTypes are the constraints gardenlet maintains on a Shoot.
var shootConstraintTypes = []gardencorev1beta1.ConditionType{
	gardencorev1beta1.ShootHibernationPossible,
	gardencorev1beta1.ShootMaintenancePreconditionsSatisfied,
}

// SetShootStatusUnknown sets every condition and constraint gardenlet maintains on shoot to
// Unknown (adding those it lacks); once they are, it changes nothing.
func SetShootStatusUnknown(now time.Time, shoot *gardencorev1beta1.Shoot) {
	unknown := func(existing []gardencorev1beta1.Condition, types []gardencorev1beta1.ConditionType) []gardencorev1beta1.Condition {
		updated := make([]gardencorev1beta1.Condition, 0, len(types))
		for _, t := range types {
			updated = append(updated, function.UpdatedCondition(now, function.GetOrInitCondition(now, existing, t), gardencorev1beta1.ConditionUnknown, ReasonStatusUnknown, MessageShoot))
		}
		return function.MergeConditions(existing, updated...)
	}
	shoot.Status.Conditions = unknown(shoot.Status.Conditions, shootConditionTypes(shoot))
	shoot.Status.Constraints = unknown(shoot.Status.Constraints, shootConstraintTypes)
}

// Reconciler checks the gardenlet of the Seed a key names.
type Reconciler struct {
	// Live reads the API server: a gardenlet found overdue is confirmed there before anything is
	// written (see Reconcile).
	Live               client.Reader
	Writer             function.Writer
	Clock              clock.PassiveClock
	Log                *slog.Logger
	MonitorPeriod      time.Duration
	ShootMonitorPeriod time.Duration
}

var _ function.Handler = &Reconciler{}

// Reconcile reads the seed and its Lease (from the sweep's lists) and acts on Decide. The Lease
// (live), Shoots and the ManagedSeed are read only for an overdue gardenlet, so a tick over
// healthy seeds costs the sweep's two LISTs and nothing else.
func (r *Reconciler) Reconcile(ctx context.Context, req function.Request) error {
	seed := &gardencorev1beta1.Seed{}
	if err := req.Reader.Get(ctx, req.Key, seed); err != nil {
		return client.IgnoreNotFound(err)
	}
	lease, err := readLease(ctx, req.Reader, seed.Name)
	if err != nil {
		return err
	}
	now := r.Clock.Now()
	decision := Decide(now, r.MonitorPeriod, r.ShootMonitorPeriod, seed, lease)
	if decision.GardenletReady == nil {
		return nil
	}
	// A sweep lists the Leases before it streams the Seeds, so a gardenlet that created or
	// renewed its Lease in between reads as silent from the sweep's list, and the Unknown it
	// would get stays until gardenlet posts again. Overdue gardenlets are rare: each is
	// confirmed with a live read before anything is written (an event's read already is one).
	if req.Trigger == function.BySweep {
		if lease, err = readLease(ctx, r.Live, seed.Name); err != nil {
			return err
		}
		if decision = Decide(now, r.MonitorPeriod, r.ShootMonitorPeriod, seed, lease); decision.GardenletReady == nil {
			return nil
		}
	}
	log := r.Log.With("seed", seed.Name)
	changed, err := r.Writer.PatchStatus(ctx, seed, func() {
		seed.Status.Conditions = function.MergeConditions(seed.Status.Conditions, *decision.GardenletReady)
	})
	if err != nil {
		return err
	}
	if changed {
		log.Info("Set GardenletReady condition to Unknown as gardenlet stopped renewing its Lease", "monitorPeriod", r.MonitorPeriod)
	}
	if decision.ReconcileManagedSeed {
		if err := r.reconcileManagedSeed(ctx, req.Reader, log, seed.Name); err != nil {
			return err
		}
	}
	if !decision.ShootsUnknown {
		return nil
	}
	return r.setShootsUnknown(ctx, req.Reader, log, seed.Name, now)
}

// reconcileManagedSeed asks the ManagedSeed of the seed (garden/<seed>), if there is one, to
// reconcile, with Gardener's operation annotation.
func (r *Reconciler) reconcileManagedSeed(ctx context.Context, reader client.Reader, log *slog.Logger, name string) error {
	managedSeed := &metav1.PartialObjectMetadata{}
	managedSeed.SetGroupVersionKind(seedmanagementv1alpha1.SchemeGroupVersion.WithKind("ManagedSeed"))
	if err := reader.Get(ctx, client.ObjectKey{Namespace: v1beta1constants.GardenNamespace, Name: name}, managedSeed); err != nil {
		return client.IgnoreNotFound(err)
	}
	changed, err := r.Writer.Patch(ctx, managedSeed, func() {
		metav1.SetMetaDataAnnotation(&managedSeed.ObjectMeta, v1beta1constants.GardenerOperation, v1beta1constants.GardenerOperationReconcile)
	})
	if changed && err == nil {
		log.Info("Triggered ManagedSeed reconciliation since gardenlet client certificate is expired")
	}
	return err
}

// setShootsUnknown sets the conditions and constraints of every Shoot on the seed
// (status.seedName, as Gardener selects them) to Unknown, with one LIST.
func (r *Reconciler) setShootsUnknown(ctx context.Context, reader client.Reader, log *slog.Logger, seed string, now time.Time) error {
	shoots := &gardencorev1beta1.ShootList{}
	if err := reader.List(ctx, shoots, client.MatchingFields{core.ShootStatusSeedName: seed}); err != nil {
		return err
	}
	var errs []error
	updated := 0
	for i := range shoots.Items {
		shoot := &shoots.Items[i]
		changed, err := r.Writer.PatchStatus(ctx, shoot, func() { SetShootStatusUnknown(now, shoot) })
		if err != nil {
			errs = append(errs, fmt.Errorf("shoot %s: %w", client.ObjectKeyFromObject(shoot), err))
		} else if changed {
			updated++
		}
	}
	if updated > 0 {
		log.Info("Gardenlet has not sent heartbeats for the shoot monitor period: set Shoot conditions and constraints to Unknown", "shoots", updated, "shootMonitorPeriod", r.ShootMonitorPeriod)
	}
	return errors.Join(errs...)
}

// Sweep is the lifecycle tick: every 10 s (Gardener's syncPeriod of the controller), one LIST
// of Seeds and one of the gardenlets' Leases, each in one page.
func Sweep(reconciler string) function.Sweep {
	return function.Sweep{
		Name: reconciler, Schedule: "*/10 * * * * *", Reconciler: reconciler,
		Primary: function.List{Kind: kinds.Seed, PageSize: PageSize},
		Related: []function.List{{Kind: kinds.Lease, Namespace: LeaseNamespace, PageSize: PageSize}},
	}
}

// RBAC is what the reconciler does: read Seeds and Leases (a reconcile repeated after a
// conflict reads them live), patch the Seeds' status, list Shoots and patch their status,
// and annotate ManagedSeeds.
var RBAC = []rbacv1.PolicyRule{
	{APIGroups: []string{gardencorev1beta1.SchemeGroupVersion.Group}, Resources: []string{"seeds"}, Verbs: []string{"get", "list"}},
	{APIGroups: []string{gardencorev1beta1.SchemeGroupVersion.Group}, Resources: []string{"seeds/status"}, Verbs: []string{"patch"}},
	{APIGroups: []string{gardencorev1beta1.SchemeGroupVersion.Group}, Resources: []string{"shoots"}, Verbs: []string{"list"}},
	{APIGroups: []string{gardencorev1beta1.SchemeGroupVersion.Group}, Resources: []string{"shoots/status"}, Verbs: []string{"patch"}},
	{APIGroups: []string{coordinationv1.GroupName}, Resources: []string{"leases"}, Verbs: []string{"get", "list"}},
	{APIGroups: []string{seedmanagementv1alpha1.SchemeGroupVersion.Group}, Resources: []string{"managedseeds"}, Verbs: []string{"get", "patch"}},
}

// readLease reads the gardenlet Lease of seed; nil when there is none.
func readLease(ctx context.Context, reader client.Reader, seed string) (*coordinationv1.Lease, error) {
	lease := &coordinationv1.Lease{}
	if err := reader.Get(ctx, client.ObjectKey{Namespace: LeaseNamespace, Name: seed}, lease); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return lease, nil
}
