// Package migration is the "migration" reconciler of GCM's Shoot controller: a Shoot whose
// control plane moves to another seed (spec.seedName differs from status.seedName) carries the
// constraint ReadyForMigration, True once the destination Seed is up to date and healthy, so
// that the gardenlet of the source seed can start the migration without reading the destination
// Seed itself.
package migration

import (
	"fmt"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"k8s.io/utils/clock"

	"github.com/gardener-knative/gardener-knative/pkg/function"
)

// Constraint is the constraint the reconciler maintains.
const Constraint = gardencorev1beta1.ShootReadyForMigration

// The constraint's reasons.
const (
	ReasonDestinationSeedInDeletion = "DestinationSeedInDeletion"
	ReasonDestinationSeedUnready    = "DestinationSeedUnready"
	ReasonDestinationSeedReady      = "DestinationSeedReady"
)

// Migrating is Gardener's "should prepare the shoot for migration": both seed names are set and
// differ.
func Migrating(shoot *gardencorev1beta1.Shoot) bool {
	return shoot.Spec.SeedName != nil && shoot.Status.SeedName != nil && *shoot.Spec.SeedName != *shoot.Status.SeedName
}

// NeedsConstraintRemoval says whether the Shoot carries the constraint while its last operation is
// not a migration: the migration is over (or was never started), the constraint must go.
func NeedsConstraintRemoval(shoot *gardencorev1beta1.Shoot) bool {
	op := shoot.Status.LastOperation
	return function.GetCondition(shoot.Status.Constraints, Constraint) != nil && (op == nil || op.Type != gardencorev1beta1.LastOperationTypeMigrate)
}

// requiredSeedConditions must be True on the destination Seed.
var requiredSeedConditions = []gardencorev1beta1.ConditionType{gardencorev1beta1.GardenletReady, gardencorev1beta1.SeedSystemComponentsHealthy}

// CheckDestination is Gardener's readiness of the destination Seed for a migration from the
// source Seed, with its messages: both Seeds report the Gardener version of their gardenlet and
// it is the same, the destination's gardenlet has observed its latest spec, and its conditions
// GardenletReady and SeedSystemComponentsHealthy exist and are True.
func CheckDestination(destination, source *gardencorev1beta1.Seed) error {
	identity := source.Status.Gardener
	if destination.Status.Gardener == nil || identity == nil {
		return fmt.Errorf("missing Gardener version information on source or destination seed")
	}
	if destination.Status.Gardener.Version != identity.Version {
		return fmt.Errorf("observing Gardener version not up to date (%s/%s)", destination.Status.Gardener.Version, identity.Version)
	}
	if destination.Status.ObservedGeneration < destination.Generation {
		return fmt.Errorf("observed generation outdated (%d/%d)", destination.Status.ObservedGeneration, destination.Generation)
	}
	var notTrue []gardencorev1beta1.Condition
	for _, t := range requiredSeedConditions {
		c := function.GetCondition(destination.Status.Conditions, t)
		if c == nil {
			return fmt.Errorf("condition %q is missing", t)
		}
		if c.Status != gardencorev1beta1.ConditionTrue {
			notTrue = append(notTrue, *c)
		}
	}
	if len(notTrue) > 0 {
		c := notTrue[0]
		return fmt.Errorf("condition %q has invalid status %s (expected %s) due to %s: %s", c.Type, c.Status, gardencorev1beta1.ConditionTrue, c.Reason, c.Message)
	}
	return nil
}

// Verdict is the constraint a migrating Shoot should carry.
type Verdict struct {
	Status          gardencorev1beta1.ConditionStatus
	Reason, Message string
}

// Judge is the constraint for a migration to destination from source.
func Judge(destination, source *gardencorev1beta1.Seed) Verdict {
	if destination.DeletionTimestamp != nil {
		return Verdict{gardencorev1beta1.ConditionFalse, ReasonDestinationSeedInDeletion, "Seed is being deleted"}
	}
	if err := CheckDestination(destination, source); err != nil {
		return Verdict{gardencorev1beta1.ConditionFalse, ReasonDestinationSeedUnready, err.Error()}
	}
	return Verdict{gardencorev1beta1.ConditionTrue, ReasonDestinationSeedReady, "Destination seed cluster is ready for the shoot migration"}
}

// Apply sets the constraint as Gardener does: only when its status changes (or it is missing);
// a constraint whose status stays keeps its reason, message and times, even when the verdict's
// reason differs (e.g. an unready destination Seed that is now being deleted).
func Apply(clk clock.PassiveClock, constraints []gardencorev1beta1.Condition, v Verdict) []gardencorev1beta1.Condition {
	if c := function.GetCondition(constraints, Constraint); c != nil && c.Status == v.Status {
		return constraints
	}
	return function.SetCondition(clk, constraints, Constraint, v.Status, v.Reason, v.Message)
}

// Remove drops the constraint.
func Remove(constraints []gardencorev1beta1.Condition) []gardencorev1beta1.Condition {
	var kept []gardencorev1beta1.Condition
	for _, c := range constraints {
		if c.Type != Constraint {
			kept = append(kept, c)
		}
	}
	return kept
}
