package conditions

import (
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var (
	t0  = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	now = t0.Add(time.Hour)
)

func condition(status gardencorev1beta1.ConditionStatus, reason, message string) gardencorev1beta1.Condition {
	return gardencorev1beta1.Condition{Type: "Check", Status: status, Reason: reason, Message: message,
		LastTransitionTime: metav1.NewTime(t0), LastUpdateTime: metav1.NewTime(t0)}
}

func TestUpdate(t *testing.T) {
	for name, tc := range map[string]struct {
		old                      gardencorev1beta1.Condition
		status                   gardencorev1beta1.ConditionStatus
		reason, message          string
		wantTransition, wantUpdt time.Time
		wantReason, wantMessage  string
	}{
		"nothing changes":        {condition("True", "R", "M"), "True", "R", "M", t0, t0, "R", "M"},
		"message changes":        {condition("True", "R", "M"), "True", "R", "M2", t0, now, "R", "M2"},
		"status changes alone":   {condition("True", "R", "M"), "False", "R", "M", now, t0, "R", "M"},
		"status and reason":      {condition("True", "R", "M"), "False", "R2", "M", now, now, "R2", "M"},
		"empty reason, message":  {condition("True", "R", "M"), "True", "", "", t0, now, "Unspecified", "No message given."},
		"new condition gets now": {gardencorev1beta1.Condition{Type: "Check"}, "Unknown", "R", "M", now, now, "R", "M"},
	} {
		t.Run(name, func(t *testing.T) {
			got := Update(now, tc.old, tc.status, tc.reason, tc.message)
			assert.Equal(t, tc.status, got.Status)
			assert.Equal(t, tc.wantReason, got.Reason)
			assert.Equal(t, tc.wantMessage, got.Message)
			assert.Equal(t, tc.wantTransition, got.LastTransitionTime.Time.UTC(), "lastTransitionTime")
			assert.Equal(t, tc.wantUpdt, got.LastUpdateTime.Time.UTC(), "lastUpdateTime")
		})
	}
}

func TestProgressingOrFalse(t *testing.T) {
	for name, tc := range map[string]struct {
		old       gardencorev1beta1.Condition
		threshold time.Duration
		want      gardencorev1beta1.ConditionStatus
	}{
		"true without threshold fails at once":      {condition("True", "R", "M"), 0, "False"},
		"true with threshold progresses":            {condition("True", "R", "M"), time.Minute, "Progressing"},
		"progressing within threshold stays":        {condition("Progressing", "R", "M"), 2 * time.Hour, "Progressing"},
		"progressing past threshold fails":          {condition("Progressing", "R", "M"), 30 * time.Minute, "False"},
		"progressing without threshold fails":       {condition("Progressing", "R", "M"), 0, "False"},
		"unknown fails at once despite threshold":   {condition("Unknown", "R", "M"), time.Hour, "False"},
		"false stays false":                         {condition("False", "R", "M"), time.Hour, "False"},
		"exactly at the threshold still progresses": {condition("Progressing", "R", "M"), time.Hour, "Progressing"},
	} {
		t.Run(name, func(t *testing.T) {
			got := ProgressingOrFalse(now, tc.threshold, tc.old, "Failed", "it failed")
			assert.Equal(t, tc.want, got.Status)
			assert.Equal(t, "Failed", got.Reason)
		})
	}
	assert.Equal(t, gardencorev1beta1.ConditionUnknown, ProgressingOrUnknown(now, 30*time.Minute, condition("Progressing", "R", "M"), "Gone", "gone").Status)
}

func TestMerge(t *testing.T) {
	a, b, c := condition("True", "A", "a"), condition("True", "B", "b"), condition("False", "C", "c")
	a.Type, b.Type, c.Type = "A", "B", "C"
	b2 := b
	b2.Status = "False"
	got := Merge([]gardencorev1beta1.Condition{a, b}, c, b2)
	assert.Equal(t, []gardencorev1beta1.Condition{a, b2, c}, got)
	assert.Equal(t, gardencorev1beta1.ConditionStatus("True"), b.Status, "the input is not modified")
}
