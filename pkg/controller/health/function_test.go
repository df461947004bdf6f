package health

import (
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

func mrEvent(t *testing.T, conditions ...gardencorev1beta1.Condition) function.Event {
	t.Helper()
	mr := &resourcesv1alpha1.ManagedResource{ObjectMeta: metav1.ObjectMeta{Namespace: "shoot--a--b", Name: "mr"}}
	mr.Status.Conditions = conditions
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(mr)
	require.NoError(t, err)
	return function.Event{Kind: kinds.ManagedResource.GroupVersionKind, Key: function.Key{Namespace: mr.Namespace, Name: mr.Name}, Object: &unstructured.Unstructured{Object: raw}}
}

func condition(t gardencorev1beta1.ConditionType, reason string, updated time.Time) gardencorev1beta1.Condition {
	return gardencorev1beta1.Condition{Type: t, Status: gardencorev1beta1.ConditionTrue, Reason: reason, LastUpdateTime: metav1.NewTime(updated)}
}

// Each reconciler is started by an apply it has not checked yet, not by the other's write.
func TestManagedResourcePredicateLooksAtItsOwnCondition(t *testing.T) {
	applied := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	later := applied.Add(time.Second)
	health, progressing := ManagedResourcePredicate(resourcesv1alpha1.ResourcesHealthy), ManagedResourcePredicate(resourcesv1alpha1.ResourcesProgressing)

	healthChecked := mrEvent(t,
		condition(resourcesv1alpha1.ResourcesApplied, resourcesv1alpha1.ConditionApplySucceeded, applied),
		condition(resourcesv1alpha1.ResourcesHealthy, "ResourcesHealthy", later),
		condition(resourcesv1alpha1.ResourcesProgressing, resourcesv1alpha1.ConditionChecksPending, applied))
	assert.False(t, health(healthChecked), "the health check's own condition is checked since the apply")
	assert.True(t, progressing(healthChecked), "the progressing check's condition is pending")

	bothChecked := mrEvent(t,
		condition(resourcesv1alpha1.ResourcesApplied, resourcesv1alpha1.ConditionApplySucceeded, applied),
		condition(resourcesv1alpha1.ResourcesHealthy, "ResourcesHealthy", later),
		condition(resourcesv1alpha1.ResourcesProgressing, "ResourcesRolledOut", later))
	assert.False(t, health(bothChecked))
	assert.False(t, progressing(bothChecked))

	appliedAgain := mrEvent(t,
		condition(resourcesv1alpha1.ResourcesApplied, resourcesv1alpha1.ConditionApplySucceeded, later.Add(time.Second)),
		condition(resourcesv1alpha1.ResourcesHealthy, "ResourcesHealthy", later),
		condition(resourcesv1alpha1.ResourcesProgressing, "ResourcesRolledOut", later))
	assert.True(t, health(appliedAgain), "applied after the last check")
	assert.True(t, progressing(appliedAgain))

	notApplied := mrEvent(t)
	assert.False(t, health(notApplied), "nothing applied yet: nothing to check")
	created := mrEvent(t)
	created.Created = true
	assert.True(t, health(created))
	deleted := mrEvent(t)
	deleted.Deleted = true
	assert.False(t, progressing(deleted))
}
