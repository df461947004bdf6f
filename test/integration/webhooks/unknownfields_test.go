package webhooks_test

import (
	"context"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/gardener-knative/gardener-knative/pkg/webhook/kubernetesservicehost"
)

// futurePods are Pods as a kube-apiserver newer than our k8s.io/api would send them: with
// fields our types do not know. Our envtest kube-apiserver is of the same minor version as
// our types and prunes unknown fields of built-in kinds itself, so a custom resource that
// keeps unknown fields (x-kubernetes-preserve-unknown-fields) stands in for such Pods.
const (
	futurePodGroup    = "future.test.gardener-knative.io"
	futurePodResource = "futurepods"
)

func futurePodCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: futurePodResource + "." + futurePodGroup},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: futurePodGroup,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: futurePodResource, Singular: "futurepod", Kind: "FuturePod", ListKind: "FuturePodList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptrTo(true),
				}},
			}},
		},
	}
}

// futurePod is a Pod with fields our types do not know at every level.
func futurePod(namespace string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": futurePodGroup + "/v1",
		"kind":       "FuturePod",
		"metadata":   map[string]any{"generateName": "future-", "namespace": namespace},
		"futureTop":  map[string]any{"rollout": "canary", "weights": []any{int64(1), int64(2)}},
		"spec": map[string]any{
			"futureSpec": "spec-level",
			"containers": []any{map[string]any{
				"name": "main", "image": "busybox",
				"futureContainer": map[string]any{"restartRules": []any{"a", "b"}},
				"env":             []any{map[string]any{"name": "A", "value": "1", "futureEnv": "env-level"}},
			}},
			"initContainers": []any{map[string]any{"name": "init", "image": "busybox", "futureContainer": "init-level"}},
		},
		"status": map[string]any{"futureStatus": "status-level"},
	}}
}

// The kube-apiserver sends an object with fields our types do not know through the real
// registration path and TLS to kubernetes-service-host (a Pod mutator like the others: all
// share webhook.Patch); what it stores has the variable injected and every such field as it
// was sent.
func TestMutationsKeepFieldsTheTypesDoNotKnow(t *testing.T) {
	ctx := context.Background()
	crds := envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{futurePodCRD()}}
	_, err := envtest.InstallCRDs(target.Config, crds)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, envtest.UninstallCRDs(target.Config, crds)) })

	u, err := url.Parse("https://" + servingAddr() + kubernetesservicehost.Path)
	require.NoError(t, err)
	registration := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "future-pods"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:         "future-pods.test.gardener-knative.io",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptrTo(u.String()), CABundle: serving.LocalServingCAData},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{futurePodGroup}, APIVersions: []string{"v1"}, Resources: []string{futurePodResource}},
			}},
			FailurePolicy:           ptrTo(admissionregistrationv1.Fail),
			SideEffects:             ptrTo(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	require.NoError(t, target.Client.Create(ctx, registration))
	t.Cleanup(func() { assert.NoError(t, target.Client.Delete(context.Background(), registration)) })

	ns := targetNamespace(t, nil)
	waitForWebhook(t, func(ctx context.Context) bool {
		probe := futurePod(ns)
		if err := target.Client.Create(ctx, probe, client.DryRunAll); err != nil {
			return false
		}
		env, _, _ := unstructured.NestedSlice(probe.Object, "spec", "containers")
		return len(env) == 1 && len(env[0].(map[string]any)["env"].([]any)) == 2
	})

	sent := futurePod(ns)
	require.NoError(t, target.Client.Create(ctx, sent.DeepCopy()))
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion(futurePodGroup + "/v1")
	list.SetKind("FuturePodList")
	require.NoError(t, target.Client.List(ctx, list, client.InNamespace(ns)))
	require.Len(t, list.Items, 1)
	stored := list.Items[0].Object

	for _, path := range [][]string{{"futureTop"}, {"spec", "futureSpec"}, {"status", "futureStatus"}} {
		want, _, _ := unstructured.NestedFieldNoCopy(sent.Object, path...)
		got, found, _ := unstructured.NestedFieldNoCopy(stored, path...)
		assert.True(t, found, "%v kept", path)
		assert.Equal(t, want, got, "%v", path)
	}
	containers, _, _ := unstructured.NestedSlice(stored, "spec", "containers")
	require.Len(t, containers, 1)
	main := containers[0].(map[string]any)
	assert.Equal(t, map[string]any{"restartRules": []any{"a", "b"}}, main["futureContainer"])
	assert.Equal(t, []any{
		map[string]any{"name": "A", "value": "1", "futureEnv": "env-level"},
		map[string]any{"name": kubernetesservicehost.EnvVar, "value": apiServerHost},
	}, main["env"], "mutated, with the unknown field of the existing variable kept")
	initContainers, _, _ := unstructured.NestedSlice(stored, "spec", "initContainers")
	require.Len(t, initContainers, 1)
	assert.Equal(t, "init-level", initContainers[0].(map[string]any)["futureContainer"])
	assert.Equal(t, []any{map[string]any{"name": kubernetesservicehost.EnvVar, "value": apiServerHost}}, initContainers[0].(map[string]any)["env"])
}
