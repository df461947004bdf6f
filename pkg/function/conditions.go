package function

import (
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
)

// The condition helpers compute conditions with the semantics of Gardener's condition builder:
// a status change moves the lastTransitionTime, a change of reason, message or codes the
// lastUpdateTime, and a condition that does not change compares equal, so that a Writer patch
// of an unchanged condition sends nothing. They take the time rather than a clock where a
// decision function computes several conditions at one instant.

// Gardener's reason and message of a condition whose check has not run yet.
const (
	ConditionInitializedReason  = "ConditionInitialized"
	ConditionInitializedMessage = "The condition has been initialized but its semantic check has not been performed yet."
)

// SetCondition sets the condition of type t in conditions to status, reason, message and codes
// (UpdatedCondition of the current or an initialized one) and returns the updated list.
func SetCondition(clk clock.PassiveClock, conditions []gardencorev1beta1.Condition, t gardencorev1beta1.ConditionType,
	status gardencorev1beta1.ConditionStatus, reason, message string, codes ...gardencorev1beta1.ErrorCode) []gardencorev1beta1.Condition {
	now := clk.Now()
	return MergeConditions(conditions, UpdatedCondition(now, GetOrInitCondition(now, conditions, t), status, reason, message, codes...))
}

// GetCondition returns the condition of type t (pointing into conditions), or nil.
func GetCondition(conditions []gardencorev1beta1.Condition, t gardencorev1beta1.ConditionType) *gardencorev1beta1.Condition {
	for i := range conditions {
		if conditions[i].Type == t {
			return &conditions[i]
		}
	}
	return nil
}

// InitCondition is a new condition of type t: Unknown until its check runs.
func InitCondition(now time.Time, t gardencorev1beta1.ConditionType) gardencorev1beta1.Condition {
	return gardencorev1beta1.Condition{
		Type: t, Status: gardencorev1beta1.ConditionUnknown, Reason: ConditionInitializedReason, Message: ConditionInitializedMessage,
		LastTransitionTime: metav1.NewTime(now), LastUpdateTime: metav1.NewTime(now),
	}
}

// GetOrInitCondition returns a copy of the condition of type t, or an initialized one.
func GetOrInitCondition(now time.Time, conditions []gardencorev1beta1.Condition, t gardencorev1beta1.ConditionType) gardencorev1beta1.Condition {
	if c := GetCondition(conditions, t); c != nil {
		return *c.DeepCopy()
	}
	return InitCondition(now, t)
}

// UpdatedCondition returns old with status, reason, message and codes, as Gardener's builder
// does: the lastTransitionTime moves when the status changes, the lastUpdateTime when reason,
// message or codes change; an empty reason or message is replaced by Gardener's placeholders,
// and the codes are not carried over from old.
func UpdatedCondition(now time.Time, old gardencorev1beta1.Condition, status gardencorev1beta1.ConditionStatus, reason, message string, codes ...gardencorev1beta1.ErrorCode) gardencorev1beta1.Condition {
	c := *old.DeepCopy()
	if c.LastTransitionTime.IsZero() {
		c.LastTransitionTime = metav1.NewTime(now)
	}
	if c.LastUpdateTime.IsZero() {
		c.LastUpdateTime = metav1.NewTime(now)
	}
	if reason == "" {
		reason = "Unspecified"
	}
	if message == "" {
		message = "No message given."
	}
	c.Status, c.Reason, c.Message, c.Codes = status, reason, message, codes
	if c.Status != old.Status {
		c.LastTransitionTime = metav1.NewTime(now)
	}
	if c.Reason != old.Reason || c.Message != old.Message || !apiequality.Semantic.DeepEqual(c.Codes, old.Codes) {
		c.LastUpdateTime = metav1.NewTime(now)
	}
	return c
}

// MergeConditions returns a copy of conditions in which the conditions of the types of updated
// replace those of the same types in place; the others are appended in the order given.
func MergeConditions(conditions []gardencorev1beta1.Condition, updated ...gardencorev1beta1.Condition) []gardencorev1beta1.Condition {
	out := append([]gardencorev1beta1.Condition(nil), conditions...)
	for _, u := range updated {
		if c := GetCondition(out, u.Type); c != nil {
			*c = u
		} else {
			out = append(out, u)
		}
	}
	return out
}

// ProgressingOrFalseCondition sets a failing check's condition to Progressing while threshold
// has not passed since it left True, and to False after it (at once without a threshold). Only
// a True or Progressing condition becomes Progressing: one that is Unknown or False already
// fails at once.
func ProgressingOrFalseCondition(now time.Time, threshold time.Duration, c gardencorev1beta1.Condition, reason, message string) gardencorev1beta1.Condition {
	return progressingWithinThreshold(now, threshold, c, gardencorev1beta1.ConditionFalse, reason, message)
}

// ProgressingOrUnknownCondition is ProgressingOrFalseCondition for a check whose outcome is
// Unknown.
func ProgressingOrUnknownCondition(now time.Time, threshold time.Duration, c gardencorev1beta1.Condition, reason, message string) gardencorev1beta1.Condition {
	return progressingWithinThreshold(now, threshold, c, gardencorev1beta1.ConditionUnknown, reason, message)
}

func progressingWithinThreshold(now time.Time, threshold time.Duration, c gardencorev1beta1.Condition, eventual gardencorev1beta1.ConditionStatus, reason, message string) gardencorev1beta1.Condition {
	switch c.Status {
	case gardencorev1beta1.ConditionTrue:
		if threshold > 0 {
			return UpdatedCondition(now, c, gardencorev1beta1.ConditionProgressing, reason, message)
		}
	case gardencorev1beta1.ConditionProgressing:
		if threshold > 0 && now.UTC().Sub(c.LastTransitionTime.UTC()) <= threshold {
			return UpdatedCondition(now, c, gardencorev1beta1.ConditionProgressing, reason, message)
		}
	}
	return UpdatedCondition(now, c, eventual, reason, message)
}
