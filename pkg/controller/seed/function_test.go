package seed

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDeclarationIsValid(t *testing.T) {
	require.NoError(t, Function.Validate())
}

func TestLoadConfig(t *testing.T) {
	t.Run("Gardener's defaults", func(t *testing.T) {
		cfg, err := functiontest.LoadConfig[Config](Function)
		require.NoError(t, err)
		assert.Equal(t, Config{MonitorPeriod: 40 * time.Second, ShootMonitorPeriod: 200 * time.Second}, *cfg)
	})

	componentConfig := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(componentConfig, []byte(`apiVersion: controllermanager.config.gardener.cloud/v1alpha1
kind: ControllerManagerConfiguration
controllers:
  seed:
    monitorPeriod: 1m
  seedBackupBucketsCheck:
    conditionThresholds:
    - type: BackupBucketsReady
      duration: 2m
    - type: SomethingElse
      duration: 9m
  seedExtensionsCheck:
    conditionThresholds:
    - type: ExtensionsReady
      duration: 3m
`), 0o600))
	t.Run("component configuration", func(t *testing.T) {
		t.Setenv("CONTROLLER_MANAGER_CONFIG", componentConfig)
		cfg, err := functiontest.LoadConfig[Config](Function)
		require.NoError(t, err)
		assert.Equal(t, Config{MonitorPeriod: time.Minute, ShootMonitorPeriod: 5 * time.Minute,
			BackupBucketsReadyThreshold: 2 * time.Minute, ExtensionsReadyThreshold: 3 * time.Minute}, *cfg)
	})
	t.Run("the environment wins", func(t *testing.T) {
		t.Setenv("CONTROLLER_MANAGER_CONFIG", componentConfig)
		t.Setenv("SEED_SHOOT_MONITOR_PERIOD", "10m")
		t.Setenv("SEED_EXTENSIONS_READY_THRESHOLD", "0s")
		cfg, err := functiontest.LoadConfig[Config](Function)
		require.NoError(t, err)
		assert.Equal(t, 10*time.Minute, cfg.ShootMonitorPeriod)
		assert.Zero(t, cfg.ExtensionsReadyThreshold)
	})
	t.Run("a period that is not positive is refused", func(t *testing.T) {
		t.Setenv("SEED_MONITOR_PERIOD", "0s")
		_, err := functiontest.LoadConfig[Config](Function)
		assert.ErrorContains(t, err, "must be positive")
	})
}

func TestLifecycleSweepIsCheap(t *testing.T) {
	sweep, ok := Function.Sweep("lifecycle")
	require.True(t, ok)
	assert.Equal(t, "*/10 * * * * *", sweep.Schedule)
	assert.Positive(t, sweep.Primary.PageSize, "the seeds in one page")
	require.Len(t, sweep.Related, 1)
	assert.Equal(t, "gardener-system-seed-lease", sweep.Related[0].Namespace)
	assert.Positive(t, sweep.Related[0].PageSize)
}
