package shootstate

import (
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func TestFunctionIsValid(t *testing.T) {
	assert.NoError(t, Function.Validate())
}

func TestWant(t *testing.T) {
	const (
		migrate   = gardencorev1beta1.LastOperationTypeMigrate
		restore   = gardencorev1beta1.LastOperationTypeRestore
		reconcile = gardencorev1beta1.LastOperationTypeReconcile
		create    = gardencorev1beta1.LastOperationTypeCreate
		del       = gardencorev1beta1.LastOperationTypeDelete
		succeeded = gardencorev1beta1.LastOperationStateSucceeded
		progress  = gardencorev1beta1.LastOperationStateProcessing
		failed    = gardencorev1beta1.LastOperationStateFailed
	)
	for _, tc := range []struct {
		opType      gardencorev1beta1.LastOperationType
		state       gardencorev1beta1.LastOperationState
		add, remove bool
	}{
		{migrate, progress, true, false},
		{migrate, succeeded, true, false},
		{migrate, failed, true, false},
		{restore, progress, true, false},
		{restore, failed, true, false},
		{restore, succeeded, false, true},
		{reconcile, progress, false, true},
		{reconcile, succeeded, false, true},
		{create, progress, false, false},
		{del, progress, false, false},
	} {
		add, remove := Want(&gardencorev1beta1.LastOperation{Type: tc.opType, State: tc.state})
		assert.Equal(t, tc.add, add, "%s %s: add", tc.opType, tc.state)
		assert.Equal(t, tc.remove, remove, "%s %s: remove", tc.opType, tc.state)
	}
}

func TestShootPredicate(t *testing.T) {
	event := func(created, deleted bool, op gardencorev1beta1.LastOperationType) function.Event {
		s := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "garden-p"}}
		if op != "" {
			s.Status.LastOperation = &gardencorev1beta1.LastOperation{Type: op}
		}
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(s)
		assert.NoError(t, err)
		return function.Event{Created: created, Deleted: deleted, Object: &unstructured.Unstructured{Object: content}}
	}
	assert.True(t, ShootPredicate(event(false, false, gardencorev1beta1.LastOperationTypeMigrate)))
	assert.True(t, ShootPredicate(event(false, false, gardencorev1beta1.LastOperationTypeRestore)))
	assert.False(t, ShootPredicate(event(false, false, gardencorev1beta1.LastOperationTypeReconcile)))
	assert.False(t, ShootPredicate(event(false, false, "")))
	assert.False(t, ShootPredicate(event(true, false, gardencorev1beta1.LastOperationTypeMigrate)), "Gardener ignores creations")
	assert.False(t, ShootPredicate(event(false, true, gardencorev1beta1.LastOperationTypeMigrate)), "and deletions")
}
