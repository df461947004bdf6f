package webhooks_test

import (
	"context"
	"testing"
	"time"

	rmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/gardener-knative/gardener-knative/pkg/webhook/vpainplaceupdates"
)

func init() {
	register(vpainplaceupdates.Webhook, func(c *rmv1alpha1.ResourceManagerConfiguration) {
		c.Webhooks.VPAInPlaceUpdates.Enabled = true
	})
}

// installVPACRD serves autoscaling.k8s.io/v1 VerticalPodAutoscalers in the target: a stand-in
// whose schema keeps every field, so a VPA's fields of any version reach the webhook.
func installVPACRD(t *testing.T) {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{
			Name: "verticalpodautoscalers.autoscaling.k8s.io",
			// As the VPA project's own CRD: k8s.io groups need an approved API review.
			Annotations: map[string]string{"api-approved.kubernetes.io": "https://github.com/kubernetes/kubernetes/pull/63797"},
		},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "autoscaling.k8s.io",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "verticalpodautoscalers", Singular: "verticalpodautoscaler", Kind: "VerticalPodAutoscaler", ListKind: "VerticalPodAutoscalerList", ShortNames: []string{"vpa"}},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true),
				}},
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
			}},
		},
	}
	// envtest installs (or updates) it and waits until it is served.
	_, err := envtest.InstallCRDs(target.Config, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{crd}})
	require.NoError(t, err)
}

// vpa is a VPA of a Deployment with the given update policy (none when nil).
func vpa(namespace string, labels map[string]string, updatePolicy map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscaler",
		"metadata": map[string]any{"generateName": "vpa-", "namespace": namespace},
		"spec": map[string]any{
			"targetRef":      map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
			"resourcePolicy": map[string]any{"containerPolicies": []any{map[string]any{"containerName": "*", "controlledValues": "RequestsOnly"}}},
			// A field newer than any VPA API the webhook knows.
			"futureField": map[string]any{"enabled": true},
		},
	}}
	if updatePolicy != nil {
		u.Object["spec"].(map[string]any)["updatePolicy"] = updatePolicy
	}
	u.SetLabels(labels)
	return u
}

func createVPA(t *testing.T, u *unstructured.Unstructured) {
	t.Helper()
	require.NoError(t, target.Client.Create(context.Background(), u))
	t.Cleanup(func() { assert.NoError(t, client.IgnoreNotFound(target.Client.Delete(context.Background(), u))) })
}

func updateMode(u *unstructured.Unstructured) string {
	mode, _, _ := unstructured.NestedString(u.Object, "spec", "updatePolicy", "updateMode")
	return mode
}

// probeVPA tells whether a VPA in namespace is mutated (the CRD served and the webhook called).
func probeVPA(namespace string) func(context.Context) bool {
	return func(ctx context.Context) bool {
		u := vpa(namespace, nil, nil)
		return target.Client.Create(ctx, u, client.DryRunAll) == nil && updateMode(u) == "InPlaceOrRecreate"
	}
}

func checkVPAInPlaceUpdates(t *testing.T, namespace string) {
	mutated := map[string]string{"app": "web", resourcesv1alpha1.VPAInPlaceUpdatesMutated: "true"}
	for _, tc := range []struct {
		name         string
		updatePolicy map[string]any
		want         string
	}{
		{name: "no update policy", want: "InPlaceOrRecreate"},
		{name: "Auto", updatePolicy: map[string]any{"updateMode": "Auto"}, want: "InPlaceOrRecreate"},
		{name: "Recreate", updatePolicy: map[string]any{"updateMode": "Recreate", "minReplicas": int64(2)}, want: "InPlaceOrRecreate"},
		{name: "Off", updatePolicy: map[string]any{"updateMode": "Off"}, want: "Off"},
		{name: "Initial", updatePolicy: map[string]any{"updateMode": "Initial"}, want: "Initial"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := vpa(namespace, map[string]string{"app": "web"}, tc.updatePolicy)
			createVPA(t, u)
			assert.Equal(t, tc.want, updateMode(u))
			if tc.want == "InPlaceOrRecreate" {
				assert.Equal(t, mutated, u.GetLabels())
			} else {
				assert.Equal(t, map[string]string{"app": "web"}, u.GetLabels())
			}
			assert.Equal(t, map[string]any{"enabled": true}, u.Object["spec"].(map[string]any)["futureField"], "unknown fields stay")
			if minReplicas, ok := tc.updatePolicy["minReplicas"]; ok {
				got, _, _ := unstructured.NestedInt64(u.Object, "spec", "updatePolicy", "minReplicas")
				assert.Equal(t, minReplicas, got)
			}
		})
	}

	t.Run("an update to Recreate", func(t *testing.T) {
		u := vpa(namespace, nil, map[string]any{"updateMode": "Off"})
		createVPA(t, u)
		require.NoError(t, unstructured.SetNestedField(u.Object, "Recreate", "spec", "updatePolicy", "updateMode"))
		require.NoError(t, target.Client.Update(context.Background(), u))
		assert.Equal(t, "InPlaceOrRecreate", updateMode(u))
		assert.Equal(t, map[string]string{resourcesv1alpha1.VPAInPlaceUpdatesMutated: "true"}, u.GetLabels())
	})

	t.Run("skipped", func(t *testing.T) {
		u := vpa(namespace, map[string]string{resourcesv1alpha1.VPAInPlaceUpdatesSkip: "true"}, map[string]any{"updateMode": "Auto"})
		createVPA(t, u)
		assert.Equal(t, "Auto", updateMode(u))
	})
}

// In a shoot, Gardener's registration matches kube-system and kubernetes-dashboard.
func TestVPAInPlaceUpdatesInShoot(t *testing.T) {
	installVPACRD(t)
	waitForWebhook(t, probeVPA(metav1.NamespaceSystem))
	checkVPAInPlaceUpdates(t, metav1.NamespaceSystem)

	t.Run("other namespaces", func(t *testing.T) {
		u := vpa(targetNamespace(t, map[string]string{v1beta1constants.GardenRole: "test"}), nil, nil)
		createVPA(t, u)
		assert.Empty(t, updateMode(u))
	})
}

// In the seed, Gardener's registration matches namespaces labelled gardener.cloud/role.
func TestVPAInPlaceUpdatesInSeed(t *testing.T) {
	installVPACRD(t)
	namespace := targetNamespace(t, map[string]string{v1beta1constants.GardenRole: "test"})
	require.Eventually(t, func() bool {
		return target.Client.Create(context.Background(), vpa(namespace, nil, nil), client.DryRunAll) == nil
	}, 30*time.Second, 100*time.Millisecond, "VerticalPodAutoscalers are never served")
	installRegistration(t, "seed/webhook-vpa-in-place-updates.yaml", "-seed", probeVPA(namespace))
	checkVPAInPlaceUpdates(t, namespace)

	t.Run("namespaces not Gardener's", func(t *testing.T) {
		u := vpa(targetNamespace(t, nil), nil, nil)
		createVPA(t, u)
		assert.Empty(t, updateMode(u))
	})
}
