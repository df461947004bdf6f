package extension_test

import (
	"context"
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	operatorv1alpha1 "github.com/gardener/gardener/pkg/apis/operator/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/extension"
	"github.com/gardener-knative/gardener-knative/pkg/controller/extension/registration"
	requiredruntime "github.com/gardener-knative/gardener-knative/pkg/controller/extension/required/runtime"
	"github.com/gardener-knative/gardener-knative/pkg/controller/extension/required/virtual"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

// As gardener-operator, the function runs in the garden runtime cluster, where the Extensions
// are, and works on the garden (the package's env, as the function's garden identity with exactly
// its garden rules), where their registrations and installations are: each object is read and
// written in its own cluster, and nothing of one lands in the other, by events and by sweeps.
func TestExtensionsInTheRuntimeClusterRegistrationsInTheGarden(t *testing.T) {
	runtimeCluster, err := testenv.Start()
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, runtimeCluster.Stop()) })
	h := functiontest.New(t, env, extension.Function, functiontest.AsFunction(), functiontest.At(start), functiontest.WithTarget(runtimeCluster))
	ctx := context.Background()
	const name = "local-two-clusters"
	ext := newExtensionIn(t, runtimeCluster.Client, name)

	h.SendTarget("add", ext, "")
	ext = &operatorv1alpha1.Extension{}
	require.NoError(t, runtimeCluster.Client.Get(ctx, client.ObjectKey{Name: name}, ext))
	assert.Contains(t, ext.Finalizers, operatorv1alpha1.FinalizerName)
	assert.Equal(t, gardencorev1beta1.ConditionTrue, condition(t, ext, operatorv1alpha1.ExtensionInstalled).Status)
	assert.Equal(t, gardencorev1beta1.ConditionFalse, condition(t, ext, operatorv1alpha1.ExtensionRequiredVirtual).Status)
	assert.Equal(t, gardencorev1beta1.ConditionFalse, condition(t, ext, operatorv1alpha1.ExtensionRequiredRuntime).Status)
	get(t, name, &gardencorev1beta1.ControllerRegistration{})
	get(t, name, &gardencorev1beta1.ControllerDeployment{})
	for _, obj := range []client.Object{&gardencorev1beta1.ControllerRegistration{}, &gardencorev1beta1.ControllerDeployment{}} {
		assert.True(t, apierrors.IsNotFound(runtimeCluster.Client.Get(ctx, client.ObjectKey{Name: name}, obj)), "%T in the runtime cluster", obj)
	}
	assert.True(t, apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Name: name}, &operatorv1alpha1.Extension{})), "no Extension in the garden")
	// The kube-apiserver writes Events of its own into default at times (about the Service
	// kubernetes): only the Extension's count.
	recorded := &corev1.EventList{}
	require.NoError(t, runtimeCluster.Client.List(ctx, recorded, client.InNamespace(metav1.NamespaceDefault),
		client.MatchingFields{"involvedObject.kind": "Extension", "involvedObject.name": name}))
	require.Len(t, recorded.Items, 1, "the Event is beside the Extension")
	assert.Equal(t, registration.EventApplied, recorded.Items[0].Message)
	assert.Empty(t, events(t, name), "no Event in the garden")

	// An installation in the garden makes the Extension required there.
	ci := installation(t, h, name+"-seed-a", name, "seed-a", gardencorev1beta1.ConditionTrue)
	h.Send("update", ci)
	require.NoError(t, runtimeCluster.Client.Get(ctx, client.ObjectKey{Name: name}, ext))
	assert.Equal(t, gardencorev1beta1.ConditionTrue, condition(t, ext, operatorv1alpha1.ExtensionRequiredVirtual).Status)

	// A registration deleted behind the function's back comes back by the sweep, which lists
	// the Extensions where they are and the registrations in the garden.
	require.NoError(t, env.Client.Delete(ctx, &gardencorev1beta1.ControllerRegistration{ObjectMeta: metav1.ObjectMeta{Name: name}}))
	h.Sweep(registration.ResyncSweepName)
	get(t, name, &gardencorev1beta1.ControllerRegistration{})
	for _, sweep := range []string{registration.ResyncSweepName, virtual.SweepName, requiredruntime.SweepName} {
		counts := h.Measure(func() { h.Sweep(sweep) })
		assert.Zero(t, writes(counts), "sweep %s writes nothing in the garden: %v", sweep, counts)
	}

	// Its deletion removes the registration from the garden, then the finalizer.
	require.NoError(t, runtimeCluster.Client.Delete(ctx, ext))
	require.NoError(t, runtimeCluster.Client.Get(ctx, client.ObjectKey{Name: name}, ext))
	h.SendTarget("update", ext, "")
	assert.True(t, gone(t, name, &gardencorev1beta1.ControllerRegistration{}))
	assert.True(t, gone(t, name, &gardencorev1beta1.ControllerDeployment{}))
	assert.True(t, apierrors.IsNotFound(runtimeCluster.Client.Get(ctx, client.ObjectKey{Name: name}, &operatorv1alpha1.Extension{})), "finalizer removed")
}

// newExtensionIn creates newExtension's Extension with c.
func newExtensionIn(t *testing.T, c client.Client, name string) *operatorv1alpha1.Extension {
	t.Helper()
	ext := extensionObject(name)
	require.NoError(t, c.Create(context.Background(), ext))
	return ext
}
