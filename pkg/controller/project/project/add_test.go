package project

import (
	"context"
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/scheme"
)

func event(t *testing.T, obj client.Object, deleted bool) function.Event {
	t.Helper()
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	require.NoError(t, err)
	return function.Event{Cluster: function.Source, Key: client.ObjectKeyFromObject(obj), Deleted: deleted, Object: &unstructured.Unstructured{Object: content}}
}

func TestProjectPredicate(t *testing.T) {
	p := func(generation, observed int64, phase gardencorev1beta1.ProjectPhase) *gardencorev1beta1.Project {
		project := newProject("dev")
		project.Generation = generation
		project.Status.ObservedGeneration = observed
		project.Status.Phase = phase
		return project
	}
	assert.True(t, ProjectPredicate(event(t, p(1, 0, ""), false)), "new project")
	assert.True(t, ProjectPredicate(event(t, p(2, 1, "Ready"), false)), "spec changed")
	assert.True(t, ProjectPredicate(event(t, p(1, 1, ""), false)), "no phase yet")
	assert.False(t, ProjectPredicate(event(t, p(2, 2, "Ready"), false)), "status update of a reconciled project")
	assert.False(t, ProjectPredicate(event(t, p(2, 2, "Failed"), false)), "failed at this generation: the sweep retries")
	assert.False(t, ProjectPredicate(event(t, p(2, 1, "Ready"), true)), "gone")

	deleting := p(3, 2, "Ready")
	deleting.DeletionTimestamp = ptr.To(metav1.Now())
	deleting.Finalizers = []string{"gardener"}
	assert.True(t, ProjectPredicate(event(t, deleting, false)), "deletion bumps the generation")
	released := deleting.DeepCopy()
	released.Finalizers = nil
	assert.False(t, ProjectPredicate(event(t, released, false)), "finalizer removed: past this reconciler")

	assert.True(t, ProjectPredicate(function.Event{Key: function.Key{Name: "dev"}}), "reference-mode events carry no object")
}

func ownedNamespace(project *gardencorev1beta1.Project) *corev1.Namespace {
	return NewNamespace(project, "garden-dev")
}

func TestNamespaceWatch(t *testing.T) {
	ns := ownedNamespace(newProject("dev"))
	assert.True(t, NamespacePredicate(event(t, ns, true)))
	assert.False(t, NamespacePredicate(event(t, ns, false)), "only deletions")
	assert.False(t, NamespacePredicate(event(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system"}}, true)))

	foreign := ns.DeepCopy()
	foreign.OwnerReferences[0].APIVersion = "example.com/v1"
	assert.False(t, NamespacePredicate(event(t, foreign, true)), "a Project of another API group")

	keys, err := MapToControllingProject(context.Background(), nil, event(t, ns, true))
	require.NoError(t, err)
	assert.Equal(t, []function.Key{{Name: "dev"}}, keys)
}

func fakeReader(objs ...client.Object) client.Reader {
	return fake.NewClientBuilder().WithScheme(scheme.Gardener).WithObjects(objs...).Build()
}

func TestRoleBindingWatch(t *testing.T) {
	ctx := context.Background()
	p := projectWithMembers()
	rbac := DesiredRBAC(p)
	desired := roleBinding(t, rbac, MemberRoleBinding)
	reader := fakeReader(p)
	mapped := func(rb *rbacv1.RoleBinding, deleted bool) []function.Key {
		t.Helper()
		ev := event(t, rb, deleted)
		if !RoleBindingPredicate(ev) {
			return nil
		}
		keys, err := MapRoleBindingToProject(ctx, reader, ev)
		require.NoError(t, err)
		return keys
	}
	dev := []function.Key{{Name: "dev"}}

	assert.Nil(t, mapped(&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: "garden-dev"}}, false), "not a project's")
	assert.Nil(t, mapped(desired.DeepCopy(), false), "as desired: its own write coming back")
	assert.Equal(t, dev, mapped(desired.DeepCopy(), true), "a desired binding deleted")

	tampered := desired.DeepCopy()
	tampered.Subjects = append(tampered.Subjects, user("mallory"))
	assert.Equal(t, dev, mapped(tampered, false))

	logging := roleBinding(t, rbac, "gardener.cloud:extension:project:dev:logging")
	stale := logging.DeepCopy()
	stale.Name = "gardener.cloud:extension:project:dev:billing"
	assert.Equal(t, dev, mapped(stale, false), "an extension role no member has any more")
	assert.Nil(t, mapped(stale, true), "and its deletion is what the reconciler wanted")

	elsewhere := desired.DeepCopy()
	elsewhere.Namespace = "garden-other"
	assert.Nil(t, mapped(elsewhere, false), "not in the project's namespace")

	deleting := p.DeepCopy()
	deleting.DeletionTimestamp = ptr.To(metav1.Now())
	deleting.Finalizers = []string{"gardener"}
	reader = fakeReader(deleting)
	assert.Nil(t, mapped(desired.DeepCopy(), true), "a deleted project's bindings go with its namespace")

	reader = fakeReader()
	assert.Nil(t, mapped(desired.DeepCopy(), true), "project gone")
}

// MapShootToProjectInDeletion lists projects by a field selector on a metadata-only list, which
// the fake client cannot index: test/integration/project covers it against a real API server.
func TestShootPredicate(t *testing.T) {
	shoot := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "garden-dev"}}
	assert.True(t, ShootPredicate(event(t, shoot, true)))
	assert.False(t, ShootPredicate(event(t, shoot, false)))
}
