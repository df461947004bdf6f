package project

import (
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func newProject(name string) *gardencorev1beta1.Project {
	return &gardencorev1beta1.Project{ObjectMeta: metav1.ObjectMeta{Name: name, UID: "3f0a0ad4-uid", Generation: 1}}
}

func TestNamespaceName(t *testing.T) {
	p := newProject("dev")
	assert.Regexp(t, `^garden-dev-[0-9a-f]{5}$`, NamespaceName(p))
	assert.Equal(t, GeneratedNamespaceName(p), GeneratedNamespaceName(newProject("dev")), "deterministic per UID")
	other := newProject("dev")
	other.UID = "another-uid"
	assert.NotEqual(t, GeneratedNamespaceName(p), GeneratedNamespaceName(other), "a recreated project gets another namespace")

	p.Spec.Namespace = ptr.To("garden-explicit")
	assert.Equal(t, "garden-explicit", NamespaceName(p))
}

func TestGeneratedNamespaceNameIsGardeners(t *testing.T) {
	// Gardener: fmt.Sprintf("garden-%s-%s", name, utils.ComputeSHA256Hex([]byte(uid))[:5]);
	// sha256("abc") = ba7816bf…
	p := newProject("p")
	p.UID = "abc"
	assert.Equal(t, "garden-p-ba781", GeneratedNamespaceName(p))
}

func TestNewNamespace(t *testing.T) {
	ns := NewNamespace(newProject("dev"), "garden-dev")
	assert.Equal(t, "garden-dev", ns.Name)
	assert.Equal(t, map[string]string{"gardener.cloud/role": "project", "project.gardener.cloud/name": "dev"}, ns.Labels)
	assert.Equal(t, map[string]string{
		"namespace.gardener.cloud/project":                       "3f0a0ad4-uid",
		"namespace.gardener.cloud/created-by-project-controller": "true",
	}, ns.Annotations)
	require.Len(t, ns.OwnerReferences, 1)
	ref := ns.OwnerReferences[0]
	assert.Equal(t, metav1.OwnerReference{APIVersion: "core.gardener.cloud/v1beta1", Kind: "Project", Name: "dev", UID: "3f0a0ad4-uid",
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}, ref)
}

func TestAdoptNamespace(t *testing.T) {
	p := newProject("dev")
	labelled := func() *metav1.ObjectMeta {
		return &metav1.ObjectMeta{Name: "garden-dev", Labels: map[string]string{
			"gardener.cloud/role": "project", "project.gardener.cloud/name": "dev", "team": "a",
		}}
	}

	t.Run("labelled namespace is adopted and kept after deletion", func(t *testing.T) {
		ns := labelled()
		require.NoError(t, AdoptNamespace(p, ns))
		assert.Equal(t, "a", ns.Labels["team"])
		assert.Equal(t, map[string]string{
			"namespace.gardener.cloud/project":                     "3f0a0ad4-uid",
			"namespace.gardener.cloud/keep-after-project-deletion": "true",
		}, ns.Annotations)
		require.Len(t, ns.OwnerReferences, 1)
		assert.Equal(t, "dev", ns.OwnerReferences[0].Name)
	})
	t.Run("namespace the controller created is not marked to be kept", func(t *testing.T) {
		ns := labelled()
		ns.Annotations = map[string]string{"namespace.gardener.cloud/created-by-project-controller": "true", "namespace.gardener.cloud/project": "3f0a0ad4-uid"}
		require.NoError(t, AdoptNamespace(p, ns))
		assert.NotContains(t, ns.Annotations, "namespace.gardener.cloud/keep-after-project-deletion")
	})
	t.Run("adopting twice changes nothing", func(t *testing.T) {
		ns := labelled()
		require.NoError(t, AdoptNamespace(p, ns))
		again := ns.DeepCopy()
		require.NoError(t, AdoptNamespace(p, again))
		assert.Equal(t, ns, again)
	})
	t.Run("other owners are kept", func(t *testing.T) {
		ns := labelled()
		ns.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "x", UID: "other"}}
		require.NoError(t, AdoptNamespace(p, ns))
		assert.Len(t, ns.OwnerReferences, 2)
	})

	refused := map[string]*metav1.ObjectMeta{
		"unlabelled":            {Name: "kube-system"},
		"role label only":       {Name: "x", Labels: map[string]string{"gardener.cloud/role": "project"}},
		"other project's label": {Name: "x", Labels: map[string]string{"gardener.cloud/role": "project", "project.gardener.cloud/name": "prod"}},
		"other role":            {Name: "x", Labels: map[string]string{"gardener.cloud/role": "seed", "project.gardener.cloud/name": "dev"}},
	}
	for name, ns := range refused {
		t.Run("refuses "+name, func(t *testing.T) {
			before := ns.DeepCopy()
			require.ErrorIs(t, AdoptNamespace(p, ns), ErrNamespaceNotLabelled)
			assert.Equal(t, before, ns, "a refused namespace is untouched")
		})
	}
	t.Run("refuses another project's namespace", func(t *testing.T) {
		ns := labelled()
		ns.Annotations = map[string]string{"namespace.gardener.cloud/project": "uid-of-an-earlier-dev"}
		before := ns.DeepCopy()
		require.ErrorIs(t, AdoptNamespace(p, ns), ErrNamespaceOfOtherProjects)
		assert.Equal(t, before, ns)
	})
}

func TestReleaseOf(t *testing.T) {
	p := newProject("dev")
	ours := func(annotations map[string]string) *metav1.ObjectMeta {
		return &metav1.ObjectMeta{Name: "garden-dev", Annotations: annotations,
			Labels: map[string]string{"gardener.cloud/role": "project", "project.gardener.cloud/name": "dev"}}
	}
	deleting := ours(nil)
	deleting.DeletionTimestamp = ptr.To(metav1.Now())

	assert.Equal(t, Released, ReleaseOf(p, nil), "gone")
	assert.Equal(t, Released, ReleaseOf(p, &metav1.ObjectMeta{Name: "kube-system"}), "not the project's")
	assert.Equal(t, Released, ReleaseOf(p, &metav1.ObjectMeta{Name: "x", Labels: map[string]string{"gardener.cloud/role": "project", "project.gardener.cloud/name": "prod"}}), "another project's")
	assert.Equal(t, ReleaseWhenGone, ReleaseOf(p, deleting))
	assert.Equal(t, ReleaseByDeleting, ReleaseOf(p, ours(nil)))
	assert.Equal(t, ReleaseByDeleting, ReleaseOf(p, ours(map[string]string{"namespace.gardener.cloud/keep-after-project-deletion": "false"})))
	assert.Equal(t, ReleaseByDeleting, ReleaseOf(p, ours(map[string]string{"namespace.gardener.cloud/keep-after-project-deletion": "yes please"})), "not a bool")
	assert.Equal(t, ReleaseByKeeping, ReleaseOf(p, ours(map[string]string{"namespace.gardener.cloud/keep-after-project-deletion": "true"})))
}

func TestStripProjectMetadata(t *testing.T) {
	p := newProject("dev")
	ns := &metav1.ObjectMeta{
		Labels: map[string]string{"gardener.cloud/role": "project", "project.gardener.cloud/name": "dev", "team": "a"},
		Annotations: map[string]string{
			"namespace.gardener.cloud/project":                       "3f0a0ad4-uid",
			"namespace.gardener.cloud/keep-after-project-deletion":   "true",
			"namespace.gardener.cloud/created-by-project-controller": "true",
			"note": "kept",
		},
		OwnerReferences: []metav1.OwnerReference{
			controllerRef(p),
			{APIVersion: "core.gardener.cloud/v1beta1", Kind: "Project", Name: "dev", UID: "an-earlier-dev"},
		},
	}
	StripProjectMetadata(p, ns)
	assert.Equal(t, map[string]string{"team": "a"}, ns.Labels)
	assert.Equal(t, map[string]string{"note": "kept"}, ns.Annotations)
	require.Len(t, ns.OwnerReferences, 1, "only this project's reference goes")
	assert.Equal(t, "an-earlier-dev", string(ns.OwnerReferences[0].UID))
}
