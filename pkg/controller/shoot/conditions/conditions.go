// Package conditions is the "conditions" reconciler of GCM's Shoot controller: a Shoot
// registered as a seed through a ManagedSeed carries the conditions of its Seed beside its own,
// so that the Shoot alone shows the health of the seed cluster it hosts.
package conditions

import (
	"slices"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
)

// ShootConditionTypes are the conditions gardenlet maintains on every Shoot (Gardener's
// GetShootConditionTypes, workers included): every other condition type on a Shoot is a Seed's.
var ShootConditionTypes = []gardencorev1beta1.ConditionType{
	gardencorev1beta1.ShootAPIServerAvailable,
	gardencorev1beta1.ShootControlPlaneHealthy,
	gardencorev1beta1.ShootObservabilityComponentsHealthy,
	gardencorev1beta1.ShootEveryNodeReady,
	gardencorev1beta1.ShootSystemComponentsHealthy,
}

// Merge is the Shoot's conditions as Gardener builds them: the Shoot's own conditions, in their
// order, with every other condition dropped (the Seed conditions of before, and whatever else);
// then the Seed's conditions, when the Shoot is registered as a seed: a Seed condition of a type
// the Shoot has replaces it in place, the others follow in the Seed's order. Nil when nothing
// remains.
func Merge(shootConditions []gardencorev1beta1.Condition, seed *gardencorev1beta1.Seed) []gardencorev1beta1.Condition {
	var merged []gardencorev1beta1.Condition
	for _, c := range shootConditions {
		if slices.Contains(ShootConditionTypes, c.Type) {
			merged = append(merged, c)
		}
	}
	if seed == nil {
		return merged
	}
	for _, c := range seed.Status.Conditions {
		if i := slices.IndexFunc(merged, func(m gardencorev1beta1.Condition) bool { return m.Type == c.Type }); i >= 0 {
			merged[i] = c
			continue
		}
		merged = append(merged, c)
	}
	return merged
}
