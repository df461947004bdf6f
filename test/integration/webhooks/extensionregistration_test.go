package webhooks_test

import (
	"context"
	"encoding/json"
	"testing"

	gardencorev1 "github.com/gardener/gardener/pkg/apis/core/v1"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	operatorv1alpha1 "github.com/gardener/gardener/pkg/apis/operator/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/webhook/extensionregistration"
)

func init() { register(extensionregistration.Webhook, nil) }

// createRegistration creates a ControllerRegistration in the target until the test ends.
func createRegistration(t *testing.T, name string, resources ...gardencorev1beta1.ControllerResource) (*gardencorev1beta1.ControllerRegistration, error) {
	t.Helper()
	r := &gardencorev1beta1.ControllerRegistration{ObjectMeta: metav1.ObjectMeta{Name: name}}
	r.Spec.Resources = resources
	err := target.Client.Create(context.Background(), r)
	if err == nil {
		t.Cleanup(func() { assert.NoError(t, client.IgnoreNotFound(target.Client.Delete(context.Background(), r))) })
	}
	return r, err
}

// assertDeniedBy checks that a write was refused by the webhook's entry name, with the
// given reason and message.
func assertDeniedBy(t *testing.T, err error, entry string, reason metav1.StatusReason, message string) {
	t.Helper()
	require.Error(t, err)
	assert.Equal(t, reason, apierrors.ReasonForError(err), "%v", err)
	assert.ErrorContains(t, err, `admission webhook "`+entry+`" denied the request: `+message)
}

func TestExtensionRegistrationOnePrimaryPerKindAndType(t *testing.T) {
	infra := gardencorev1beta1.ControllerResource{Kind: "Infrastructure", Type: "er-local"}
	_, err := createRegistration(t, "er-provider-local", infra, gardencorev1beta1.ControllerResource{Kind: "Worker", Type: "er-local"})
	require.NoError(t, err)

	_, err = createRegistration(t, "er-provider-local-2", infra)
	assertDeniedBy(t, err, "validation.controllerregistrations.core.gardener.cloud", metav1.StatusReasonForbidden,
		`controllerregistrations.core.gardener.cloud "er-provider-local-2" is forbidden: another ControllerRegistration resource already exists that controls resource Infrastructure/er-local primarily`)

	secondary := infra
	secondary.Primary = new(false)
	_, err = createRegistration(t, "er-provider-local-secondary", secondary)
	require.NoError(t, err, "a secondary controller of the kind/type")

	_, err = createRegistration(t, "er-invalid", gardencorev1beta1.ControllerResource{Kind: "Infrastructure"})
	assertDeniedBy(t, err, "validation.controllerregistrations.core.gardener.cloud", metav1.StatusReasonInvalid,
		`ControllerRegistration.core.gardener.cloud "er-invalid" is invalid: spec.resources[0].type: Required value: field is required`)
}

func TestExtensionRegistrationPrimaryIsImmutable(t *testing.T) {
	ctx := context.Background()
	r, err := createRegistration(t, "er-immutable", gardencorev1beta1.ControllerResource{Kind: "Network", Type: "er-calico"})
	require.NoError(t, err)
	r.Spec.Resources[0].Primary = new(false)
	err = target.Client.Update(ctx, r)
	assertDeniedBy(t, err, "validation.controllerregistrations.core.gardener.cloud", metav1.StatusReasonInvalid,
		`ControllerRegistration.core.gardener.cloud "er-immutable" is invalid: spec.resources[0].primary: Invalid value: false: field is immutable`)
}

func TestExtensionRegistrationControllerDeploymentOCIReference(t *testing.T) {
	ctx := context.Background()
	deployment := func(name string, oci gardencorev1beta1.OCIRepository) *gardencorev1beta1.ControllerDeployment {
		raw, err := json.Marshal(gardencorev1beta1.HelmControllerDeployment{OCIRepository: &oci})
		require.NoError(t, err)
		return &gardencorev1beta1.ControllerDeployment{ObjectMeta: metav1.ObjectMeta{Name: name}, Type: "helm", ProviderConfig: runtime.RawExtension{Raw: raw}}
	}
	valid := deployment("er-valid", gardencorev1beta1.OCIRepository{Repository: new("registry.example.com/local"), Tag: new("v1"), Digest: new("sha256:abc")})
	require.NoError(t, target.Client.Create(ctx, valid))
	t.Cleanup(func() { assert.NoError(t, target.Client.Delete(context.Background(), valid)) })

	err := target.Client.Create(ctx, deployment("er-tagless", gardencorev1beta1.OCIRepository{Repository: new("registry.example.com/local")}))
	assertDeniedBy(t, err, "validation.controllerdeployments.core.gardener.cloud", metav1.StatusReasonInvalid,
		`ControllerDeployment.core.gardener.cloud "er-tagless" is invalid: helm.ociRepository: Required value: must provide either tag or digest`)
}

func TestExtensionRegistrationExtensionUpdateAndDelete(t *testing.T) {
	ctx := context.Background()
	ext := &operatorv1alpha1.Extension{ObjectMeta: metav1.ObjectMeta{Name: "er-provider-local"}}
	ext.Spec.Resources = []gardencorev1beta1.ControllerResource{{Kind: "DNSRecord", Type: "er-local"}}
	ext.Spec.Deployment = &operatorv1alpha1.Deployment{ExtensionDeployment: &operatorv1alpha1.ExtensionDeploymentSpec{
		DeploymentSpec: operatorv1alpha1.DeploymentSpec{Helm: &operatorv1alpha1.ExtensionHelm{OCIRepository: &gardencorev1.OCIRepository{Ref: new("registry.example.com/local:v1")}}},
	}}
	require.NoError(t, target.Client.Create(ctx, ext))
	t.Cleanup(func() { assert.NoError(t, client.IgnoreNotFound(target.Client.Delete(context.Background(), ext))) })

	changed := ext.DeepCopy()
	changed.Spec.Resources[0].Primary = new(false)
	err := target.Client.Update(ctx, changed)
	assertDeniedBy(t, err, "extension-validation.operator.gardener.cloud", metav1.StatusReasonInvalid,
		`Extension.operator.gardener.cloud "er-provider-local" is invalid: spec.resources[0].primary: Invalid value: false: field is immutable`)

	ext.Status.Conditions = []gardencorev1beta1.Condition{{Type: operatorv1alpha1.ExtensionRequiredVirtual, Status: gardencorev1beta1.ConditionTrue,
		Reason: "RequiredControllerInstallation", Message: "Extension has required ControllerInstallations for seed clusters",
		LastTransitionTime: metav1.Now(), LastUpdateTime: metav1.Now()}}
	require.NoError(t, target.Client.Status().Update(ctx, ext), "status is not validated")
	err = target.Client.Delete(ctx, ext)
	assertDeniedBy(t, err, "extension-validation.operator.gardener.cloud", metav1.StatusReasonForbidden,
		`extension is still being required: "Extension has required ControllerInstallations for seed clusters"`)

	ext.Status.Conditions[0].Status = gardencorev1beta1.ConditionFalse
	require.NoError(t, target.Client.Status().Update(ctx, ext))
	require.NoError(t, target.Client.Delete(ctx, ext), "an Extension no longer required may go")
}
