package migration

import (
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

func seed(version string, generation, observed int64, conditions ...gardencorev1beta1.Condition) *gardencorev1beta1.Seed {
	s := &gardencorev1beta1.Seed{ObjectMeta: metav1.ObjectMeta{Name: "seed", Generation: generation}}
	s.Status.ObservedGeneration = observed
	s.Status.Conditions = conditions
	if version != "" {
		s.Status.Gardener = &gardencorev1beta1.Gardener{Version: version, Name: "gardenlet-xyz"}
	}
	return s
}

func condition(t gardencorev1beta1.ConditionType, s gardencorev1beta1.ConditionStatus) gardencorev1beta1.Condition {
	return gardencorev1beta1.Condition{Type: t, Status: s, Reason: "SomeReason", Message: "some message"}
}

var (
	gardenletReady = condition(gardencorev1beta1.GardenletReady, gardencorev1beta1.ConditionTrue)
	systemHealthy  = condition(gardencorev1beta1.SeedSystemComponentsHealthy, gardencorev1beta1.ConditionTrue)
)

func TestJudge(t *testing.T) {
	source := seed("v1.150.0", 1, 1)
	deleting := seed("v1.150.0", 1, 1, gardenletReady, systemHealthy)
	deleting.DeletionTimestamp = ptr.To(metav1.Now())
	for _, tc := range []struct {
		name        string
		destination *gardencorev1beta1.Seed
		source      *gardencorev1beta1.Seed
		want        Verdict
	}{
		{"ready", seed("v1.150.0", 3, 3, gardenletReady, systemHealthy), source,
			Verdict{gardencorev1beta1.ConditionTrue, ReasonDestinationSeedReady, "Destination seed cluster is ready for the shoot migration"}},
		{"being deleted", deleting, source, Verdict{gardencorev1beta1.ConditionFalse, ReasonDestinationSeedInDeletion, "Seed is being deleted"}},
		{"no version on the destination", seed("", 1, 1, gardenletReady, systemHealthy), source,
			Verdict{gardencorev1beta1.ConditionFalse, ReasonDestinationSeedUnready, "missing Gardener version information on source or destination seed"}},
		{"no version on the source", seed("v1.150.0", 1, 1, gardenletReady, systemHealthy), seed("", 1, 1),
			Verdict{gardencorev1beta1.ConditionFalse, ReasonDestinationSeedUnready, "missing Gardener version information on source or destination seed"}},
		{"another version", seed("v1.149.0", 1, 1, gardenletReady, systemHealthy), source,
			Verdict{gardencorev1beta1.ConditionFalse, ReasonDestinationSeedUnready, "observing Gardener version not up to date (v1.149.0/v1.150.0)"}},
		{"generation not observed", seed("v1.150.0", 4, 3, gardenletReady, systemHealthy), source,
			Verdict{gardencorev1beta1.ConditionFalse, ReasonDestinationSeedUnready, "observed generation outdated (3/4)"}},
		{"a condition missing", seed("v1.150.0", 1, 1, condition(gardencorev1beta1.GardenletReady, gardencorev1beta1.ConditionFalse)), source,
			Verdict{gardencorev1beta1.ConditionFalse, ReasonDestinationSeedUnready, `condition "SeedSystemComponentsHealthy" is missing`}},
		{"a condition not true", seed("v1.150.0", 1, 1, gardenletReady, condition(gardencorev1beta1.SeedSystemComponentsHealthy, gardencorev1beta1.ConditionProgressing)), source,
			Verdict{gardencorev1beta1.ConditionFalse, ReasonDestinationSeedUnready, `condition "SeedSystemComponentsHealthy" has invalid status Progressing (expected True) due to SomeReason: some message`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Judge(tc.destination, tc.source))
		})
	}
}

func TestApplyOnlyOnStatusChange(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	clk := testclock.NewFakeClock(t0)
	other := gardencorev1beta1.Condition{Type: "Other", Status: gardencorev1beta1.ConditionTrue}
	unready := Verdict{gardencorev1beta1.ConditionFalse, ReasonDestinationSeedUnready, "not yet"}

	constraints := Apply(clk, []gardencorev1beta1.Condition{other}, unready)
	assert.Len(t, constraints, 2)
	c := constraints[1]
	assert.Equal(t, gardencorev1beta1.Condition{Type: Constraint, Status: gardencorev1beta1.ConditionFalse, Reason: ReasonDestinationSeedUnready, Message: "not yet",
		LastTransitionTime: metav1.NewTime(t0), LastUpdateTime: metav1.NewTime(t0)}, c)

	clk.Step(time.Minute)
	same := Apply(clk, constraints, Verdict{gardencorev1beta1.ConditionFalse, ReasonDestinationSeedInDeletion, "Seed is being deleted"})
	assert.Equal(t, constraints, same, "the status stays: Gardener keeps reason and message")

	ready := Apply(clk, constraints, Verdict{gardencorev1beta1.ConditionTrue, ReasonDestinationSeedReady, "ready"})
	assert.Equal(t, gardencorev1beta1.ConditionTrue, ready[1].Status)
	assert.Equal(t, metav1.NewTime(t0.Add(time.Minute)), ready[1].LastTransitionTime)
	assert.Equal(t, []gardencorev1beta1.Condition{other}, Remove(ready))
	assert.Nil(t, Remove([]gardencorev1beta1.Condition{ready[1]}))
}

func TestMigratingAndConstraintRemoval(t *testing.T) {
	shoot := func(spec, status *string, op gardencorev1beta1.LastOperationType, constrained bool) *gardencorev1beta1.Shoot {
		s := &gardencorev1beta1.Shoot{}
		s.Spec.SeedName, s.Status.SeedName = spec, status
		if op != "" {
			s.Status.LastOperation = &gardencorev1beta1.LastOperation{Type: op}
		}
		if constrained {
			s.Status.Constraints = []gardencorev1beta1.Condition{{Type: Constraint, Status: gardencorev1beta1.ConditionTrue}}
		}
		return s
	}
	a, b := ptr.To("a"), ptr.To("b")
	assert.True(t, Migrating(shoot(b, a, "", false)))
	assert.False(t, Migrating(shoot(a, a, "", false)))
	assert.False(t, Migrating(shoot(a, nil, "", false)), "not scheduled yet")
	assert.False(t, Migrating(shoot(nil, a, "", false)))

	assert.True(t, NeedsConstraintRemoval(shoot(a, a, gardencorev1beta1.LastOperationTypeRestore, true)))
	assert.True(t, NeedsConstraintRemoval(shoot(a, a, "", true)))
	assert.False(t, NeedsConstraintRemoval(shoot(b, a, gardencorev1beta1.LastOperationTypeMigrate, true)), "migrating")
	assert.False(t, NeedsConstraintRemoval(shoot(a, a, gardencorev1beta1.LastOperationTypeReconcile, false)))
}
