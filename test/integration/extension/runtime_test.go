package extension_test

import (
	"context"
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	operatorv1alpha1 "github.com/gardener/gardener/pkg/apis/operator/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	requiredruntime "github.com/gardener-knative/gardener-knative/pkg/controller/extension/required/runtime"
)

func TestRequiredRuntimeFollowsTheGardensExtensionObjects(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	const name = "local-runtime-required"
	ext := newExtension(t, name)
	ext.Spec.Resources = append(ext.Spec.Resources, gardencorev1beta1.ControllerResource{Kind: "DNSRecord", Type: name})
	require.NoError(t, env.Client.Update(ctx, ext))
	h.Send("add", ext)
	notRequired := condition(t, get(t, name, &operatorv1alpha1.Extension{}), operatorv1alpha1.ExtensionRequiredRuntime)
	assert.Equal(t, gardencorev1beta1.ConditionFalse, notRequired.Status)
	assert.Equal(t, "ExtensionNotRequired", notRequired.Reason)
	assert.Equal(t, "Extension not required for any kind", notRequired.Message)

	ns := env.Namespace(t)
	// A shoot's DNSRecord does not make the garden need the extension.
	shootRecord := &extensionsv1alpha1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Name: "shoot", Namespace: ns}}
	shootRecord.Spec.Type = name
	require.NoError(t, env.Client.Create(ctx, shootRecord))
	counts := h.Measure(func() { h.Send("add", shootRecord) })
	assert.Empty(t, counts, "filtered by the predicate")

	gardenRecord := &extensionsv1alpha1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Name: "garden", Namespace: ns}}
	gardenRecord.Spec.Type = name
	gardenRecord.Spec.Class = ptr.To(extensionsv1alpha1.ExtensionClassGarden)
	require.NoError(t, env.Client.Create(ctx, gardenRecord))
	h.Send("add", gardenRecord)
	required := condition(t, get(t, name, &operatorv1alpha1.Extension{}), operatorv1alpha1.ExtensionRequiredRuntime)
	assert.Equal(t, gardencorev1beta1.ConditionTrue, required.Status)
	assert.Equal(t, "ExtensionRequired", required.Reason)
	assert.Equal(t, "Extension required for kinds [DNSRecord]", required.Message)

	// Another Extension auto-enables for the garden an Extension type this one supports.
	enabler := &operatorv1alpha1.Extension{ObjectMeta: metav1.ObjectMeta{Name: name + "-enabler"}}
	enabler.Spec.Resources = []gardencorev1beta1.ControllerResource{{Kind: "Extension", Type: name, Primary: ptr.To(false), AutoEnable: []gardencorev1beta1.ClusterType{"garden"}}}
	require.NoError(t, env.Client.Create(ctx, enabler))
	t.Cleanup(func() { cleanUp(t, enabler.Name) })
	h.Sweep(requiredruntime.SweepName)
	assert.Equal(t, "Extension required for kinds [DNSRecord Extension]", condition(t, get(t, name, &operatorv1alpha1.Extension{}), operatorv1alpha1.ExtensionRequiredRuntime).Message)
	assert.Equal(t, "Extension required for kinds [Extension]", condition(t, get(t, enabler.Name, &operatorv1alpha1.Extension{}), operatorv1alpha1.ExtensionRequiredRuntime).Message)

	require.NoError(t, env.Client.Delete(ctx, enabler))
	require.NoError(t, env.Client.Delete(ctx, gardenRecord))
	h.Send("delete", gardenRecord)
	assert.Equal(t, gardencorev1beta1.ConditionFalse, condition(t, get(t, name, &operatorv1alpha1.Extension{}), operatorv1alpha1.ExtensionRequiredRuntime).Status)
	assert.NoError(t, client.IgnoreNotFound(env.Client.Delete(ctx, shootRecord)))
}
