package shoot_test

import (
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/shoot"
	"github.com/gardener-knative/gardener-knative/pkg/controller/shoot/retry"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
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

// Against gardener-apiserver the retry is what a landscape sees: the server consumes the
// annotation and bumps the generation instead, so the Shoot counts as changed, and no sweep
// retries it again until gardenlet has observed it.
func TestRetryOnTheRealAPI(t *testing.T) {
	ctx := t.Context()
	garden, err := testenv.StartWith(testenv.Options{GardenerAPIServer: true})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, garden.Stop()) })
	s := testenv.WorkerlessShoot(garden.ProjectNamespace(t), "limited")
	require.NoError(t, garden.Client.Create(ctx, s))
	now := time.Now().Truncate(time.Second)
	s.Status.ObservedGeneration = s.Generation
	s.Status.LastOperation = &gardencorev1beta1.LastOperation{
		Type: gardencorev1beta1.LastOperationTypeReconcile, State: gardencorev1beta1.LastOperationStateFailed,
		LastUpdateTime: metav1.NewTime(now.Add(-time.Hour)), Description: "infrastructure reconciliation failed",
	}
	s.Status.LastErrors = []gardencorev1beta1.LastError{{Description: "too many requests", Codes: []gardencorev1beta1.ErrorCode{gardencorev1beta1.ErrorInfraRateLimitsExceeded}}}
	require.NoError(t, garden.Client.Status().Update(ctx, s))
	generation := s.Generation

	h := functiontest.New(t, garden, shoot.Function, functiontest.AsFunction(), functiontest.At(now))
	h.Send("update", s)
	require.NoError(t, garden.Client.Get(ctx, client.ObjectKeyFromObject(s), s))
	assert.NotContains(t, s.Annotations, v1beta1constants.GardenerOperation, "consumed by the server")
	assert.Equal(t, generation+1, s.Generation, "retried: the server bumped the generation")

	h.Clock.Step(time.Hour)
	writes := h.Measure(func() { h.Sweep(retry.Name) })
	assert.Zero(t, writes["patch"]+writes["update"], "not retried again before gardenlet observed it")
}
