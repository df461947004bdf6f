package function

import (
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
)

// SetCondition sets the condition of type t in conditions with Gardener's semantics: the
// lastTransitionTime changes only when the status changes, the lastUpdateTime whenever status,
// reason, message or codes change, and nothing changes when nothing does (so a Writer patch of
// an unchanged condition sends nothing). It returns the updated list.
func SetCondition(clk clock.PassiveClock, conditions []gardencorev1beta1.Condition, t gardencorev1beta1.ConditionType,
	status gardencorev1beta1.ConditionStatus, reason, message string, codes ...gardencorev1beta1.ErrorCode) []gardencorev1beta1.Condition {
	now := metav1.NewTime(clk.Now())
	for i := range conditions {
		c := &conditions[i]
		if c.Type != t {
			continue
		}
		if c.Status != status {
			c.LastTransitionTime = now
		}
		if c.Status != status || c.Reason != reason || c.Message != message || !sameCodes(c.Codes, codes) {
			c.LastUpdateTime = now
		}
		c.Status, c.Reason, c.Message, c.Codes = status, reason, message, codes
		return conditions
	}
	return append(conditions, gardencorev1beta1.Condition{
		Type: t, Status: status, Reason: reason, Message: message, Codes: codes,
		LastTransitionTime: now, LastUpdateTime: now,
	})
}

// GetCondition returns the condition of type t, or nil.
func GetCondition(conditions []gardencorev1beta1.Condition, t gardencorev1beta1.ConditionType) *gardencorev1beta1.Condition {
	for i := range conditions {
		if conditions[i].Type == t {
			return &conditions[i]
		}
	}
	return nil
}

func sameCodes(a, b []gardencorev1beta1.ErrorCode) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
