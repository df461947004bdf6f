package function

import (
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	testclock "k8s.io/utils/clock/testing"
)

func TestSetConditionHasGardenersSemantics(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := testclock.NewFakePassiveClock(start)
	conditions := SetCondition(clk, nil, "Ready", gardencorev1beta1.ConditionFalse, "Init", "starting")
	assert.Len(t, conditions, 1)
	assert.Equal(t, start, conditions[0].LastTransitionTime.Time)

	clk.SetTime(start.Add(time.Minute))
	same := SetCondition(clk, append([]gardencorev1beta1.Condition(nil), conditions...), "Ready", gardencorev1beta1.ConditionFalse, "Init", "starting")
	assert.Equal(t, conditions, same, "nothing changes when nothing does")

	clk.SetTime(start.Add(2 * time.Minute))
	updated := SetCondition(clk, same, "Ready", gardencorev1beta1.ConditionFalse, "Waiting", "still")
	assert.Equal(t, start, updated[0].LastTransitionTime.Time, "same status: the transition time stays")
	assert.Equal(t, start.Add(2*time.Minute), updated[0].LastUpdateTime.Time)

	clk.SetTime(start.Add(3 * time.Minute))
	flipped := SetCondition(clk, updated, "Ready", gardencorev1beta1.ConditionTrue, "Ready", "done")
	assert.Equal(t, start.Add(3*time.Minute), flipped[0].LastTransitionTime.Time)
	assert.Equal(t, gardencorev1beta1.ConditionTrue, GetCondition(flipped, "Ready").Status)
	assert.Nil(t, GetCondition(flipped, "Other"))

	two := SetCondition(clk, flipped, "Other", gardencorev1beta1.ConditionUnknown, "R", "m", "ERR_INFRA_RATE_LIMITS_EXCEEDED")
	assert.Len(t, two, 2)
	assert.Equal(t, []gardencorev1beta1.ErrorCode{"ERR_INFRA_RATE_LIMITS_EXCEEDED"}, two[1].Codes)
}
