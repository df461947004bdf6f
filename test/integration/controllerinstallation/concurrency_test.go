package controllerinstallation_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

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
	ci := a.configMapChain(t, "provider-race")

	var bCode int
	hold := &testenv.Create{Resource: "configmaps", Name: "provider-race-config", Before: func() {
		require.NoError(t, garden.Client.Delete(ctx, get(t, ci)))
		bConfig := *a.config
		bConfig.PodName = "replica-b" // another pod
		b := functiontest.New(t, garden, controllerinstallation.Function, functiontest.AsFunction(),
			functiontest.WithTarget(seed), functiontest.WithConfig(&bConfig))
		bCode, _ = b.Post(b.Event("update", get(t, ci)))
	}}
	a.Harness = functiontest.New(t, garden, controllerinstallation.Function, functiontest.AsFunction(),
		functiontest.WithTarget(seed), functiontest.WithConfig(a.config), functiontest.WithTargetRESTConfig(testenv.Interleave(hold)))
	code, body := a.Post(a.Event("add", ci))
	assert.Equal(t, http.StatusOK, code, body)
	require.True(t, hold.Done(), "A's install reached its chart's ConfigMap")
	assert.Equal(t, http.StatusServiceUnavailable, bCode, "B waits for A's install: the installation's lock is taken")

	_, err := seedRelease(t, "extension-provider-race", "provider-race")
	assert.Error(t, err, "the release is uninstalled again")
	_, ok := configMap(t, "extension-provider-race", "provider-race-config")
	assert.False(t, ok, "nothing the install created stays")
	requireCondition(t, ci, installed, isFalse, "DeletionPending")
}

// A process killed during a Helm action leaves the installation's lock behind, unexpired (the
// Helm timeout and more): a process of another pod waits for it, but the process that restarts
// in the same pod (a pod runs one at a time) takes it over at once and installs.
func TestLockOfAKilledProcessIsTakenOverByItsPod(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	ci := f.configMapChain(t, "provider-killed")
	held := func(holder string) {
		now := metav1.NewMicroTime(time.Now())
		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: controllerinstallation.LockNamespace, Name: controllerinstallation.LockName(ci.Name)}}
		_ = seed.Client.Delete(ctx, lease)
		lease.Spec = coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To[int32](150), AcquireTime: &now, RenewTime: &now}
		require.NoError(t, seed.Client.Create(ctx, lease))
	}

	held("replica-b/0a1b2c3d")
	code, _ := f.Post(f.Event("add", get(t, ci)))
	assert.Equal(t, http.StatusServiceUnavailable, code, "another pod's process holds the lock")

	held(f.config.PodName + "/0a1b2c3d")
	f.Send("add", get(t, ci))
	requireCondition(t, ci, installed, isTrue, "InstallationSuccessful")
	_, ok := configMap(t, "extension-provider-killed", "provider-killed-config")
	assert.True(t, ok)
}

// configMapChain is the chain of name with an inline chart of one ConfigMap, <name>-config.
func (f *fixture) configMapChain(t *testing.T, name string) *gardencorev1beta1.ControllerInstallation {
	t.Helper()
	archive, err := ocitest.ConfigMapChart(name, "0.1.0")
	require.NoError(t, err)
	return f.chain(t, name, gardencorev1beta1.HelmControllerDeployment{Chart: archive})
}
