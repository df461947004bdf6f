package testenv_test

import (
	"context"
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

// A garden with the real API: gardener-apiserver v1.150 serves Gardener's groups (no stand-in
// CRD of theirs is installed), validates and defaults as a landscape does, and consumes the
// operation annotations it owns: a failed Shoot's retry annotation is removed and its generation
// bumped, which no CRD does.
func TestGardenerAPIServerServesTheGarden(t *testing.T) {
	start := time.Now()
	plain, err := testenv.Start()
	require.NoError(t, err)
	standIns := time.Since(start)
	require.NoError(t, plain.Stop())
	start = time.Now()
	env, err := testenv.StartWith(testenv.Options{GardenerAPIServer: true})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, env.Stop()) })
	t.Logf("started in %s with gardener-apiserver, %s with stand-in CRDs", time.Since(start).Round(time.Millisecond), standIns.Round(time.Millisecond))
	ctx := context.Background()
	c := env.Client

	err = c.Get(ctx, client.ObjectKey{Name: "shoots.core.gardener.cloud"}, &apiextensionsv1.CustomResourceDefinition{})
	assert.True(t, apierrors.IsNotFound(err), "no stand-in CRD of Shoots: %v", err)
	err = c.Get(ctx, client.ObjectKey{Name: "extensions.extensions.gardener.cloud"}, &apiextensionsv1.CustomResourceDefinition{})
	assert.NoError(t, err, "Gardener's own CRDs stay")

	// Validation that a CRD does not have: a Project's name has at most 10 characters.
	err = c.Create(ctx, &gardencorev1beta1.Project{ObjectMeta: metav1.ObjectMeta{Name: "elevenchars"}, Spec: gardencorev1beta1.ProjectSpec{Namespace: new("garden-elevenchars")}})
	assert.True(t, apierrors.IsInvalid(err), "a Project name of 11 characters: %v", err)

	project := &gardencorev1beta1.Project{ObjectMeta: metav1.ObjectMeta{Name: "dev"}, Spec: gardencorev1beta1.ProjectSpec{Namespace: new("garden-dev")}}
	require.NoError(t, c.Create(ctx, project))
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "garden-dev"}}))
	require.NoError(t, testenv.LocalProvider(ctx, c))

	// A workerless Shoot: defaulted by the server (purpose, maintenance window).
	shoot := testenv.WorkerlessShoot("garden-dev", "s")
	require.NoError(t, c.Create(ctx, shoot))
	require.NotNil(t, shoot.Spec.Purpose, "defaulted")
	require.NotNil(t, shoot.Spec.Maintenance, "defaulted")
	assert.NotNil(t, shoot.Spec.Maintenance.TimeWindow, "defaulted")

	// Its last operation failed (gardenlet's status write), then a user asks for a retry.
	shoot.Status.LastOperation = &gardencorev1beta1.LastOperation{
		Type: gardencorev1beta1.LastOperationTypeCreate, State: gardencorev1beta1.LastOperationStateFailed,
		LastUpdateTime: metav1.Now(), Description: "failed",
	}
	require.NoError(t, c.Status().Update(ctx, shoot))
	generation := shoot.Generation
	retry := []byte(`{"metadata":{"annotations":{"` + v1beta1constants.GardenerOperation + `":"` + v1beta1constants.ShootOperationRetry + `"}}}`)
	require.NoError(t, c.Patch(ctx, shoot, client.RawPatch(types.MergePatchType, retry)))
	assert.NotContains(t, shoot.Annotations, v1beta1constants.GardenerOperation, "the server consumes the retry annotation")
	assert.Equal(t, generation+1, shoot.Generation, "and bumps the generation instead")
}
