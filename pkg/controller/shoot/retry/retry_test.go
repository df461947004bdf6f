package retry

import (
	"testing"
	"time"

	cmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/controllermanager/v1alpha1"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
)

var failedAt = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func failedShoot(uid string, codes ...gardencorev1beta1.ErrorCode) *gardencorev1beta1.Shoot {
	return &gardencorev1beta1.Shoot{
		ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "garden-p", UID: types.UID(uid), Generation: 2},
		Status: gardencorev1beta1.ShootStatus{
			ObservedGeneration: 2,
			LastOperation: &gardencorev1beta1.LastOperation{
				Type: gardencorev1beta1.LastOperationTypeReconcile, State: gardencorev1beta1.LastOperationStateFailed,
				LastUpdateTime: metav1.NewTime(failedAt),
			},
			LastErrors: []gardencorev1beta1.LastError{{Description: "other"}, {Description: "rate limits", Codes: codes}},
		},
	}
}

func TestFailedDueToRateLimits(t *testing.T) {
	rateLimited := gardencorev1beta1.ErrorInfraRateLimitsExceeded
	for _, tc := range []struct {
		name   string
		mutate func(*gardencorev1beta1.Shoot)
		want   bool
	}{
		{"failed with the code", func(*gardencorev1beta1.Shoot) {}, true},
		{"failed with other codes", func(s *gardencorev1beta1.Shoot) {
			s.Status.LastErrors[1].Codes = []gardencorev1beta1.ErrorCode{gardencorev1beta1.ErrorInfraQuotaExceeded}
		}, false},
		{"no last errors", func(s *gardencorev1beta1.Shoot) { s.Status.LastErrors = nil }, false},
		{"spec changed since (not up to date)", func(s *gardencorev1beta1.Shoot) { s.Generation = 3 }, false},
		{"errored, not failed", func(s *gardencorev1beta1.Shoot) {
			s.Status.LastOperation.State = gardencorev1beta1.LastOperationStateError
		}, false},
		{"processing", func(s *gardencorev1beta1.Shoot) {
			s.Status.LastOperation.State = gardencorev1beta1.LastOperationStateProcessing
		}, false},
		{"no last operation", func(s *gardencorev1beta1.Shoot) { s.Status.LastOperation = nil }, false},
		{"a failed creation", func(s *gardencorev1beta1.Shoot) {
			s.Status.LastOperation.Type = gardencorev1beta1.LastOperationTypeCreate
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := failedShoot("uid", rateLimited)
			tc.mutate(s)
			assert.Equal(t, tc.want, FailedDueToRateLimits(s))
		})
	}
}

func TestDue(t *testing.T) {
	p := Periods{RetryPeriod: 10 * time.Minute, RetryJitterPeriod: 5 * time.Minute}
	s := failedShoot("uid-1", gardencorev1beta1.ErrorInfraRateLimitsExceeded)
	at := RetryAt(s, p)
	assert.False(t, at.Before(failedAt.Add(10*time.Minute)), "not before the retry period")
	assert.True(t, at.Before(failedAt.Add(15*time.Minute)), "within the jitter period")
	assert.Equal(t, at, RetryAt(s.DeepCopy(), p), "every reconcile of the same failure computes the same time")

	assert.False(t, Due(failedAt.Add(9*time.Minute), s, p))
	assert.False(t, Due(at, s, p), "Gardener retries strictly after")
	assert.True(t, Due(at.Add(time.Nanosecond), s, p))
	assert.True(t, Due(failedAt.Add(time.Hour), s, p))

	other := failedShoot("uid-2", gardencorev1beta1.ErrorInfraRateLimitsExceeded)
	assert.NotEqual(t, at, RetryAt(other, p), "Shoots that failed together spread")

	s.Status.LastOperation.LastUpdateTime = metav1.NewTime(failedAt.Add(time.Hour))
	assert.False(t, Due(failedAt.Add(time.Hour+9*time.Minute), s, p), "a new failure starts the period anew")

	noJitter := Periods{RetryPeriod: 10 * time.Minute}
	assert.Equal(t, failedAt.Add(time.Hour+10*time.Minute), RetryAt(s, noJitter))
	assert.False(t, Due(failedAt.Add(2*time.Hour), failedShoot("uid", gardencorev1beta1.ErrorInfraQuotaExceeded), p), "not rate limited")
}

func TestJitterSpreadsOverThePeriod(t *testing.T) {
	limit := 5 * time.Minute
	buckets := map[time.Duration]int{}
	for i := range 1000 {
		j := Jitter(string(rune(i))+"-uid", failedAt, limit)
		require.GreaterOrEqual(t, j, time.Duration(0))
		require.Less(t, j, limit)
		buckets[j/time.Minute]++
	}
	assert.Len(t, buckets, 5, "every minute of the jitter period is used")
	assert.Zero(t, Jitter("uid", failedAt, 0))
}

func TestPeriodsFromControllerManager(t *testing.T) {
	cm, err := componentconfig.ControllerManager("")
	require.NoError(t, err)
	var p Periods
	p.FromControllerManager(cm)
	assert.Equal(t, Periods{RetryPeriod: 10 * time.Minute, RetryJitterPeriod: 5 * time.Minute}, p, "Gardener's defaults")
	require.NoError(t, p.Validate())

	cm = &cmv1alpha1.ControllerManagerConfiguration{}
	cm.Controllers.ShootRetry = &cmv1alpha1.ShootRetryControllerConfiguration{RetryPeriod: &metav1.Duration{Duration: time.Minute}}
	p.FromControllerManager(cm)
	assert.Equal(t, Periods{RetryPeriod: time.Minute, RetryJitterPeriod: 5 * time.Minute}, p)

	assert.Error(t, Periods{}.Validate())
	assert.Error(t, Periods{RetryPeriod: time.Minute, RetryJitterPeriod: -time.Second}.Validate())
}
