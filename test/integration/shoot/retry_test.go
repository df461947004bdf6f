package shoot_test

import (
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gardener-knative/gardener-knative/pkg/controller/shoot/retry"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
)

// failShoot is gardenlet failing the Shoot's reconciliation at the given time with the given
// error codes.
func failShoot(t testing.TB, s *gardencorev1beta1.Shoot, at time.Time, codes ...gardencorev1beta1.ErrorCode) *gardencorev1beta1.Shoot {
	t.Helper()
	return writeShootStatus(t, s, func(st *gardencorev1beta1.ShootStatus) {
		st.LastOperation = &gardencorev1beta1.LastOperation{
			Type: gardencorev1beta1.LastOperationTypeReconcile, State: gardencorev1beta1.LastOperationStateFailed,
			LastUpdateTime: metav1.NewTime(at), Description: "infrastructure reconciliation failed",
		}
		st.LastErrors = []gardencorev1beta1.LastError{{Description: "too many requests", Codes: codes}}
	})
}

func retried(t testing.TB, s *gardencorev1beta1.Shoot) bool {
	t.Helper()
	return fresh(t, s).Annotations[v1beta1constants.GardenerOperation] == v1beta1constants.ShootOperationRetry
}

func TestRetryOfRateLimitedShoots(t *testing.T) {
	failedAt := time.Now().Truncate(time.Second)
	f := newFixture(t, functiontest.AsFunction(), functiontest.At(failedAt))
	rateLimited := failShoot(t, f.shootWithSpec(t, "rate-limited", nil), failedAt, gardencorev1beta1.ErrorInfraRateLimitsExceeded)
	otherError := failShoot(t, f.shootWithSpec(t, "quota-exceeded", nil), failedAt, gardencorev1beta1.ErrorInfraQuotaExceeded)
	f.Send("update", rateLimited)
	f.Send("update", otherError)
	assert.False(t, retried(t, rateLimited), "the retry period has not passed")

	f.Clock.Step(10 * time.Minute)
	f.Sweep(retry.Name)
	assert.False(t, retried(t, rateLimited), "not before the retry period has passed (plus the jitter)")

	f.Clock.Step(5 * time.Minute)
	f.Sweep(retry.Name)
	assert.True(t, retried(t, rateLimited), "retried within the jitter period")
	assert.False(t, retried(t, otherError), "only rate-limited failures are retried")

	counts := f.Measure(func() { f.Sweep(retry.Name) })
	assert.Equal(t, map[string]int{"list": 1}, counts, "a sweep with nothing changed: one LIST of the unhealthy Shoots, no write")
}

func TestRetryByEventOfALongFailedShoot(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	f := newFixture(t, functiontest.AsFunction(), functiontest.At(now))
	s := failShoot(t, f.shootWithSpec(t, "failed-long-ago", nil), now.Add(-time.Hour), gardencorev1beta1.ErrorInfraRateLimitsExceeded)
	f.Send("update", s)
	assert.True(t, retried(t, s))

	// A spec change gardenlet has not observed yet: it reconciles the Shoot anyway.
	changed := f.shootWithSpec(t, "changed", nil)
	changed = failShoot(t, changed, now.Add(-time.Hour), gardencorev1beta1.ErrorInfraRateLimitsExceeded)
	changed.Spec.Region = "elsewhere"
	assert.NoError(t, env.Client.Update(t.Context(), changed))
	f.Send("update", changed)
	assert.False(t, retried(t, changed))
}
