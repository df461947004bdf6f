package controllerregistration_test

import (
	"context"
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/controllerregistration/controllerregistrationfinalizer"
	"github.com/gardener-knative/gardener-knative/pkg/controller/controllerregistration/seedfinalizer"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
)

// TestControllerRegistrationFinalizer: a registration gets the finalizer, and keeps it on
// deletion while an installation references it; the installation's deletion releases it.
func TestControllerRegistrationFinalizer(t *testing.T) {
	f := newFixture(t, functiontest.AsFunction())
	ctx := context.Background()
	provider := f.providerRegistration("aws")
	f.Send("add", provider)
	f.get(provider)
	assert.Contains(t, provider.Finalizers, controllerregistrationfinalizer.FinalizerName)

	s := f.seed("seed", "aws")
	f.Send("add", s)
	installation := f.installations(s.Name)[provider.Name]

	require.NoError(t, env.Client.Delete(ctx, provider))
	f.get(provider)
	f.Send("update", provider)
	f.get(provider)
	assert.Contains(t, provider.Finalizers, controllerregistrationfinalizer.FinalizerName, "an installation still references it")
	assert.Len(t, f.installations(s.Name), 1, "the installation of a registration in deletion stays while the seed needs it")

	require.NoError(t, env.Client.Delete(ctx, &installation))
	f.Send("delete", &installation)
	err := env.Client.Get(ctx, client.ObjectKeyFromObject(provider), provider)
	assert.True(t, apierrors.IsNotFound(err), "released: %v", err)
	assert.Empty(t, f.installations(s.Name), "no installation is created for a registration in deletion")
}

// TestFinalizerSweeps: the finalizer sweeps add missing finalizers and release deletions whose
// events were lost.
func TestFinalizerSweeps(t *testing.T) {
	f := newFixture(t, functiontest.AsFunction())
	ctx := context.Background()
	provider := f.providerRegistration("aws")
	s := f.seed("seed", "aws")

	f.Sweep(controllerregistrationfinalizer.SweepName)
	f.Sweep(seedfinalizer.SweepName)
	f.get(provider)
	f.get(s)
	assert.Contains(t, provider.Finalizers, controllerregistrationfinalizer.FinalizerName)
	assert.Contains(t, s.Finalizers, seedfinalizer.FinalizerName)

	require.NoError(t, env.Client.Delete(ctx, s))
	require.NoError(t, env.Client.Delete(ctx, provider))
	f.Sweep(seedfinalizer.SweepName)
	f.Sweep(controllerregistrationfinalizer.SweepName)
	assert.True(t, apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(s), &gardencorev1beta1.Seed{})))
	assert.True(t, apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(provider), &gardencorev1beta1.ControllerRegistration{})))
}
