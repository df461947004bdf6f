// Package conditions computes conditions with the semantics of Gardener's condition builder,
// which the Seed controller's checks and the lifecycle reconciler rely on: a status change moves
// the lastTransitionTime, a change of reason, message or codes the lastUpdateTime, and a
// condition that does not change compares equal, so that writing it sends nothing. It also holds
// the controller's condition thresholds: a failing check is Progressing for a while before it
// turns False.
package conditions

import (
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Gardener's reason and message of a condition whose check has not run yet.
const (
	InitializedReason  = "ConditionInitialized"
	InitializedMessage = "The condition has been initialized but its semantic check has not been performed yet."
)

// Init is a new condition of type t: Unknown until its check runs.
func Init(now time.Time, t gardencorev1beta1.ConditionType) gardencorev1beta1.Condition {
	return gardencorev1beta1.Condition{
		Type: t, Status: gardencorev1beta1.ConditionUnknown, Reason: InitializedReason, Message: InitializedMessage,
		LastTransitionTime: metav1.NewTime(now), LastUpdateTime: metav1.NewTime(now),
	}
}

// Get returns a copy of the condition of type t, or nil.
func Get(conditions []gardencorev1beta1.Condition, t gardencorev1beta1.ConditionType) *gardencorev1beta1.Condition {
	for _, c := range conditions {
		if c.Type == t {
			return &c
		}
	}
	return nil
}

// GetOrInit returns the condition of type t, or an initialized one.
func GetOrInit(now time.Time, conditions []gardencorev1beta1.Condition, t gardencorev1beta1.ConditionType) gardencorev1beta1.Condition {
	if c := Get(conditions, t); c != nil {
		return *c
	}
	return Init(now, t)
}

// Update returns old with status, reason, message and codes, as Gardener's builder does: the
// lastTransitionTime moves when the status changes, the lastUpdateTime when reason, message or
// codes change; an empty reason or message is replaced by Gardener's placeholders, and the
// codes are not carried over from old.
func Update(now time.Time, old gardencorev1beta1.Condition, status gardencorev1beta1.ConditionStatus, reason, message string, codes ...gardencorev1beta1.ErrorCode) gardencorev1beta1.Condition {
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

// Merge replaces the conditions of the types of updated in conditions, in place, and appends
// the others in the order given.
func Merge(conditions []gardencorev1beta1.Condition, updated ...gardencorev1beta1.Condition) []gardencorev1beta1.Condition {
	out := append([]gardencorev1beta1.Condition(nil), conditions...)
	for _, u := range updated {
		replaced := false
		for i := range out {
			if out[i].Type == u.Type {
				out[i], replaced = u, true
				break
			}
		}
		if !replaced {
			out = append(out, u)
		}
	}
	return out
}

// ProgressingOrFalse sets a failing check's condition to Progressing while threshold has not
// passed since it left True, and to False after it (at once without a threshold). Only a True
// or Progressing condition becomes Progressing: one that is Unknown or False already fails at once.
func ProgressingOrFalse(now time.Time, threshold time.Duration, c gardencorev1beta1.Condition, reason, message string) gardencorev1beta1.Condition {
	return progressingWithinThreshold(now, threshold, c, gardencorev1beta1.ConditionFalse, reason, message)
}

// ProgressingOrUnknown is ProgressingOrFalse for a check whose outcome is Unknown.
func ProgressingOrUnknown(now time.Time, threshold time.Duration, c gardencorev1beta1.Condition, reason, message string) gardencorev1beta1.Condition {
	return progressingWithinThreshold(now, threshold, c, gardencorev1beta1.ConditionUnknown, reason, message)
}

func progressingWithinThreshold(now time.Time, threshold time.Duration, c gardencorev1beta1.Condition, eventual gardencorev1beta1.ConditionStatus, reason, message string) gardencorev1beta1.Condition {
	switch c.Status {
	case gardencorev1beta1.ConditionTrue:
		if threshold > 0 {
			return Update(now, c, gardencorev1beta1.ConditionProgressing, reason, message)
		}
	case gardencorev1beta1.ConditionProgressing:
		if threshold > 0 && now.UTC().Sub(c.LastTransitionTime.UTC()) <= threshold {
			return Update(now, c, gardencorev1beta1.ConditionProgressing, reason, message)
		}
	}
	return Update(now, c, eventual, reason, message)
}
