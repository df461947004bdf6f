package statuslabel

import (
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func op(t gardencorev1beta1.LastOperationType, s gardencorev1beta1.LastOperationState) *gardencorev1beta1.LastOperation {
	return &gardencorev1beta1.LastOperation{Type: t, State: s}
}

func cond(s gardencorev1beta1.ConditionStatus) gardencorev1beta1.Condition {
	return gardencorev1beta1.Condition{Type: "Any", Status: s}
}

var lastError = []gardencorev1beta1.LastError{{Description: "boom"}}

const (
	create    = gardencorev1beta1.LastOperationTypeCreate
	reconcile = gardencorev1beta1.LastOperationTypeReconcile
	del       = gardencorev1beta1.LastOperationTypeDelete
	succeeded = gardencorev1beta1.LastOperationStateSucceeded
	failed    = gardencorev1beta1.LastOperationStateFailed
	progress  = gardencorev1beta1.LastOperationStateProcessing
	errored   = gardencorev1beta1.LastOperationStateError
)

func TestCompute(t *testing.T) {
	for _, tc := range []struct {
		name       string
		op         *gardencorev1beta1.LastOperation
		lastErrors []gardencorev1beta1.LastError
		conditions []gardencorev1beta1.Condition
		want       Status
	}{
		{"not reconciled yet", nil, lastError, []gardencorev1beta1.Condition{cond(gardencorev1beta1.ConditionFalse)}, Healthy},
		{"creating without errors, conditions ignored", op(create, progress), nil, []gardencorev1beta1.Condition{cond(gardencorev1beta1.ConditionFalse)}, Healthy},
		{"creating with errors", op(create, progress), lastError, nil, Unhealthy},
		{"create failed without last errors", op(create, failed), nil, nil, Healthy},
		{"deleting with errors", op(del, succeeded), lastError, nil, Unhealthy},
		{"deleting", op(del, progress), nil, []gardencorev1beta1.Condition{cond(gardencorev1beta1.ConditionUnknown)}, Healthy},
		{"created, all conditions true", op(create, succeeded), nil, []gardencorev1beta1.Condition{cond(gardencorev1beta1.ConditionTrue)}, Healthy},
		{"reconciled, no conditions", op(reconcile, succeeded), nil, nil, Healthy},
		{"reconciled, one progressing", op(reconcile, succeeded), nil, []gardencorev1beta1.Condition{cond(gardencorev1beta1.ConditionTrue), cond(gardencorev1beta1.ConditionProgressing)}, Progressing},
		{"reconciled, unknown beats progressing", op(reconcile, succeeded), nil, []gardencorev1beta1.Condition{cond(gardencorev1beta1.ConditionProgressing), cond(gardencorev1beta1.ConditionUnknown)}, Unknown},
		{"reconciled, false beats unknown", op(reconcile, succeeded), nil, []gardencorev1beta1.Condition{cond(gardencorev1beta1.ConditionFalse), cond(gardencorev1beta1.ConditionUnknown)}, Unhealthy},
		{"a condition without status", op(reconcile, succeeded), nil, []gardencorev1beta1.Condition{cond("")}, Unhealthy},
		{"processing without errors", op(reconcile, progress), nil, []gardencorev1beta1.Condition{cond(gardencorev1beta1.ConditionProgressing)}, Progressing},
		{"processing with errors", op(reconcile, progress), lastError, []gardencorev1beta1.Condition{cond(gardencorev1beta1.ConditionTrue)}, Unhealthy},
		{"reconcile failed", op(reconcile, failed), nil, []gardencorev1beta1.Condition{cond(gardencorev1beta1.ConditionTrue)}, Unhealthy},
		{"reconcile errored (will be retried)", op(reconcile, errored), nil, nil, Unhealthy},
		{"succeeded with stale last errors", op(reconcile, succeeded), lastError, nil, Healthy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Compute(tc.op, tc.lastErrors, tc.conditions...))
		})
	}
}

func shootEvent(t *testing.T, created, deleted bool, label string, status gardencorev1beta1.ShootStatus) function.Event {
	t.Helper()
	s := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "garden-p"}, Status: status}
	if label != "" {
		s.Labels = map[string]string{Label: label}
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(s)
	assert.NoError(t, err)
	return function.Event{Created: created, Deleted: deleted, Object: &unstructured.Unstructured{Object: content}}
}

func TestPredicate(t *testing.T) {
	failedStatus := gardencorev1beta1.ShootStatus{LastOperation: op(reconcile, failed)}
	assert.True(t, Predicate(shootEvent(t, true, false, "healthy", gardencorev1beta1.ShootStatus{})), "every creation")
	assert.False(t, Predicate(shootEvent(t, false, true, "", failedStatus)), "no deletion")
	assert.True(t, Predicate(shootEvent(t, false, false, "", gardencorev1beta1.ShootStatus{})), "label missing")
	assert.False(t, Predicate(shootEvent(t, false, false, "healthy", gardencorev1beta1.ShootStatus{})), "label right")
	assert.True(t, Predicate(shootEvent(t, false, false, "healthy", failedStatus)), "label wrong")
	assert.False(t, Predicate(shootEvent(t, false, false, "unhealthy", failedStatus)), "label right")
}
