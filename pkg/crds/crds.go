// Package crds declares the CustomResourceDefinitions gardener-knative ships in config/ (as
// Gardener ships them with its components), written from the API types of
// github.com/gardener/gardener/pkg/apis: hack/genconfig renders them into config/, and testenv
// installs the same objects into every test control plane, so what is tested is what is deployed.
package crds

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
)

// All are the CRDs config/ ships.
func All() []*apiextensionsv1.CustomResourceDefinition {
	return []*apiextensionsv1.CustomResourceDefinition{ManagedResource()}
}

// ManagedResource is resources.gardener.cloud's ManagedResource: GRM's own API, a real CRD in
// the seed (unlike core.gardener.cloud, which gardener-apiserver serves).
func ManagedResource() *apiextensionsv1.CustomResourceDefinition {
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	boolean := apiextensionsv1.JSONSchemaProps{Type: "boolean"}
	stringMap := apiextensionsv1.JSONSchemaProps{Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Schema: &str}}
	groupKind := apiextensionsv1.JSONSchemaProps{Type: "object", Required: []string{"group", "kind"}, Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"group": str, "kind": str,
	}}
	condition := apiextensionsv1.JSONSchemaProps{
		Type:     "object",
		Required: []string{"lastTransitionTime", "lastUpdateTime", "message", "reason", "status", "type"},
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"codes":              {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &str}},
			"lastTransitionTime": {Type: "string", Format: "date-time"},
			"lastUpdateTime":     {Type: "string", Format: "date-time"},
			"message":            str, "reason": str, "status": str, "type": str,
		},
	}
	objectReference := apiextensionsv1.JSONSchemaProps{
		Type:     "object",
		XMapType: ptr.To("atomic"),
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"apiVersion": str, "fieldPath": str, "kind": str, "name": str, "namespace": str,
			"resourceVersion": str, "uid": str, "labels": stringMap, "annotations": stringMap,
		},
	}
	spec := apiextensionsv1.JSONSchemaProps{
		Type:     "object",
		Required: []string{"secretRefs"},
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"class": str,
			"secretRefs": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
				Type: "object", XMapType: ptr.To("atomic"),
				Properties: map[string]apiextensionsv1.JSONSchemaProps{"name": {Type: "string", Default: &apiextensionsv1.JSON{Raw: []byte(`""`)}}},
			}}},
			"injectLabels":                 stringMap,
			"forceOverwriteLabels":         boolean,
			"forceOverwriteAnnotations":    boolean,
			"keepObjects":                  boolean,
			"deletePersistentVolumeClaims": boolean,
			"equivalences": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
				Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &groupKind},
			}}},
		},
	}
	status := apiextensionsv1.JSONSchemaProps{
		Type: "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"conditions":          {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &condition}},
			"observedGeneration":  {Type: "integer", Format: "int64"},
			"resources":           {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &objectReference}},
			"secretsDataChecksum": str,
		},
	}
	conditionStatus := func(t string) string { return `.status.conditions[?(@.type=="` + t + `")].status` }
	return &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: apiextensionsv1.SchemeGroupVersion.String(), Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: "managedresources." + resourcesv1alpha1.SchemeGroupVersion.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: resourcesv1alpha1.SchemeGroupVersion.Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Kind: "ManagedResource", ListKind: "ManagedResourceList", Plural: "managedresources", Singular: "managedresource", ShortNames: []string{"mr"},
			},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: resourcesv1alpha1.SchemeGroupVersion.Version, Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				AdditionalPrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{
					{Name: "Class", Type: "string", JSONPath: ".spec.class", Description: "The resource manager instance responsible for this ManagedResource."},
					{Name: "Applied", Type: "string", JSONPath: conditionStatus(string(resourcesv1alpha1.ResourcesApplied)), Description: "Whether all resources have been applied."},
					{Name: "Healthy", Type: "string", JSONPath: conditionStatus(string(resourcesv1alpha1.ResourcesHealthy)), Description: "Whether all resources are healthy."},
					{Name: "Progressing", Type: "string", JSONPath: conditionStatus(string(resourcesv1alpha1.ResourcesProgressing)), Description: "Whether resources are still being rolled out."},
					{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
				},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"apiVersion": str, "kind": str, "metadata": {Type: "object"},
						"spec": spec, "status": status,
					},
				}},
			}},
		},
	}
}
