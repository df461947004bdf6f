package controllerinstallation_test

import (
	"context"
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gardener-knative/gardener-knative/pkg/controller/controllerinstallation/required"
)

const requiredCondition = gardencorev1beta1.ControllerInstallationRequired

// The required sweep sets the Required condition from the extension objects on the seed: none
// of the registration's kind/type → False; a Worker of its type → True; the Worker gone → False;
// a sweep with nothing changed writes nothing, on either cluster, and costs a constant number of
// LISTs.
func TestRequiredFollowsTheSeedsExtensionObjects(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	reg := &gardencorev1beta1.ControllerRegistration{ObjectMeta: metav1.ObjectMeta{Name: "provider-required"}}
	reg.Spec.Resources = []gardencorev1beta1.ControllerResource{{Kind: extensionsv1alpha1.WorkerResource, Type: "foo"}}
	require.NoError(t, garden.Client.Create(ctx, reg))
	ci := f.installation(t, "provider-required", reg.Name, "provider-required")
	other := &gardencorev1beta1.ControllerInstallation{ObjectMeta: metav1.ObjectMeta{Name: "provider-required-elsewhere"}}
	other.Spec.RegistrationRef = corev1.ObjectReference{Name: reg.Name}
	other.Spec.SeedRef = &corev1.ObjectReference{Name: "another-seed"}
	require.NoError(t, garden.Client.Create(ctx, other))

	namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shoot--required--worker"}}
	require.NoError(t, seed.Client.Create(ctx, namespace))
	// gardener-operator's object (class garden) does not make gardenlet's controller required.
	gardenWorker := &extensionsv1alpha1.Worker{ObjectMeta: metav1.ObjectMeta{Name: "garden-class", Namespace: namespace.Name}}
	gardenWorker.Spec.Type, gardenWorker.Spec.Class = "foo", ptr.To(extensionsv1alpha1.ExtensionClassGarden)
	require.NoError(t, seed.Client.Create(ctx, gardenWorker))

	f.Sweep("required")
	requireCondition(t, ci, requiredCondition, gardencorev1beta1.ConditionFalse, required.ReasonNoExtensionObjects)
	assert.Equal(t, required.MessageNoExtensionObjects, conditionMessage(t, ci, requiredCondition))
	assert.Empty(t, get(t, other).(*gardencorev1beta1.ControllerInstallation).Status.Conditions, "another seed's installation")

	worker := &extensionsv1alpha1.Worker{ObjectMeta: metav1.ObjectMeta{Name: "worker", Namespace: namespace.Name}}
	worker.Spec.Type = "foo"
	require.NoError(t, seed.Client.Create(ctx, worker))
	f.Sweep("required")
	requireCondition(t, ci, requiredCondition, gardencorev1beta1.ConditionTrue, required.ReasonExtensionObjectsExist)
	assert.Equal(t, "extension objects still exist in the seed: [Worker/foo]", conditionMessage(t, ci, requiredCondition))

	gardenCounts, seedCounts := f.measureBoth(func() { f.Sweep("required") })
	assert.Equal(t, map[string]int{"list": 2}, gardenCounts, "installations and registrations, no write")
	assert.Equal(t, map[string]int{"list": 12}, seedCounts, "one LIST per extension kind, no write")

	require.NoError(t, seed.Client.Delete(ctx, worker))
	f.Sweep("required")
	requireCondition(t, ci, requiredCondition, gardencorev1beta1.ConditionFalse, required.ReasonNoExtensionObjects)
	gardenCounts, seedCounts = f.measureBoth(func() { f.Sweep("required") })
	assert.Zero(t, writes(gardenCounts)+writes(seedCounts), "a sweep with nothing changed writes nothing")
}
