package stale

import (
	"fmt"
	"time"

	cmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/controllermanager/v1alpha1"
)

// day is the unit of Gardener's stale settings.
const day = 24 * time.Hour

// Settings are the Stale reconciler's part of the project function's configuration: Gardener's
// controllers.project settings of the same names, in days. The function's Config embeds them.
type Settings struct {
	// MinimumLifetimeDays spares Projects younger than this, and Projects active within it.
	MinimumLifetimeDays int `envconfig:"PROJECT_MINIMUM_LIFETIME_DAYS"`
	// StaleGracePeriodDays is how long a Project is stale before it gets an auto-delete
	// timestamp.
	StaleGracePeriodDays int `envconfig:"PROJECT_STALE_GRACE_PERIOD_DAYS"`
	// StaleExpirationTimeDays is how long after it became stale a Project is deleted.
	StaleExpirationTimeDays int `envconfig:"PROJECT_STALE_EXPIRATION_TIME_DAYS"`
}

// FromControllerManager takes controllers.project.{minimumLifetimeDays, staleGracePeriodDays,
// staleExpirationTimeDays} (Gardener's defaults: 30, 14, 90).
func (s *Settings) FromControllerManager(cm *cmv1alpha1.ControllerManagerConfiguration) {
	p := cm.Controllers.Project
	if p == nil {
		return
	}
	if p.MinimumLifetimeDays != nil {
		s.MinimumLifetimeDays = *p.MinimumLifetimeDays
	}
	if p.StaleGracePeriodDays != nil {
		s.StaleGracePeriodDays = *p.StaleGracePeriodDays
	}
	if p.StaleExpirationTimeDays != nil {
		s.StaleExpirationTimeDays = *p.StaleExpirationTimeDays
	}
}

// Validate refuses negative periods: they would mark every Project stale, or schedule its
// deletion before it became stale.
func (s Settings) Validate() error {
	if s.MinimumLifetimeDays < 0 || s.StaleGracePeriodDays < 0 || s.StaleExpirationTimeDays < 0 {
		return fmt.Errorf("project stale settings must not be negative: minimumLifetimeDays %d, staleGracePeriodDays %d, staleExpirationTimeDays %d",
			s.MinimumLifetimeDays, s.StaleGracePeriodDays, s.StaleExpirationTimeDays)
	}
	return nil
}

// MinimumLifetime is MinimumLifetimeDays as a duration.
func (s Settings) MinimumLifetime() time.Duration { return time.Duration(s.MinimumLifetimeDays) * day }

// StaleGracePeriod is StaleGracePeriodDays as a duration.
func (s Settings) StaleGracePeriod() time.Duration {
	return time.Duration(s.StaleGracePeriodDays) * day
}

// StaleExpirationTime is StaleExpirationTimeDays as a duration.
func (s Settings) StaleExpirationTime() time.Duration {
	return time.Duration(s.StaleExpirationTimeDays) * day
}
