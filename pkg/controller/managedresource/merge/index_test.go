package merge

import (
	"testing"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

func ref(apiVersion, kind, namespace, name string) resourcesv1alpha1.ObjectReference {
	return resourcesv1alpha1.ObjectReference{ObjectReference: corev1.ObjectReference{APIVersion: apiVersion, Kind: kind, Namespace: namespace, Name: name}}
}

func TestKey(t *testing.T) {
	assert.Equal(t, "apps/Deployment/default/d", ReferenceKey(ref("apps/v1", "Deployment", "", "d")))
	assert.Equal(t, "/Namespace//ns", ReferenceKey(ref("v1", "Namespace", "", "ns")))
	assert.Equal(t, "/ConfigMap/kube-system/cm", ReferenceKey(ref("v1", "ConfigMap", "kube-system", "cm")))
	assert.Equal(t, "/Thing/default/t", ReferenceKey(ref("a/b/c", "Thing", "", "t")), "an unparsable apiVersion counts as the core group")
}

func TestEquivalences(t *testing.T) {
	gk := func(group, kind string) metav1.GroupKind { return metav1.GroupKind{Group: group, Kind: kind} }
	a, b, c, d := gk("a", "A"), gk("b", "B"), gk("c", "C"), gk("d", "D")

	tests := []struct {
		name       string
		additional [][]metav1.GroupKind
		want       map[metav1.GroupKind]sets.Set[metav1.GroupKind]
	}{
		{
			name: "defaults",
			want: map[metav1.GroupKind]sets.Set[metav1.GroupKind]{
				gk("apps", "Deployment"):              sets.New(gk("apps", "Deployment"), gk("extensions", "Deployment")),
				gk("extensions", "ReplicaSet"):        sets.New(gk("apps", "ReplicaSet"), gk("extensions", "ReplicaSet")),
				gk("networking.k8s.io", "Ingress"):    sets.New(gk("networking.k8s.io", "Ingress"), gk("extensions", "Ingress")),
				gk("extensions", "NetworkPolicy"):     sets.New(gk("networking.k8s.io", "NetworkPolicy"), gk("extensions", "NetworkPolicy")),
				gk("apps", "ControllerRevision"):      nil,
				gk("networking.k8s.io", "IngressFoo"): nil,
			},
		},
		{
			name:       "overlapping lists are joined",
			additional: [][]metav1.GroupKind{{a, b}, {b, c}},
			want:       map[metav1.GroupKind]sets.Set[metav1.GroupKind]{a: sets.New(a, b, c), b: sets.New(a, b, c), c: sets.New(a, b, c)},
		},
		{
			name:       "a list bridging two sets extends the first only",
			additional: [][]metav1.GroupKind{{a, b}, {c, d}, {b, c}},
			want: map[metav1.GroupKind]sets.Set[metav1.GroupKind]{
				a: sets.New(a, b, c), b: sets.New(a, b, c), c: sets.New(a, b, c), d: sets.New(c, d),
			},
		},
		{
			name:       "extending a default set",
			additional: [][]metav1.GroupKind{{gk("apps", "Deployment"), a}},
			want: map[metav1.GroupKind]sets.Set[metav1.GroupKind]{
				a: sets.New(gk("apps", "Deployment"), gk("extensions", "Deployment"), a),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := NewEquivalences(tt.additional...)
			for gk, want := range tt.want {
				assert.Equal(t, want, e.Of(gk), "%v", gk)
			}
		})
	}
}

func TestIndex(t *testing.T) {
	appsDeployment := ref("apps/v1", "Deployment", "ns", "d")
	extensionsDeployment := ref("extensions/v1beta1", "Deployment", "ns", "d")
	configMap := ref("v1", "ConfigMap", "", "cm")
	configMap.Labels = map[string]string{"applied": "before"}
	namespace := ref("v1", "Namespace", "", "ns")
	custom := ref("example.com/v1", "Thing", "ns", "t")

	t.Run("exact and defaulted namespace", func(t *testing.T) {
		index := NewIndex([]resourcesv1alpha1.ObjectReference{configMap, namespace, appsDeployment}, NewEquivalences())
		got, ok := index.Lookup(ref("v1", "ConfigMap", "default", "cm"))
		assert.True(t, ok)
		assert.Equal(t, configMap, got)
		_, ok = index.Lookup(ref("v1", "Namespace", "", "ns"))
		assert.True(t, ok)
		_, ok = index.Lookup(ref("v1", "Secret", "default", "cm"))
		assert.False(t, ok)

		assert.True(t, index.Found(configMap))
		assert.False(t, index.Found(appsDeployment))
		assert.Equal(t, []resourcesv1alpha1.ObjectReference{appsDeployment}, index.Unmatched())
	})

	t.Run("equivalent group", func(t *testing.T) {
		index := NewIndex([]resourcesv1alpha1.ObjectReference{extensionsDeployment, custom}, NewEquivalences([]metav1.GroupKind{{Group: "example.com", Kind: "Thing"}, {Group: "example.org", Kind: "Gizmo"}}))
		got, ok := index.Lookup(appsDeployment)
		assert.True(t, ok)
		assert.Equal(t, extensionsDeployment, got)
		got, ok = index.Lookup(ref("example.org/v2", "Gizmo", "ns", "t"))
		assert.True(t, ok)
		assert.Equal(t, custom, got)
		assert.Empty(t, index.Unmatched())
	})

	t.Run("without equivalences only exact matches", func(t *testing.T) {
		index := NewIndex([]resourcesv1alpha1.ObjectReference{extensionsDeployment, configMap}, nil)
		_, ok := index.Lookup(appsDeployment)
		assert.False(t, ok)
		assert.Equal(t, []resourcesv1alpha1.ObjectReference{configMap, extensionsDeployment}, index.Unmatched(), "ordered by key")
	})

	t.Run("a later duplicate replaces an earlier one", func(t *testing.T) {
		again := ref("v1", "ConfigMap", "default", "cm")
		index := NewIndex([]resourcesv1alpha1.ObjectReference{configMap, again}, nil)
		got, _ := index.Lookup(configMap)
		assert.Equal(t, again, got)
	})
}
