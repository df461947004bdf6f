package controllerinstallation

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func TestConfigFromEnvironment(t *testing.T) {
	t.Setenv("SEED_NAME", "local")
	t.Setenv("GARDENLET_FEATURE_GATES", "A:true,B:false")
	loaded, err := function.LoadConfig(Function, function.ComponentConfigs{})
	require.NoError(t, err)
	cfg := loaded.(*Config)
	assert.Equal(t, &Config{
		SeedName: "local", GardenerVersion: "v1.150.0", GardenClusterIdentity: "garden",
		FeatureGates: map[string]bool{"A": true, "B": false}, ChartCacheBytes: 64 << 20,
		HelmTimeout: 2 * time.Minute, HelmMaxHistory: 3, HelmPendingStaleAfter: 5 * time.Minute,
	}, cfg)
	assert.Equal(t, Identity{GardenerVersion: "v1.150.0", GardenClusterIdentity: "garden", FeatureGates: cfg.FeatureGates}, cfg.Identity())
}

func TestReconcilerNeedsSeedAndTarget(t *testing.T) {
	_, err := newReconciler(function.Deps{Config: &Config{}, Target: function.ClusterClient{Config: &rest.Config{Host: "https://seed"}}})
	assert.ErrorContains(t, err, "SEED_NAME")
	_, err = newReconciler(function.Deps{Config: &Config{SeedName: "local"}})
	assert.ErrorContains(t, err, "TARGET_KUBECONFIG")
}

func TestDeclaration(t *testing.T) {
	require.NoError(t, Function.Validate())
	assert.Equal(t, []function.Cluster{function.Source, function.Target}, Function.Clusters(), "the seed is its Target")
	assert.Empty(t, Function.WatchedKinds(function.Target), "it watches only the garden")
}
