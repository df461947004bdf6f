// Package seed declares GCM's Seed controller as one function hosting its four reconcilers:
// Main (pkg/controller/seed/secrets), Backup Buckets Check (backupbucketscheck), Extensions
// Check (extensionscheck) and Lifecycle (lifecycle, Gardener's gardenlet-lifecycle controller
// for seeds).
package seed

import (
	"fmt"
	"time"

	cmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/controllermanager/v1alpha1"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"

	"github.com/gardener-knative/gardener-knative/pkg/controller/seed/backupbucketscheck"
	"github.com/gardener-knative/gardener-knative/pkg/controller/seed/extensionscheck"
	"github.com/gardener-knative/gardener-knative/pkg/controller/seed/lifecycle"
	"github.com/gardener-knative/gardener-knative/pkg/controller/seed/secrets"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// Config is the seed function's configuration. Each variable wins over its field of the
// component configuration, whose defaults are Gardener's.
type Config struct {
	// MonitorPeriod: a gardenlet that has not renewed its Lease for this long is taken as gone
	// (controllers.seed.monitorPeriod, 40s).
	MonitorPeriod time.Duration `envconfig:"SEED_MONITOR_PERIOD"`
	// ShootMonitorPeriod: after GardenletReady has been Unknown this long, the seed's Shoots'
	// conditions follow (controllers.seed.shootMonitorPeriod, 5 × the monitor period).
	ShootMonitorPeriod time.Duration `envconfig:"SEED_SHOOT_MONITOR_PERIOD"`
	// BackupBucketsReadyThreshold: how long BackupBucketsReady stays Progressing before it turns
	// False (controllers.seedBackupBucketsCheck.conditionThresholds, type BackupBucketsReady;
	// none by default: at once).
	BackupBucketsReadyThreshold time.Duration `envconfig:"SEED_BACKUP_BUCKETS_READY_THRESHOLD"`
	// ExtensionsReadyThreshold: how long ExtensionsReady stays Progressing before it turns False
	// (controllers.seedExtensionsCheck.conditionThresholds, type ExtensionsReady; none by default).
	ExtensionsReadyThreshold time.Duration `envconfig:"SEED_EXTENSIONS_READY_THRESHOLD"`
}

// FromControllerManager takes controllers.seed, and the thresholds of the two checks'
// conditions from controllers.seedBackupBucketsCheck and controllers.seedExtensionsCheck.
func (c *Config) FromControllerManager(cm *cmv1alpha1.ControllerManagerConfiguration) {
	if s := cm.Controllers.Seed; s != nil {
		if s.MonitorPeriod != nil {
			c.MonitorPeriod = s.MonitorPeriod.Duration
		}
		if s.ShootMonitorPeriod != nil {
			c.ShootMonitorPeriod = s.ShootMonitorPeriod.Duration
		}
	}
	if s := cm.Controllers.SeedBackupBucketsCheck; s != nil {
		c.BackupBucketsReadyThreshold = threshold(s.ConditionThresholds, gardencorev1beta1.SeedBackupBucketsReady)
	}
	if s := cm.Controllers.SeedExtensionsCheck; s != nil {
		c.ExtensionsReadyThreshold = threshold(s.ConditionThresholds, gardencorev1beta1.SeedExtensionsReady)
	}
}

func threshold(thresholds []cmv1alpha1.ConditionThreshold, t gardencorev1beta1.ConditionType) time.Duration {
	for _, th := range thresholds {
		if th.Type == string(t) {
			return th.Duration.Duration
		}
	}
	return 0
}

// Validate refuses periods the lifecycle cannot work with.
func (c *Config) Validate() error {
	if c.MonitorPeriod <= 0 || c.ShootMonitorPeriod <= 0 {
		return fmt.Errorf("the seed monitor period (%s) and shoot monitor period (%s) must be positive", c.MonitorPeriod, c.ShootMonitorPeriod)
	}
	if c.BackupBucketsReadyThreshold < 0 || c.ExtensionsReadyThreshold < 0 {
		return fmt.Errorf("condition thresholds must not be negative")
	}
	return nil
}

// Function is GCM's Seed controller.
var Function = &function.Function{
	Name:          "seed",
	Parts:         []function.Part{function.Runtime},
	WorksOnGarden: true,
	Config:        &Config{},
	RBAC:          function.JoinRules(secrets.RBAC, backupbucketscheck.RBAC, extensionscheck.RBAC, lifecycle.RBAC),
	Reconcilers: []function.Reconciler{
		{Name: secrets.ReconcilerName, For: kinds.Seed, New: func(deps function.Deps) (function.Handler, error) {
			return &secrets.Reconciler{Writer: deps.Source.Writer, Live: deps.Source.Reader, Log: deps.Log}, nil
		}},
		{Name: backupbucketscheck.ReconcilerName, For: kinds.Seed, New: func(deps function.Deps) (function.Handler, error) {
			cfg, err := config(deps)
			if err != nil {
				return nil, err
			}
			return &backupbucketscheck.Reconciler{Writer: deps.Source.Writer, Clock: deps.Clock, Threshold: cfg.BackupBucketsReadyThreshold}, nil
		}},
		{Name: extensionscheck.ReconcilerName, For: kinds.Seed, New: func(deps function.Deps) (function.Handler, error) {
			cfg, err := config(deps)
			if err != nil {
				return nil, err
			}
			return &extensionscheck.Reconciler{Writer: deps.Source.Writer, Clock: deps.Clock, Threshold: cfg.ExtensionsReadyThreshold}, nil
		}},
		{Name: lifecycle.ReconcilerName, For: kinds.Seed, New: func(deps function.Deps) (function.Handler, error) {
			cfg, err := config(deps)
			if err != nil {
				return nil, err
			}
			return &lifecycle.Reconciler{Live: deps.Source.Reader, Writer: deps.Source.Writer, Clock: deps.Clock, Log: deps.Log,
				MonitorPeriod: cfg.MonitorPeriod, ShootMonitorPeriod: cfg.ShootMonitorPeriod}, nil
		}},
	},
	Watches: concat(
		secrets.Watches,
		backupbucketscheck.Watches(backupbucketscheck.ReconcilerName),
		extensionscheck.Watches(extensionscheck.ReconcilerName),
	),
	Sweeps: concat(
		secrets.Sweeps,
		[]function.Sweep{
			backupbucketscheck.Sweep(backupbucketscheck.ReconcilerName),
			extensionscheck.Sweep(extensionscheck.ReconcilerName),
			lifecycle.Sweep(lifecycle.ReconcilerName),
		},
	),
}

func config(deps function.Deps) (*Config, error) {
	cfg, ok := deps.Config.(*Config)
	if !ok {
		return nil, fmt.Errorf("the seed function's config is %T, not *seed.Config", deps.Config)
	}
	return cfg, cfg.Validate()
}

func concat[T any](parts ...[]T) []T {
	var all []T
	for _, p := range parts {
		all = append(all, p...)
	}
	return all
}
