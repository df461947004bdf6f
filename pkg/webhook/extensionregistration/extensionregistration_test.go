package extensionregistration

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	operatorv1alpha1 "github.com/gardener/gardener/pkg/apis/operator/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gardener-knative/gardener-knative/pkg/scheme"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/webhooktest"
)

func withKind(obj client.Object, kind string) client.Object {
	gv := gardencorev1beta1.SchemeGroupVersion
	if kind == "Extension" {
		gv = operatorv1alpha1.SchemeGroupVersion
	}
	obj.GetObjectKind().SetGroupVersionKind(gv.WithKind(kind))
	return obj
}

func TestHandler(t *testing.T) {
	infra := gardencorev1beta1.ControllerResource{Kind: "Infrastructure", Type: "local"}
	existing := &gardencorev1beta1.ControllerRegistration{ObjectMeta: metav1.ObjectMeta{Name: "provider-local"},
		Spec: gardencorev1beta1.ControllerRegistrationSpec{Resources: []gardencorev1beta1.ControllerResource{infra}}}
	reader := fake.NewClientBuilder().WithScheme(scheme.Gardener).WithObjects(existing).Build()

	helmDeployment := func(helm gardencorev1beta1.HelmControllerDeployment) *gardencorev1beta1.ControllerDeployment {
		raw, err := json.Marshal(helm)
		require.NoError(t, err)
		return &gardencorev1beta1.ControllerDeployment{ObjectMeta: metav1.ObjectMeta{Name: "provider-local"}, Type: "helm", ProviderConfig: runtime.RawExtension{Raw: raw}}
	}
	required := validExtension()
	required.Status.Conditions = []gardencorev1beta1.Condition{{Type: operatorv1alpha1.ExtensionRequiredVirtual, Status: gardencorev1beta1.ConditionTrue, Message: "Extension has required ControllerInstallations for seed clusters"}}
	secondary := validExtension()
	secondary.Spec.Resources[0].Primary = ptr.To(false)

	for _, tc := range []struct {
		name        string
		op          admissionv1.Operation
		kind        string
		obj, oldObj client.Object
		wantCode    int32
		wantMessage string
	}{
		{name: "a registration of another kind/type", op: admissionv1.Create, kind: "ControllerRegistration",
			obj:      &gardencorev1beta1.ControllerRegistration{ObjectMeta: metav1.ObjectMeta{Name: "provider-aws"}, Spec: gardencorev1beta1.ControllerRegistrationSpec{Resources: []gardencorev1beta1.ControllerResource{{Kind: "Infrastructure", Type: "aws"}}}},
			wantCode: http.StatusOK},
		{name: "a second primary registration", op: admissionv1.Create, kind: "ControllerRegistration",
			obj:      &gardencorev1beta1.ControllerRegistration{ObjectMeta: metav1.ObjectMeta{Name: "provider-local-2"}, Spec: gardencorev1beta1.ControllerRegistrationSpec{Resources: []gardencorev1beta1.ControllerResource{infra}}},
			wantCode: http.StatusForbidden, wantMessage: `controllerregistrations.core.gardener.cloud "provider-local-2" is forbidden: another ControllerRegistration resource already exists that controls resource Infrastructure/local primarily`},
		{name: "an update of the primary registration", op: admissionv1.Update, kind: "ControllerRegistration",
			obj: func() client.Object { r := existing.DeepCopy(); r.ResourceVersion = "2"; return r }(), oldObj: func() client.Object { r := existing.DeepCopy(); r.ResourceVersion = "2"; return r }(),
			wantCode: http.StatusOK},
		{name: "an invalid registration", op: admissionv1.Create, kind: "ControllerRegistration",
			obj:      &gardencorev1beta1.ControllerRegistration{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Spec: gardencorev1beta1.ControllerRegistrationSpec{Resources: []gardencorev1beta1.ControllerResource{{Kind: "Infrastructure"}}}},
			wantCode: http.StatusUnprocessableEntity, wantMessage: `ControllerRegistration.core.gardener.cloud "bad" is invalid: spec.resources[0].type: Required value: field is required`},
		{name: "a Helm deployment", op: admissionv1.Create, kind: "ControllerDeployment",
			obj: helmDeployment(gardencorev1beta1.HelmControllerDeployment{OCIRepository: &gardencorev1beta1.OCIRepository{Repository: ptr.To("registry.example.com/local"), Digest: ptr.To("sha256:abc")}}), wantCode: http.StatusOK},
		{name: "a Helm deployment with tag and ref", op: admissionv1.Update, kind: "ControllerDeployment",
			obj:      helmDeployment(gardencorev1beta1.HelmControllerDeployment{OCIRepository: &gardencorev1beta1.OCIRepository{Ref: ptr.To("registry.example.com/local:v1"), Tag: ptr.To("v1")}}),
			oldObj:   helmDeployment(gardencorev1beta1.HelmControllerDeployment{OCIRepository: &gardencorev1beta1.OCIRepository{Ref: ptr.To("registry.example.com/local:v1")}}),
			wantCode: http.StatusUnprocessableEntity, wantMessage: `ControllerDeployment.core.gardener.cloud "provider-local" is invalid: helm.ociRepository.tag: Forbidden: cannot provide tag when ref is set`},
		{name: "a valid Extension", op: admissionv1.Create, kind: "Extension", obj: validExtension(), wantCode: http.StatusOK},
		{name: "an Extension turning secondary", op: admissionv1.Update, kind: "Extension", obj: secondary, oldObj: validExtension(),
			wantCode: http.StatusUnprocessableEntity, wantMessage: `Extension.operator.gardener.cloud "provider-local" is invalid: spec.resources[0].primary: Invalid value: false: field is immutable`},
		{name: "deleting a required Extension", op: admissionv1.Delete, kind: "Extension", oldObj: required,
			wantCode: http.StatusForbidden, wantMessage: `extension is still being required: "Extension has required ControllerInstallations for seed clusters"`},
		{name: "deleting an Extension no longer required", op: admissionv1.Delete, kind: "Extension", oldObj: validExtension(), wantCode: http.StatusOK},
		{name: "deleting a registration", op: admissionv1.Delete, kind: "ControllerRegistration", oldObj: existing.DeepCopy(), wantCode: http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var obj, oldObj runtime.Object
			if tc.obj != nil {
				obj = withKind(tc.obj, tc.kind)
			}
			if tc.oldObj != nil {
				oldObj = withKind(tc.oldObj, tc.kind)
			}
			req, err := webhooktest.NewRequest(tc.op, obj, oldObj)
			require.NoError(t, err)
			resp := Handler(reader).Handle(context.Background(), req)
			assert.Equal(t, tc.wantCode == http.StatusOK, resp.Allowed, "%+v", resp.Result)
			require.NotNil(t, resp.Result)
			assert.Equal(t, tc.wantCode, resp.Result.Code)
			assert.Equal(t, tc.wantMessage, resp.Result.Message)
		})
	}
}

func TestHandlerRefusesOtherKinds(t *testing.T) {
	req, err := webhooktest.NewRequest(admissionv1.Create, withKind(&gardencorev1beta1.Seed{}, "Seed"), nil)
	require.NoError(t, err)
	resp := Handler(nil).Handle(context.Background(), req)
	assert.False(t, resp.Allowed)
	assert.Equal(t, int32(http.StatusBadRequest), resp.Result.Code)
}
