package function

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gardener-knative/gardener-knative/pkg/bootstrap"
	"github.com/gardener-knative/gardener-knative/pkg/kube"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/clients"
)

func perSeedConfig(resourceManagerConfig string) Config {
	return Config{
		Config:                bootstrap.Config{ClientConfig: kube.ClientConfig{QPS: 50, Burst: 100}},
		Tenancy:               clients.Tenancy{MultiTenant: true, TenantPrefix: "shoot--"},
		ResourceManagerConfig: resourceManagerConfig,
	}
}

func TestTenantRatesAreTheShootResourceManagers(t *testing.T) {
	rates, err := tenantRatesOf(perSeedConfig(""))
	require.NoError(t, err)
	// Gardener's defaults for a shoot's resource manager, which gardenlet leaves alone.
	assert.Equal(t, kube.Rate{QPS: 100, Burst: 130}, rates.seed.PerTenant)
	assert.Equal(t, kube.Rate{QPS: 100, Burst: 130}, rates.shoot)
	assert.Equal(t, kube.Rate{QPS: 50, Burst: 100}, rates.seed.Shared, "KUBE_API_QPS and KUBE_API_BURST")
	assert.True(t, rates.seed.IsTenant("shoot--project--a"))
	assert.False(t, rates.seed.IsTenant("garden"))
}

func TestTenantRatesFromTheResourceManagerConfiguration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`apiVersion: resourcemanager.config.gardener.cloud/v1alpha1
kind: ResourceManagerConfiguration
sourceClientConnection:
  qps: 20
  burst: 30
targetClientConnection:
  qps: 7
  burst: 9
`), 0o600))
	rates, err := tenantRatesOf(perSeedConfig(path))
	require.NoError(t, err)
	assert.Equal(t, kube.Rate{QPS: 20, Burst: 30}, rates.seed.PerTenant)
	assert.Equal(t, kube.Rate{QPS: 7, Burst: 9}, rates.shoot)
}

// GARDEN_KUBECONFIG makes the garden the Source of a function that works on it, and of no other;
// its Target is then the cluster it runs in, which MULTI_TENANT or TARGET_KUBECONFIG would
// contradict. Each is refused before anything is served.
func TestGardenKubeconfigOnlyForTheGarden(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: garden, cluster: {server: "https://garden.invalid"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: garden, user: u}}]
current-context: c
`), 0o600))
	t.Setenv("KUBECONFIG", kubeconfig)
	t.Setenv("GARDEN_KUBECONFIG", kubeconfig)
	local := testFunction(&recorder{})
	assert.ErrorContains(t, Run(t.Context(), local), "does not work on the garden")

	onGarden := testFunction(&recorder{})
	onGarden.WorksOnGarden = true
	t.Setenv("TARGET_KUBECONFIG", kubeconfig)
	assert.ErrorContains(t, Run(t.Context(), onGarden), "its Target is the cluster of KUBECONFIG")
}
