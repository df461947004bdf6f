package function

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"

	"github.com/gardener-knative/gardener-knative/pkg/bootstrap"
	"github.com/gardener-knative/gardener-knative/pkg/kube"
	"github.com/gardener-knative/gardener-knative/pkg/scheme"
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

const gardenKubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: garden, cluster: {server: "https://garden.invalid"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: garden, user: u}}]
current-context: c
`

// GARDEN_KUBECONFIG makes the garden the Source of a function that works on it, and of no other;
// its Target is then the cluster it runs in, which MULTI_TENANT or TARGET_KUBECONFIG would
// contradict. Each is refused before anything is served.
func TestGardenKubeconfigOnlyForTheGarden(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(gardenKubeconfig), 0o600))
	t.Setenv("KUBECONFIG", kubeconfig)
	t.Setenv("GARDEN_KUBECONFIG", kubeconfig)
	local := testFunction(&recorder{})
	assert.ErrorContains(t, Run(t.Context(), local), "does not work on the garden")

	onGarden := testFunction(&recorder{})
	onGarden.WorksOnGarden = true
	t.Setenv("TARGET_KUBECONFIG", kubeconfig)
	assert.ErrorContains(t, Run(t.Context(), onGarden), "its Target is the cluster of KUBECONFIG")
}

// config/ gives a function that works on the garden the garden's kubeconfig itself, as an
// environment variable from the Secret garden-access, so that its pod has no volume to wait for;
// a file and a content at once are refused, whichever would win.
func TestGardenKubeconfigAsContent(t *testing.T) {
	gardenOf := func() (*rest.Config, error) {
		var cfg Config
		process, err := bootstrap.Start(&cfg)
		require.NoError(t, err)
		require.True(t, cfg.onGarden())
		return cfg.gardenRESTConfig(process, func(error) {})
	}
	t.Setenv(GardenKubeconfigDataEnv, gardenKubeconfig)
	garden, err := gardenOf()
	require.NoError(t, err)
	assert.Equal(t, "https://garden.invalid", garden.Host)
	assert.Equal(t, "t", garden.BearerToken)
	assert.Equal(t, float32(kube.DefaultQPS), garden.QPS, "the process's client settings apply to the garden's client")

	file := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(file, []byte(gardenKubeconfig), 0o600))
	t.Setenv("GARDEN_KUBECONFIG", file)
	_, err = gardenOf()
	assert.ErrorContains(t, err, "give the garden's kubeconfig one way")
}

// A function reads its garden kubeconfig when its container starts, so a garden that stops taking
// its credentials (an operator rotated garden-access) ends the process: the kubelet starts the
// container again with the Secret's current kubeconfig. Any other answer, a 403 included (the
// identity lacks a right, which a restart would not give it), leaves it serving.
func TestGardenRefusingCredentialsStopsTheFunction(t *testing.T) {
	status := http.StatusForbidden
	garden := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(status)
	}))
	t.Cleanup(garden.Close)
	t.Setenv(GardenKubeconfigDataEnv, strings.Replace(gardenKubeconfig, "https://garden.invalid", garden.URL, 1))
	var cfg Config
	process, err := bootstrap.Start(&cfg)
	require.NoError(t, err)
	ctx, stop := context.WithCancelCause(t.Context())
	restCfg, err := cfg.gardenRESTConfig(process, stop)
	require.NoError(t, err)
	c, err := kube.NewClient(restCfg, scheme.Gardener)
	require.NoError(t, err)

	assert.Error(t, c.Get(ctx, client.ObjectKey{Name: "p"}, &gardencorev1beta1.Project{}))
	require.NoError(t, ctx.Err(), "a 403 leaves the function serving")

	status = http.StatusUnauthorized
	assert.Error(t, c.Get(ctx, client.ObjectKey{Name: "p"}, &gardencorev1beta1.Project{}))
	require.Error(t, ctx.Err())
	assert.ErrorIs(t, context.Cause(ctx), errGardenRefusedCredentials)
}
