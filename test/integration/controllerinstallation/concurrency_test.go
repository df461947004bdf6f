package controllerinstallation_test

import (
	"context"
	"net/http"
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gardener-knative/gardener-knative/pkg/controller/controllerinstallation"
	"github.com/gardener-knative/gardener-knative/pkg/controller/controllerinstallation/chart/ocitest"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

// Two replicas: A's Helm install is still running (held at its chart's ConfigMap) when the
// installation is deleted and B reconciles the deletion. B finds the installation's lock taken and
// answers 503 (the sender retries) instead of uninstalling beside the install; A, its install done,
// finds the installation being deleted, uninstalls the release again and goes on with the
// deletion. Nothing the install created stays (issue case 5; before, the release landed after
// the uninstall).
func TestUninstallWaitsForTheInstallInFlight(t *testing.T) {
	ctx := context.Background()
	a := newFixture(t)
	archive, err := ocitest.ConfigMapChart("provider-race", "0.1.0")
	require.NoError(t, err)
	ci := a.chain(t, "provider-race", gardencorev1beta1.HelmControllerDeployment{Chart: archive})

	var bCode int
	hold := &testenv.Create{Resource: "configmaps", Name: "provider-race-config", Before: func() {
		require.NoError(t, garden.Client.Delete(ctx, get(t, ci)))
		b := functiontest.New(t, garden, controllerinstallation.Function, functiontest.AsFunction(),
			functiontest.WithTarget(seed), functiontest.WithConfig(a.config))
		bCode, _ = b.Post(b.Event("update", get(t, ci)))
	}}
	a.Harness = functiontest.New(t, garden, controllerinstallation.Function, functiontest.AsFunction(),
		functiontest.WithTarget(seed), functiontest.WithConfig(a.config), functiontest.WithTargetRESTConfig(testenv.Interleave(hold)))
	code, body := a.Post(a.Event("add", ci))
	assert.Equal(t, http.StatusOK, code, body)
	require.True(t, hold.Done(), "A's install reached its chart's ConfigMap")
	assert.Equal(t, http.StatusServiceUnavailable, bCode, "B waits for A's install: the installation's lock is taken")

	_, err = seedRelease(t, "extension-provider-race", "provider-race")
	assert.Error(t, err, "the release is uninstalled again")
	_, ok := configMap(t, "extension-provider-race", "provider-race-config")
	assert.False(t, ok, "nothing the install created stays")
	requireCondition(t, ci, installed, isFalse, "DeletionPending")
}
