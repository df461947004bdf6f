package bastion

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
)

func TestDeclarationIsValid(t *testing.T) {
	require.NoError(t, Function.Validate())
}

func TestLoadConfig(t *testing.T) {
	componentConfig := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(componentConfig, []byte(`apiVersion: controllermanager.config.gardener.cloud/v1alpha1
kind: ControllerManagerConfiguration
controllers:
  bastion:
    maxLifetime: 6h
`), 0o600))

	t.Run("Gardener's default", func(t *testing.T) {
		cfg, err := functiontest.LoadConfig[Config](Function)
		require.NoError(t, err)
		assert.Equal(t, 24*time.Hour, cfg.MaxLifetime)
	})
	t.Run("component configuration", func(t *testing.T) {
		t.Setenv("CONTROLLER_MANAGER_CONFIG", componentConfig)
		cfg, err := functiontest.LoadConfig[Config](Function)
		require.NoError(t, err)
		assert.Equal(t, 6*time.Hour, cfg.MaxLifetime)
	})
	t.Run("environment wins over the component configuration", func(t *testing.T) {
		t.Setenv("CONTROLLER_MANAGER_CONFIG", componentConfig)
		t.Setenv("BASTION_MAX_LIFETIME", "90m")
		cfg, err := functiontest.LoadConfig[Config](Function)
		require.NoError(t, err)
		assert.Equal(t, 90*time.Minute, cfg.MaxLifetime)
	})
	t.Run("misspelt component configuration is an error", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "bad.yaml")
		require.NoError(t, os.WriteFile(bad, []byte("apiVersion: controllermanager.config.gardener.cloud/v1alpha1\nkind: ControllerManagerConfiguration\ncontrollers:\n  bastion:\n    maxLifeTime: 6h\n"), 0o600))
		t.Setenv("CONTROLLER_MANAGER_CONFIG", bad)
		_, err := functiontest.LoadConfig[Config](Function)
		assert.ErrorContains(t, err, "maxLifeTime")
	})
	t.Run("non-positive lifetime is an error", func(t *testing.T) {
		t.Setenv("BASTION_MAX_LIFETIME", "-1h")
		_, err := functiontest.LoadConfig[Config](Function)
		assert.Error(t, err)
	})
}

func TestBastionPredicate(t *testing.T) {
	live := &unstructured.Unstructured{}
	deleting := &unstructured.Unstructured{}
	deleting.SetDeletionTimestamp(&metav1.Time{Time: time.Now()})
	assert.True(t, BastionPredicate(function.Event{Created: true, Object: live}), "a creation: its Shoot may be gone already")
	assert.False(t, BastionPredicate(function.Event{Object: live}), "an update (heartbeat) cannot condemn it")
	assert.False(t, BastionPredicate(function.Event{Deleted: true, Object: live}))
	assert.False(t, BastionPredicate(function.Event{Created: true, Object: deleting}), "gardenlet cleans it up already")
}
