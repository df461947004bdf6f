package backupbucketscheck

import (
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gardener-knative/gardener-knative/pkg/function"
)

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func bucket(name, lastError string) gardencorev1beta1.BackupBucket {
	b := gardencorev1beta1.BackupBucket{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if lastError != "" {
		b.Status.LastError = &gardencorev1beta1.LastError{Description: lastError}
	}
	return b
}

func current(status gardencorev1beta1.ConditionStatus, since time.Duration) *gardencorev1beta1.Condition {
	return &gardencorev1beta1.Condition{Type: gardencorev1beta1.SeedBackupBucketsReady, Status: status, Reason: "Before", Message: "before",
		LastTransitionTime: metav1.NewTime(now.Add(-since)), LastUpdateTime: metav1.NewTime(now.Add(-since))}
}

func TestCondition(t *testing.T) {
	for name, tc := range map[string]struct {
		current     *gardencorev1beta1.Condition
		threshold   time.Duration
		buckets     []gardencorev1beta1.BackupBucket
		wantStatus  gardencorev1beta1.ConditionStatus
		wantReason  string
		wantMessage string
	}{
		"healthy buckets": {nil, 0, []gardencorev1beta1.BackupBucket{bucket("a", ""), bucket("b", "")}, "True", ReasonAvailable, MessageAvailable},
		"an erroneous bucket, first check": {nil, 0, []gardencorev1beta1.BackupBucket{bucket("a", "denied"), bucket("b", ""), bucket("c", "gone")}, "False", ReasonError,
			"The following BackupBuckets have issues:\n* Name: a, Error: denied\n* Name: c, Error: gone"},
		"no buckets":                            {nil, 0, nil, "Unknown", ReasonGone, MessageGone},
		"error after True, threshold":           {current("True", time.Hour), time.Minute, []gardencorev1beta1.BackupBucket{bucket("a", "x")}, "Progressing", ReasonError, "The following BackupBuckets have issues:\n* Name: a, Error: x"},
		"error while Progressing, in threshold": {current("Progressing", 30*time.Second), time.Minute, []gardencorev1beta1.BackupBucket{bucket("a", "x")}, "Progressing", ReasonError, "The following BackupBuckets have issues:\n* Name: a, Error: x"},
		"error while Progressing, expired":      {current("Progressing", 2*time.Minute), time.Minute, []gardencorev1beta1.BackupBucket{bucket("a", "x")}, "False", ReasonError, "The following BackupBuckets have issues:\n* Name: a, Error: x"},
		"gone after True, threshold":            {current("True", time.Hour), time.Minute, nil, "Progressing", ReasonGone, MessageGone},
		"recovered":                             {current("False", time.Hour), time.Minute, []gardencorev1beta1.BackupBucket{bucket("a", "")}, "True", ReasonAvailable, MessageAvailable},
	} {
		t.Run(name, func(t *testing.T) {
			got := Condition(now, tc.threshold, tc.current, tc.buckets)
			assert.Equal(t, gardencorev1beta1.SeedBackupBucketsReady, got.Type)
			assert.Equal(t, tc.wantStatus, got.Status)
			assert.Equal(t, tc.wantReason, got.Reason)
			assert.Equal(t, tc.wantMessage, got.Message)
		})
	}
}

func TestConditionUnchangedIsEqual(t *testing.T) {
	first := Condition(now, 0, nil, []gardencorev1beta1.BackupBucket{bucket("a", "")})
	again := Condition(now.Add(time.Hour), 0, &first, []gardencorev1beta1.BackupBucket{bucket("a", "")})
	assert.Equal(t, first, again, "an unchanged check changes nothing, so nothing is written")
}

func TestPredicateAndMapper(t *testing.T) {
	withSeed := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"seedName": "s1"}}}
	withoutSeed := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}
	assert.True(t, BackupBucketPredicate(function.Event{Created: true, Object: withSeed}))
	assert.True(t, BackupBucketPredicate(function.Event{Object: withSeed}))
	assert.False(t, BackupBucketPredicate(function.Event{Deleted: true, Object: withSeed}), "deletions are the sweep's, as Gardener's requeue's")
	assert.False(t, BackupBucketPredicate(function.Event{Object: withoutSeed}))
	keys, err := MapBackupBucketToSeed(t.Context(), nil, function.Event{Object: withSeed})
	assert.NoError(t, err)
	assert.Equal(t, []function.Key{{Name: "s1"}}, keys)
}
