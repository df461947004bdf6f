package shoot_test

import (
	"context"
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	seedmanagementv1alpha1 "github.com/gardener/gardener/pkg/apis/seedmanagement/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/shoot/conditions"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
)

// registeredAsSeed creates, in the garden namespace, a Shoot with the given conditions and a
// ManagedSeed that registers it as the Seed, which reports seedConditions.
func registeredAsSeed(t testing.TB, shootConditions []gardencorev1beta1.Condition, seedConditions ...gardencorev1beta1.Condition) (*gardencorev1beta1.Shoot, *gardencorev1beta1.Seed, *seedmanagementv1alpha1.ManagedSeed) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, client.IgnoreAlreadyExists(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: v1beta1constants.GardenNamespace}})))
	seed := seedReporting(t, "v1.150.0", seedConditions...)
	shoot := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: "soil-" + seed.Name, Namespace: v1beta1constants.GardenNamespace}}
	require.NoError(t, env.Client.Create(ctx, shoot))
	shoot = writeShootStatus(t, shoot, func(st *gardencorev1beta1.ShootStatus) { st.Conditions = shootConditions })
	managedSeed := &seedmanagementv1alpha1.ManagedSeed{ObjectMeta: metav1.ObjectMeta{Name: seed.Name, Namespace: v1beta1constants.GardenNamespace}}
	managedSeed.Spec.Shoot = &seedmanagementv1alpha1.Shoot{Name: shoot.Name}
	require.NoError(t, env.Client.Create(ctx, managedSeed))
	return shoot, seed, managedSeed
}

func conditionTypes(t testing.TB, s *gardencorev1beta1.Shoot) map[gardencorev1beta1.ConditionType]gardencorev1beta1.ConditionStatus {
	t.Helper()
	types := map[gardencorev1beta1.ConditionType]gardencorev1beta1.ConditionStatus{}
	for _, c := range fresh(t, s).Status.Conditions {
		types[c.Type] = c.Status
	}
	return types
}

var (
	apiServerAvailable = gardencorev1beta1.Condition{Type: gardencorev1beta1.ShootAPIServerAvailable, Status: gardencorev1beta1.ConditionTrue, Reason: "HealthzRequestSucceeded", Message: "API server /healthz endpoint responded with success status code."}
	staleSeedCondition = gardencorev1beta1.Condition{Type: gardencorev1beta1.SeedBackupBucketsReady, Status: gardencorev1beta1.ConditionFalse, Reason: "Old", Message: "from a Seed of before"}
)

func TestConditionsOfTheRegisteredSeed(t *testing.T) {
	f := newFixture(t, functiontest.AsFunction())
	shoot, seed, managedSeed := registeredAsSeed(t, []gardencorev1beta1.Condition{apiServerAvailable, staleSeedCondition}, seedHealthy...)

	f.Send("add", shoot)
	assert.Equal(t, map[gardencorev1beta1.ConditionType]gardencorev1beta1.ConditionStatus{
		gardencorev1beta1.ShootAPIServerAvailable:     gardencorev1beta1.ConditionTrue,
		gardencorev1beta1.GardenletReady:              gardencorev1beta1.ConditionTrue,
		gardencorev1beta1.SeedSystemComponentsHealthy: gardencorev1beta1.ConditionTrue,
	}, conditionTypes(t, shoot), "the Shoot's own and the Seed's; the stale Seed condition is gone")

	// The Seed's gardenlet stops posting: the Seed's event maps to its Shoot through the ManagedSeed.
	seed = reportSeed(t, seed, "v1.150.0", gardencorev1beta1.Condition{Type: gardencorev1beta1.GardenletReady, Status: gardencorev1beta1.ConditionUnknown, Reason: "SeedStatusUnknown", Message: "Gardenlet stopped posting seed status."})
	f.Send("update", seed)
	assert.Equal(t, map[gardencorev1beta1.ConditionType]gardencorev1beta1.ConditionStatus{
		gardencorev1beta1.ShootAPIServerAvailable: gardencorev1beta1.ConditionTrue,
		gardencorev1beta1.GardenletReady:          gardencorev1beta1.ConditionUnknown,
	}, conditionTypes(t, shoot))

	// The Shoot is no seed any more: the sweep drops the Seed's conditions.
	require.NoError(t, env.Client.Delete(context.Background(), managedSeed))
	f.Sweep(conditions.Name)
	assert.Equal(t, map[gardencorev1beta1.ConditionType]gardencorev1beta1.ConditionStatus{
		gardencorev1beta1.ShootAPIServerAvailable: gardencorev1beta1.ConditionTrue,
	}, conditionTypes(t, shoot))

	counts := f.Measure(func() { f.Sweep(conditions.Name) })
	assert.Equal(t, map[string]int{"list": 3}, counts, "a sweep with nothing changed: one LIST each of the garden's Shoots and ManagedSeeds and of the Seeds, no write")
}

func TestConditionsSweep(t *testing.T) {
	f := newFixture(t, functiontest.AsFunction())
	shoot, _, _ := registeredAsSeed(t, []gardencorev1beta1.Condition{apiServerAvailable}, seedHealthy...)
	f.Sweep(conditions.Name)
	assert.Equal(t, map[gardencorev1beta1.ConditionType]gardencorev1beta1.ConditionStatus{
		gardencorev1beta1.ShootAPIServerAvailable:     gardencorev1beta1.ConditionTrue,
		gardencorev1beta1.GardenletReady:              gardencorev1beta1.ConditionTrue,
		gardencorev1beta1.SeedSystemComponentsHealthy: gardencorev1beta1.ConditionTrue,
	}, conditionTypes(t, shoot))
	f.Send("update", fresh(t, shoot)) // the status label reconciler labels it
	assert.Empty(t, f.Measure(func() { f.Send("update", fresh(t, shoot)) }), "a Shoot's updates are filtered: its conditions follow the Seed's events")
}
