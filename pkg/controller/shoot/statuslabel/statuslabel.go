// Package statuslabel is the "statuslabel" reconciler of GCM's Shoot controller: every Shoot
// carries the label shoot.gardener.cloud/status with its health (healthy, progressing, unknown
// or unhealthy) as Gardener computes it from its conditions, last operation and last errors.
package statuslabel

import (
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
)

// Status is the value of the label shoot.gardener.cloud/status.
type Status string

// The statuses, from best to worst.
const (
	Healthy     Status = "healthy"
	Progressing Status = "progressing"
	Unknown     Status = "unknown"
	Unhealthy   Status = "unhealthy"
)

// rank orders the statuses: the lower, the worse.
var rank = map[Status]int{Healthy: 3, Progressing: 2, Unknown: 1, Unhealthy: 0}

// orWorse is the worse of s and other.
func (s Status) orWorse(other Status) Status {
	if rank[other] < rank[s] {
		return other
	}
	return s
}

// fromCondition maps a condition's status to a Status: True is healthy, Progressing progressing,
// Unknown unknown, anything else (False, an unset status) unhealthy.
func fromCondition(status gardencorev1beta1.ConditionStatus) Status {
	switch status {
	case gardencorev1beta1.ConditionTrue:
		return Healthy
	case gardencorev1beta1.ConditionProgressing:
		return Progressing
	case gardencorev1beta1.ConditionUnknown:
		return Unknown
	}
	return Unhealthy
}

func healthyIf(ok bool) Status {
	if ok {
		return Healthy
	}
	return Unhealthy
}

// Compute is Gardener's health of a Shoot:
//   - not yet reconciled (no last operation): healthy;
//   - being created (a create that has not succeeded) or deleted: healthy exactly while there
//     are no last errors;
//   - otherwise the worst of its conditions (healthy when it has none), made unhealthy by last
//     errors while an operation is processing, or by a last operation that neither succeeded
//     nor is processing.
func Compute(lastOperation *gardencorev1beta1.LastOperation, lastErrors []gardencorev1beta1.LastError, conditions ...gardencorev1beta1.Condition) Status {
	if lastOperation == nil {
		return Healthy
	}
	if (lastOperation.Type == gardencorev1beta1.LastOperationTypeCreate && lastOperation.State != gardencorev1beta1.LastOperationStateSucceeded) ||
		lastOperation.Type == gardencorev1beta1.LastOperationTypeDelete {
		return healthyIf(len(lastErrors) == 0)
	}
	status := Healthy
	for _, c := range conditions {
		status = status.orWorse(fromCondition(c.Status))
	}
	if lastOperation.State == gardencorev1beta1.LastOperationStateProcessing {
		return status.orWorse(healthyIf(len(lastErrors) == 0))
	}
	return status.orWorse(healthyIf(lastOperation.State == gardencorev1beta1.LastOperationStateSucceeded))
}

// Of is the Shoot's health.
func Of(shoot *gardencorev1beta1.Shoot) Status {
	return Compute(shoot.Status.LastOperation, shoot.Status.LastErrors, shoot.Status.Conditions...)
}
