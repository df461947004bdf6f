package registration

import (
	"encoding/json"
	"testing"
	"time"

	gardencorev1 "github.com/gardener/gardener/pkg/apis/core/v1"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	operatorv1alpha1 "github.com/gardener/gardener/pkg/apis/operator/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func extension() *operatorv1alpha1.Extension {
	ext := &operatorv1alpha1.Extension{ObjectMeta: metav1.ObjectMeta{Name: "provider-local"}}
	ext.Spec.Resources = []gardencorev1beta1.ControllerResource{
		{Kind: "DNSRecord", Type: "local"},
		{Kind: "Extension", Type: "local-ext", Primary: ptr.To(false), ReconcileTimeout: &metav1.Duration{Duration: time.Minute},
			AutoEnable: []gardencorev1beta1.ClusterType{"garden", "shoot"}, ClusterCompatibility: []gardencorev1beta1.ClusterType{"garden"},
			Lifecycle: &gardencorev1beta1.ControllerResourceLifecycle{Reconcile: ptr.To(gardencorev1beta1.BeforeKubeAPIServer)}},
	}
	ext.Spec.Deployment = &operatorv1alpha1.Deployment{ExtensionDeployment: &operatorv1alpha1.ExtensionDeploymentSpec{
		DeploymentSpec: operatorv1alpha1.DeploymentSpec{Helm: &operatorv1alpha1.ExtensionHelm{OCIRepository: &gardencorev1.OCIRepository{
			Repository: ptr.To("registry.example.com/local"), Tag: ptr.To("v1"), PullSecretRef: &corev1.LocalObjectReference{Name: "pull"}}}},
		Values:                 &apiextensionsv1.JSON{Raw: []byte(`{"replicas":2}`)},
		RuntimeClusterValues:   &apiextensionsv1.JSON{Raw: []byte(`{"replicas":1}`)},
		Policy:                 ptr.To(gardencorev1beta1.ControllerDeploymentPolicyAlwaysExceptNoShoots),
		SeedSelector:           &metav1.LabelSelector{MatchLabels: map[string]string{"env": "dev"}},
		InjectGardenKubeconfig: ptr.To(true),
	}}
	return ext
}

func TestDesired(t *testing.T) {
	ext := extension()
	ext.Annotations = map[string]string{v1beta1constants.AnnotationPodSecurityEnforce: "baseline", "other": "x"}
	before := ext.DeepCopy()

	registration, deployment, err := Desired(ext)
	require.NoError(t, err)
	assert.Equal(t, before, ext, "the Extension is left as it is")

	assert.Equal(t, metav1.ObjectMeta{Name: "provider-local", Labels: map[string]string{ExtensionLabel: "provider-local"},
		Annotations: map[string]string{v1beta1constants.AnnotationPodSecurityEnforce: "baseline"}}, registration.ObjectMeta)
	assert.Equal(t, gardencorev1beta1.ControllerRegistrationSpec{
		Resources: []gardencorev1beta1.ControllerResource{
			{Kind: "DNSRecord", Type: "local"},
			{Kind: "Extension", Type: "local-ext", Primary: ptr.To(false), ReconcileTimeout: &metav1.Duration{Duration: time.Minute},
				AutoEnable: []gardencorev1beta1.ClusterType{"shoot"}, ClusterCompatibility: []gardencorev1beta1.ClusterType{},
				Lifecycle: &gardencorev1beta1.ControllerResourceLifecycle{Reconcile: ptr.To(gardencorev1beta1.BeforeKubeAPIServer)}},
		},
		Deployment: &gardencorev1beta1.ControllerRegistrationDeployment{
			Policy:         ptr.To(gardencorev1beta1.ControllerDeploymentPolicyAlwaysExceptNoShoots),
			SeedSelector:   &metav1.LabelSelector{MatchLabels: map[string]string{"env": "dev"}},
			DeploymentRefs: []gardencorev1beta1.DeploymentRef{{Name: "provider-local"}},
		},
	}, registration.Spec)

	assert.Equal(t, metav1.ObjectMeta{Name: "provider-local", Labels: map[string]string{ExtensionLabel: "provider-local"}}, deployment.ObjectMeta)
	assert.Equal(t, "helm", deployment.Type)
	assert.Equal(t, ptr.To(true), deployment.InjectGardenKubeconfig)
	assert.JSONEq(t, `{"values":{"replicas":2},"ociRepository":{"repository":"registry.example.com/local","tag":"v1","pullSecretRef":{"name":"pull"}}}`,
		string(deployment.ProviderConfig.Raw), "the runtime cluster's values are not the seeds'")
	var helm gardencorev1beta1.HelmControllerDeployment
	require.NoError(t, json.Unmarshal(deployment.ProviderConfig.Raw, &helm))
}

func TestHasExtensionDeployment(t *testing.T) {
	ext := extension()
	assert.True(t, HasExtensionDeployment(ext))
	ext.Spec.Deployment.ExtensionDeployment.Helm = nil
	assert.False(t, HasExtensionDeployment(ext))
	ext.Spec.Deployment.ExtensionDeployment = nil
	assert.False(t, HasExtensionDeployment(ext))
	ext.Spec.Deployment = nil
	assert.False(t, HasExtensionDeployment(ext))
}

func event(obj map[string]any, created, deleted bool) function.Event {
	return function.Event{Object: &unstructured.Unstructured{Object: obj}, Created: created, Deleted: deleted}
}

func TestExtensionPredicate(t *testing.T) {
	installed := []any{map[string]any{"type": "Installed", "status": "True"}}
	meta := func(generation int64, finalizers []any, deleting bool) map[string]any {
		m := map[string]any{"name": "a", "generation": generation}
		if finalizers != nil {
			m["finalizers"] = finalizers
		}
		if deleting {
			m["deletionTimestamp"] = "2026-11-24T12:00:00Z"
		}
		return m
	}
	finalized := []any{operatorv1alpha1.FinalizerName}
	for _, tc := range []struct {
		name string
		ev   function.Event
		want bool
	}{
		{"new", event(map[string]any{"metadata": meta(1, nil, false)}, true, false), true},
		{"reconciled", event(map[string]any{"metadata": meta(1, finalized, false), "status": map[string]any{"observedGeneration": int64(1), "conditions": installed}}, false, false), false},
		{"spec changed", event(map[string]any{"metadata": meta(2, finalized, false), "status": map[string]any{"observedGeneration": int64(1), "conditions": installed}}, false, false), true},
		{"no Installed condition", event(map[string]any{"metadata": meta(1, finalized, false), "status": map[string]any{"observedGeneration": int64(1)}}, false, false), true},
		{"being deleted", event(map[string]any{"metadata": meta(1, finalized, true), "status": map[string]any{"observedGeneration": int64(1), "conditions": installed}}, false, false), true},
		{"being deleted, finalizer gone", event(map[string]any{"metadata": meta(1, []any{"other"}, true)}, false, false), false},
		{"deleted", event(map[string]any{"metadata": meta(1, nil, false)}, false, true), false},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, ExtensionPredicate(tc.ev)) })
	}
}

func TestOwnedDeletedPredicate(t *testing.T) {
	owned := map[string]any{"metadata": map[string]any{"name": "a", "labels": map[string]any{ExtensionLabel: "a"}}}
	assert.True(t, OwnedDeletedPredicate(event(owned, false, true)))
	assert.False(t, OwnedDeletedPredicate(event(owned, false, false)), "updates are the sweep's")
	assert.False(t, OwnedDeletedPredicate(event(map[string]any{"metadata": map[string]any{"name": "a"}}, false, true)), "not an Extension's")
	keys, err := MapToOwningExtension(t.Context(), nil, event(owned, false, true))
	require.NoError(t, err)
	assert.Equal(t, []function.Key{{Name: "a"}}, keys)
}
