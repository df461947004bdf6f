package function

import (
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

var (
	conditionsT0  = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	conditionsNow = conditionsT0.Add(time.Hour)
)

func checkCondition(status gardencorev1beta1.ConditionStatus, reason, message string) gardencorev1beta1.Condition {
	return gardencorev1beta1.Condition{Type: "Check", Status: status, Reason: reason, Message: message,
		LastTransitionTime: metav1.NewTime(conditionsT0), LastUpdateTime: metav1.NewTime(conditionsT0)}
}

func TestUpdatedCondition(t *testing.T) {
	for name, tc := range map[string]struct {
		old                      gardencorev1beta1.Condition
		status                   gardencorev1beta1.ConditionStatus
		reason, message          string
		wantTransition, wantUpdt time.Time
		wantReason, wantMessage  string
	}{
		"nothing changes":        {checkCondition("True", "R", "M"), "True", "R", "M", conditionsT0, conditionsT0, "R", "M"},
		"message changes":        {checkCondition("True", "R", "M"), "True", "R", "M2", conditionsT0, conditionsNow, "R", "M2"},
		"status changes alone":   {checkCondition("True", "R", "M"), "False", "R", "M", conditionsNow, conditionsT0, "R", "M"},
		"status and reason":      {checkCondition("True", "R", "M"), "False", "R2", "M", conditionsNow, conditionsNow, "R2", "M"},
		"empty reason, message":  {checkCondition("True", "R", "M"), "True", "", "", conditionsT0, conditionsNow, "Unspecified", "No message given."},
		"new condition gets now": {gardencorev1beta1.Condition{Type: "Check"}, "Unknown", "R", "M", conditionsNow, conditionsNow, "R", "M"},
	} {
		t.Run(name, func(t *testing.T) {
			got := UpdatedCondition(conditionsNow, tc.old, tc.status, tc.reason, tc.message)
			assert.Equal(t, tc.status, got.Status)
			assert.Equal(t, tc.wantReason, got.Reason)
			assert.Equal(t, tc.wantMessage, got.Message)
			assert.Equal(t, tc.wantTransition, got.LastTransitionTime.Time.UTC(), "lastTransitionTime")
			assert.Equal(t, tc.wantUpdt, got.LastUpdateTime.Time.UTC(), "lastUpdateTime")
		})
	}
}

func TestProgressingOrFalseCondition(t *testing.T) {
	for name, tc := range map[string]struct {
		old       gardencorev1beta1.Condition
		threshold time.Duration
		want      gardencorev1beta1.ConditionStatus
	}{
		"true without threshold fails at once":      {checkCondition("True", "R", "M"), 0, "False"},
		"true with threshold progresses":            {checkCondition("True", "R", "M"), time.Minute, "Progressing"},
		"progressing within threshold stays":        {checkCondition("Progressing", "R", "M"), 2 * time.Hour, "Progressing"},
		"progressing past threshold fails":          {checkCondition("Progressing", "R", "M"), 30 * time.Minute, "False"},
		"progressing without threshold fails":       {checkCondition("Progressing", "R", "M"), 0, "False"},
		"unknown fails at once despite threshold":   {checkCondition("Unknown", "R", "M"), time.Hour, "False"},
		"false stays false":                         {checkCondition("False", "R", "M"), time.Hour, "False"},
		"exactly at the threshold still progresses": {checkCondition("Progressing", "R", "M"), time.Hour, "Progressing"},
	} {
		t.Run(name, func(t *testing.T) {
			got := ProgressingOrFalseCondition(conditionsNow, tc.threshold, tc.old, "Failed", "it failed")
			assert.Equal(t, tc.want, got.Status)
			assert.Equal(t, "Failed", got.Reason)
		})
	}
	assert.Equal(t, gardencorev1beta1.ConditionUnknown, ProgressingOrUnknownCondition(conditionsNow, 30*time.Minute, checkCondition("Progressing", "R", "M"), "Gone", "gone").Status)
}

func TestMergeConditions(t *testing.T) {
	a, b, c := checkCondition("True", "A", "a"), checkCondition("True", "B", "b"), checkCondition("False", "C", "c")
	a.Type, b.Type, c.Type = "A", "B", "C"
	b2 := b
	b2.Status = "False"
	got := MergeConditions([]gardencorev1beta1.Condition{a, b}, c, b2)
	assert.Equal(t, []gardencorev1beta1.Condition{a, b2, c}, got)
	assert.Equal(t, gardencorev1beta1.ConditionStatus("True"), b.Status, "the input is not modified")
}

func TestGetOrInitCondition(t *testing.T) {
	initialized := GetOrInitCondition(conditionsNow, nil, "Check")
	assert.Equal(t, InitCondition(conditionsNow, "Check"), initialized)
	assert.Equal(t, gardencorev1beta1.ConditionUnknown, initialized.Status)
	assert.Equal(t, ConditionInitializedReason, initialized.Reason)

	existing := []gardencorev1beta1.Condition{checkCondition("True", "R", "M")}
	got := GetOrInitCondition(conditionsNow, existing, "Check")
	assert.Equal(t, existing[0], got)
	got.Status = "False"
	assert.Equal(t, gardencorev1beta1.ConditionTrue, existing[0].Status, "a copy, not the list's condition")
}
