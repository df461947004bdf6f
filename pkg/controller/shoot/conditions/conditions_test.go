package conditions

import (
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
)

func c(t gardencorev1beta1.ConditionType, s gardencorev1beta1.ConditionStatus) gardencorev1beta1.Condition {
	return gardencorev1beta1.Condition{Type: t, Status: s}
}

func seedWith(conditions ...gardencorev1beta1.Condition) *gardencorev1beta1.Seed {
	s := &gardencorev1beta1.Seed{}
	s.Status.Conditions = conditions
	return s
}

func TestMerge(t *testing.T) {
	var (
		apiServer      = c(gardencorev1beta1.ShootAPIServerAvailable, gardencorev1beta1.ConditionTrue)
		controlPlane   = c(gardencorev1beta1.ShootControlPlaneHealthy, gardencorev1beta1.ConditionTrue)
		nodes          = c(gardencorev1beta1.ShootEveryNodeReady, gardencorev1beta1.ConditionFalse)
		gardenletReady = c(gardencorev1beta1.GardenletReady, gardencorev1beta1.ConditionTrue)
		oldGardenlet   = c(gardencorev1beta1.GardenletReady, gardencorev1beta1.ConditionUnknown)
		backups        = c(gardencorev1beta1.SeedBackupBucketsReady, gardencorev1beta1.ConditionTrue)
		stray          = c("SomethingElse", gardencorev1beta1.ConditionTrue)
		seedsAPIServer = c(gardencorev1beta1.ShootAPIServerAvailable, gardencorev1beta1.ConditionFalse)
	)
	for _, tc := range []struct {
		name  string
		shoot []gardencorev1beta1.Condition
		seed  *gardencorev1beta1.Seed
		want  []gardencorev1beta1.Condition
	}{
		{"no conditions, no seed", nil, nil, nil},
		{"not a seed: only the Shoot's own remain", []gardencorev1beta1.Condition{apiServer, oldGardenlet, stray, nodes}, nil, []gardencorev1beta1.Condition{apiServer, nodes}},
		{"a seed: its conditions follow", []gardencorev1beta1.Condition{apiServer, controlPlane}, seedWith(gardenletReady, backups), []gardencorev1beta1.Condition{apiServer, controlPlane, gardenletReady, backups}},
		{"the Seed's conditions of before are replaced", []gardencorev1beta1.Condition{apiServer, oldGardenlet, stray}, seedWith(gardenletReady), []gardencorev1beta1.Condition{apiServer, gardenletReady}},
		{"a Seed condition of a Shoot's type replaces it in place", []gardencorev1beta1.Condition{apiServer, controlPlane}, seedWith(backups, seedsAPIServer), []gardencorev1beta1.Condition{seedsAPIServer, controlPlane, backups}},
		{"a seed without conditions", []gardencorev1beta1.Condition{apiServer, oldGardenlet}, seedWith(), []gardencorev1beta1.Condition{apiServer}},
		{"nothing left", []gardencorev1beta1.Condition{oldGardenlet}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Merge(tc.shoot, tc.seed))
		})
	}
}
