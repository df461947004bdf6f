package manifests

import (
	"testing"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
)

func TestSortObjectReferences(t *testing.T) {
	ref := func(apiVersion, kind, namespace, name string) resourcesv1alpha1.ObjectReference {
		return resourcesv1alpha1.ObjectReference{ObjectReference: corev1.ObjectReference{APIVersion: apiVersion, Kind: kind, Namespace: namespace, Name: name}}
	}
	refs := []resourcesv1alpha1.ObjectReference{
		ref("apps/v1", "Deployment", "web", "nginx"),
		ref("v1", "Namespace", "", "web"),
		ref("v1", "ConfigMap", "", "b"),
		ref("v1", "ConfigMap", "bar", "a"),
		ref("rbac.authorization.k8s.io/v1", "ClusterRole", "", "r"),
	}
	SortObjectReferences(refs)
	assert.Equal(t, []resourcesv1alpha1.ObjectReference{
		ref("v1", "ConfigMap", "bar", "a"), // /ConfigMap/bar/a
		ref("v1", "ConfigMap", "", "b"),    // /ConfigMap/default/b
		ref("v1", "Namespace", "", "web"),  // /Namespace//web
		ref("apps/v1", "Deployment", "web", "nginx"),
		ref("rbac.authorization.k8s.io/v1", "ClusterRole", "", "r"),
	}, refs)
}
