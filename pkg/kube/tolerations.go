package kube

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// TolerationForTaint tolerates exactly taint: Equal its value, or Exists where it has none
// (Gardener's kubernetesutils.TolerationForTaint).
func TolerationForTaint(taint corev1.Taint) corev1.Toleration {
	operator := corev1.TolerationOpEqual
	if taint.Value == "" {
		operator = corev1.TolerationOpExists
	}
	return corev1.Toleration{Key: taint.Key, Operator: operator, Value: taint.Value, Effect: taint.Effect}
}

// EqualTolerations tells whether a and b are the same toleration, their tolerationSeconds
// compared by value (as Gardener's ComparableTolerations makes them comparable).
func EqualTolerations(a, b corev1.Toleration) bool {
	return a.Key == b.Key && a.Operator == b.Operator && a.Value == b.Value && a.Effect == b.Effect && ptr.Equal(a.TolerationSeconds, b.TolerationSeconds)
}

// AppendToleration appends t to list unless list holds it already.
func AppendToleration(list []corev1.Toleration, t corev1.Toleration) []corev1.Toleration {
	for _, o := range list {
		if EqualTolerations(o, t) {
			return list
		}
	}
	return append(list, t)
}
