package merge

import (
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// InjectLabels adds the ManagedResource's .spec.injectLabels (and the managed-by label) to an
// object before it is merged, and also to the objects it makes: the pods of a pod template and the
// PersistentVolumeClaims of volumeClaimTemplates, so that everything a ManagedResource brings into
// the cluster can be selected. Later labels win over the object's own. An error (a template that
// is not an object) may leave the labels partly injected, as in Gardener.
func InjectLabels(obj *unstructured.Unstructured, labels map[string]string) error {
	if len(labels) == 0 {
		return nil
	}
	merged := obj.GetLabels()
	if merged == nil {
		merged = make(map[string]string, len(labels))
	}
	maps.Copy(merged, labels)
	obj.SetLabels(merged)

	if _, found, err := unstructured.NestedMap(obj.Object, "spec", "template"); err != nil {
		return err
	} else if found {
		if err := addLabels(obj.Object, labels, "spec", "template", "metadata", "labels"); err != nil {
			return err
		}
	}

	templates, found, err := unstructured.NestedSlice(obj.Object, "spec", "volumeClaimTemplates")
	if err != nil || !found {
		return err
	}
	for i, item := range templates {
		template, ok := item.(map[string]any)
		if !ok {
			return fmt.Errorf("failed to inject labels into .spec.volumeClaimTemplates[%d], is not a map[string]any", i)
		}
		if err := addLabels(template, labels, "metadata", "labels"); err != nil {
			return err
		}
	}
	return unstructured.SetNestedSlice(obj.Object, templates, "spec", "volumeClaimTemplates")
}

// addLabels merges labels into the string map at path below object.
func addLabels(object map[string]any, labels map[string]string, path ...string) error {
	existing, _, err := unstructured.NestedStringMap(object, path...)
	if err != nil {
		return err
	}
	merged := make(map[string]any, len(existing)+len(labels))
	for key, value := range existing {
		merged[key] = value
	}
	for key, value := range labels {
		merged[key] = value
	}
	return unstructured.SetNestedField(object, merged, path...)
}
