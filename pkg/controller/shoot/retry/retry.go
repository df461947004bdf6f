// Package retry is the "retry" reconciler of GCM's Shoot controller: a Shoot whose last
// operation failed because infrastructure rate limits were exceeded (ERR_INFRA_RATE_LIMITS_EXCEEDED)
// is retried, annotated gardener.cloud/operation=retry, once the retry period (plus a jitter) has
// passed since its last operation was updated.
package retry

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"slices"
	"time"

	cmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/controllermanager/v1alpha1"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
)

// Periods are the reconciler's part of the shoot function's configuration: Gardener's
// controllers.shootRetry settings of the same names. The function's Config embeds them.
type Periods struct {
	// RetryPeriod is how long after its last operation was updated a failed Shoot is retried
	// (Gardener's default 10m).
	RetryPeriod time.Duration `envconfig:"SHOOT_RETRY_PERIOD"`
	// RetryJitterPeriod bounds the jitter added to the retry period, which spreads the retries
	// of Shoots that failed together (Gardener's default 5m; 0 for none).
	RetryJitterPeriod time.Duration `envconfig:"SHOOT_RETRY_JITTER_PERIOD"`
}

// FromControllerManager takes controllers.shootRetry.{retryPeriod, retryJitterPeriod}.
func (p *Periods) FromControllerManager(cm *cmv1alpha1.ControllerManagerConfiguration) {
	c := cm.Controllers.ShootRetry
	if c == nil {
		return
	}
	if c.RetryPeriod != nil {
		p.RetryPeriod = c.RetryPeriod.Duration
	}
	if c.RetryJitterPeriod != nil {
		p.RetryJitterPeriod = c.RetryJitterPeriod.Duration
	}
}

// Validate refuses a period that is not positive and a negative jitter: a failed Shoot would be
// retried in a loop as fast as gardenlet fails it.
func (p Periods) Validate() error {
	if p.RetryPeriod <= 0 || p.RetryJitterPeriod < 0 {
		return fmt.Errorf("shoot retry period must be positive and its jitter period not negative: retryPeriod %s, retryJitterPeriod %s", p.RetryPeriod, p.RetryJitterPeriod)
	}
	return nil
}

// Failed is Gardener's failed and up-to-date Shoot: its last operation failed, and gardenlet
// had observed its latest spec when it did (a changed spec is reconciled anyway).
func Failed(shoot *gardencorev1beta1.Shoot) bool {
	op := shoot.Status.LastOperation
	return op != nil && op.State == gardencorev1beta1.LastOperationStateFailed && shoot.Generation == shoot.Status.ObservedGeneration
}

// FailedDueToRateLimits says whether the Shoot is one this reconciler retries: failed and up to
// date, with ERR_INFRA_RATE_LIMITS_EXCEEDED among the codes of its last errors.
func FailedDueToRateLimits(shoot *gardencorev1beta1.Shoot) bool {
	return Failed(shoot) && slices.ContainsFunc(shoot.Status.LastErrors, func(e gardencorev1beta1.LastError) bool {
		return slices.Contains(e.Codes, gardencorev1beta1.ErrorInfraRateLimitsExceeded)
	})
}

// RetryAt is when a failed Shoot is retried: its last operation's update time plus the retry
// period plus its jitter. Gardener draws the jitter at random when it schedules the retry and
// keeps the schedule in its work queue; a stateless function has no queue, so the jitter is
// drawn from the failure itself (the Shoot's UID and the time its last operation was updated):
// every reconcile of the same failure computes the same time, and Shoots that failed together
// still spread over the jitter period.
func RetryAt(shoot *gardencorev1beta1.Shoot, p Periods) time.Time {
	updated := shoot.Status.LastOperation.LastUpdateTime.UTC()
	return updated.Add(p.RetryPeriod + Jitter(string(shoot.UID), updated, p.RetryJitterPeriod))
}

// Jitter is a duration in [0, limit) determined by the Shoot's UID and the time its last operation
// was updated; 0 when limit is not positive.
func Jitter(uid string, updated time.Time, limit time.Duration) time.Duration {
	if limit <= 0 {
		return 0
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(uid))
	_ = binary.Write(h, binary.BigEndian, updated.UnixNano())
	return time.Duration(h.Sum64() % uint64(limit))
}

// Due says whether the Shoot must be retried at now: it failed due to rate limits and its retry
// time has passed.
func Due(now time.Time, shoot *gardencorev1beta1.Shoot, p Periods) bool {
	return FailedDueToRateLimits(shoot) && now.After(RetryAt(shoot, p))
}
