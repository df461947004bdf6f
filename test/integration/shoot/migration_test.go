package shoot_test

import (
	"context"
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gardener-knative/gardener-knative/pkg/controller/shoot/migration"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
)

// seedReporting creates a Seed whose gardenlet reports the given version and conditions (no
// version: a gardenlet that has not reported yet).
func seedReporting(t testing.TB, version string, conditions ...gardencorev1beta1.Condition) *gardencorev1beta1.Seed {
	t.Helper()
	s := &gardencorev1beta1.Seed{ObjectMeta: metav1.ObjectMeta{GenerateName: "seed-"}}
	require.NoError(t, env.Client.Create(context.Background(), s))
	return reportSeed(t, s, version, conditions...)
}

func reportSeed(t testing.TB, s *gardencorev1beta1.Seed, version string, conditions ...gardencorev1beta1.Condition) *gardencorev1beta1.Seed {
	t.Helper()
	s = fresh(t, s)
	s.Status.ObservedGeneration = s.Generation
	s.Status.Gardener = nil
	if version != "" {
		s.Status.Gardener = &gardencorev1beta1.Gardener{Name: "gardenlet", Version: version}
	}
	s.Status.Conditions = conditions
	require.NoError(t, env.Client.Status().Update(context.Background(), s))
	return s
}

var seedHealthy = []gardencorev1beta1.Condition{
	{Type: gardencorev1beta1.GardenletReady, Status: gardencorev1beta1.ConditionTrue, Reason: "GardenletReady", Message: "Gardenlet is posting ready status."},
	{Type: gardencorev1beta1.SeedSystemComponentsHealthy, Status: gardencorev1beta1.ConditionTrue, Reason: "SystemComponentsRunning", Message: "All system components are healthy."},
}

// migratingShoot creates a Shoot on source whose spec moves it to destination.
func (f *fixture) migratingShoot(t testing.TB, name string, source, destination *gardencorev1beta1.Seed) *gardencorev1beta1.Shoot {
	t.Helper()
	s := f.shootWithSpec(t, name, func(s *gardencorev1beta1.Shoot) { s.Spec.SeedName = ptr.To(destination.Name) })
	return writeShootStatus(t, s, func(st *gardencorev1beta1.ShootStatus) {
		st.SeedName = ptr.To(source.Name)
		st.LastOperation = lastOperation(gardencorev1beta1.LastOperationTypeReconcile, gardencorev1beta1.LastOperationStateSucceeded)
	})
}

func readyForMigration(t testing.TB, s *gardencorev1beta1.Shoot) *gardencorev1beta1.Condition {
	t.Helper()
	return function.GetCondition(fresh(t, s).Status.Constraints, migration.Constraint)
}

func TestMigrationConstraintFollowsTheDestinationSeed(t *testing.T) {
	f := newFixture(t, functiontest.AsFunction())
	source := seedReporting(t, "v1.150.0", seedHealthy...)
	destination := seedReporting(t, "")
	s := f.migratingShoot(t, "moving", source, destination)

	f.Send("update", s)
	c := readyForMigration(t, s)
	require.NotNil(t, c)
	assert.Equal(t, gardencorev1beta1.ConditionFalse, c.Status)
	assert.Equal(t, migration.ReasonDestinationSeedUnready, c.Reason)
	assert.Equal(t, "missing Gardener version information on source or destination seed", c.Message)

	// The destination's gardenlet reports in: the Seed's event maps to the migrating Shoot.
	destination = reportSeed(t, destination, "v1.150.0", seedHealthy...)
	f.Send("update", destination)
	c = readyForMigration(t, s)
	require.NotNil(t, c)
	assert.Equal(t, gardencorev1beta1.ConditionTrue, c.Status)
	assert.Equal(t, migration.ReasonDestinationSeedReady, c.Reason)

	// The migration and restore are done: the constraint goes.
	s = writeShootStatus(t, s, func(st *gardencorev1beta1.ShootStatus) {
		st.SeedName = ptr.To(destination.Name)
		st.LastOperation = lastOperation(gardencorev1beta1.LastOperationTypeRestore, gardencorev1beta1.LastOperationStateSucceeded)
	})
	f.Send("update", s)
	assert.Nil(t, readyForMigration(t, s))
	assert.Empty(t, f.Measure(func() { f.Send("update", fresh(t, s)) }), "a settled Shoot's events are filtered")
	assert.Equal(t, map[string]int{"get": 1, "list": 2}, f.Measure(func() { f.Send("update", fresh(t, source)) }),
		"a Seed's event: the ManagedSeed of its name (conditions), the Shoots migrating to or from it (migration)")
}

func TestMigrationSweep(t *testing.T) {
	f := newFixture(t, functiontest.AsFunction())
	source := seedReporting(t, "v1.150.0", seedHealthy...)
	outdated := seedReporting(t, "v1.149.0", seedHealthy...)
	ready := seedReporting(t, "v1.150.0", seedHealthy...)
	toOutdated := f.migratingShoot(t, "to-outdated", source, outdated)
	toReady := f.migratingShoot(t, "to-ready", source, ready)
	settled := writeShootStatus(t, f.shootWithSpec(t, "settled", func(s *gardencorev1beta1.Shoot) { s.Spec.SeedName = ptr.To(source.Name) }), func(st *gardencorev1beta1.ShootStatus) {
		st.SeedName = ptr.To(source.Name)
		st.Constraints = []gardencorev1beta1.Condition{{Type: migration.Constraint, Status: gardencorev1beta1.ConditionTrue, Reason: migration.ReasonDestinationSeedReady, Message: "left over"}}
	})

	f.Sweep(migration.Name)
	c := readyForMigration(t, toOutdated)
	require.NotNil(t, c)
	assert.Equal(t, gardencorev1beta1.ConditionFalse, c.Status)
	assert.Equal(t, "observing Gardener version not up to date (v1.149.0/v1.150.0)", c.Message)
	assert.Equal(t, gardencorev1beta1.ConditionTrue, readyForMigration(t, toReady).Status)
	assert.Nil(t, readyForMigration(t, settled))

	counts := f.Measure(func() { f.Sweep(migration.Name) })
	assert.Equal(t, map[string]int{"list": shootPages(t) + 1}, counts, "a sweep with nothing changed: one (paginated) LIST each of Shoots and Seeds, no write")
}
