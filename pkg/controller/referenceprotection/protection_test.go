package referenceprotection

import (
	"context"
	"fmt"
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
	"github.com/gardener-knative/gardener-knative/pkg/scheme"
)

const finalizer = "test.gardener.cloud/protection"

// exposureClassProtection is a protection of ExposureClasses by Shoots, for the mechanism's tests.
func exposureClassProtection() *Protection {
	return &Protection{
		FunctionName: "test",
		Kind:         kinds.ExposureClass,
		Finalizer:    finalizer,
		Referrers: []Referrer{{
			Kind: kinds.Shoot,
			References: Typed(func(s *gardencorev1beta1.Shoot) []function.Key {
				if s.Spec.ExposureClassName == nil {
					return nil
				}
				// Named twice on purpose: a reference counts once.
				return []function.Key{{Name: *s.Spec.ExposureClassName}, {Name: *s.Spec.ExposureClassName}}
			}),
			ReferenceMayHaveChanged: ShootSpecUnobserved,
		}},
		Blocked: func(key function.Key, referencing []Referencing) string {
			return fmt.Sprintf("%s is used by %v", key.Name, NamesOf(referencing, "Shoot"))
		},
		RecordEvent: true,
		Schedule:    "0 * * * *",
	}
}

// namespacedProtection protects namespaced NamespacedCloudProfiles from Shoots of their namespace.
func namespacedProtection() *Protection {
	return &Protection{
		FunctionName: "test-namespaced",
		Kind:         kinds.NamespacedCloudProfile,
		Finalizer:    finalizer,
		Referrers: []Referrer{{
			Kind:          kinds.Shoot,
			SameNamespace: true,
			References: Typed(func(s *gardencorev1beta1.Shoot) []function.Key {
				if s.Spec.CloudProfile == nil {
					return nil
				}
				return []function.Key{{Namespace: s.Namespace, Name: s.Spec.CloudProfile.Name}}
			}),
		}},
		Blocked:  func(function.Key, []Referencing) string { return "blocked" },
		Schedule: "0 * * * *",
	}
}

func objectMeta(deleting bool, finalizers ...string) *metav1.ObjectMeta {
	m := &metav1.ObjectMeta{Name: "x", Finalizers: finalizers}
	if deleting {
		m.DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	}
	return m
}

func TestFinalizerStates(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		obj                    *metav1.ObjectMeta
		needsFinalizer, awaits bool
	}{
		{name: "new object", obj: objectMeta(false), needsFinalizer: true},
		{name: "other finalizers only", obj: objectMeta(false, "other"), needsFinalizer: true},
		{name: "protected", obj: objectMeta(false, "other", finalizer)},
		{name: "deleting, protected", obj: objectMeta(true, finalizer), awaits: true},
		{name: "deleting, released, other finalizers left", obj: objectMeta(true, "other")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.needsFinalizer, NeedsFinalizer(tc.obj, finalizer))
			assert.Equal(t, tc.awaits, AwaitsRelease(tc.obj, finalizer))
		})
	}
}

func event(t *testing.T, obj client.Object, deleted bool) function.Event {
	t.Helper()
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	require.NoError(t, err)
	u := &unstructured.Unstructured{Object: content}
	gvk, err := apiutil.GVKForObject(obj, scheme.Gardener)
	require.NoError(t, err)
	u.SetGroupVersionKind(gvk)
	return function.Event{Cluster: function.Source, Kind: gvk, Key: client.ObjectKeyFromObject(obj), Deleted: deleted, Object: u}
}

func exposureClass(deleting bool, finalizers ...string) *gardencorev1beta1.ExposureClass {
	return &gardencorev1beta1.ExposureClass{ObjectMeta: *objectMeta(deleting, finalizers...)}
}

func TestProtectedPredicate(t *testing.T) {
	p := exposureClassProtection()
	assert.True(t, p.ProtectedPredicate(event(t, exposureClass(false), false)), "a finalizer to add")
	assert.True(t, p.ProtectedPredicate(event(t, exposureClass(true, finalizer), false)), "a deletion to decide")
	assert.False(t, p.ProtectedPredicate(event(t, exposureClass(false, finalizer), false)), "protected already (e.g. the function's own patch)")
	assert.False(t, p.ProtectedPredicate(event(t, exposureClass(true, "other"), false)), "released already")
	assert.False(t, p.ProtectedPredicate(event(t, exposureClass(true, finalizer), true)), "gone")
	assert.True(t, p.ProtectedPredicate(function.Event{Key: function.Key{Name: "x"}}), "a reference-mode event says nothing: read")
}

func shoot(namespace, name string, generation, observed int64, exposureClass string) *gardencorev1beta1.Shoot {
	s := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Generation: generation}}
	s.Status.ObservedGeneration = observed
	if exposureClass != "" {
		s.Spec.ExposureClassName = ptr.To(exposureClass)
	}
	return s
}

func TestShootSpecUnobserved(t *testing.T) {
	assert.True(t, ShootSpecUnobserved(event(t, shoot("ns", "s", 2, 1, ""), false)), "spec changed, gardenlet not there yet")
	assert.False(t, ShootSpecUnobserved(event(t, shoot("ns", "s", 2, 2, ""), false)), "status-only update")
	assert.True(t, ShootSpecUnobserved(function.Event{}), "a reference-mode event says nothing")
}

func TestReferrerPredicate(t *testing.T) {
	mutable := exposureClassProtection().Referrers[0]
	assert.True(t, mutable.mayRelease(event(t, shoot("ns", "s", 1, 1, "a"), true)), "deletion")
	assert.True(t, mutable.mayRelease(event(t, shoot("ns", "s", 2, 1, "a"), false)), "spec change")
	assert.False(t, mutable.mayRelease(event(t, shoot("ns", "s", 2, 2, "a"), false)), "status-only update")

	immutable := namespacedProtection().Referrers[0]
	assert.True(t, immutable.mayRelease(event(t, shoot("ns", "s", 1, 1, "a"), true)), "deletion")
	assert.False(t, immutable.mayRelease(event(t, shoot("ns", "s", 2, 1, "a"), false)), "an immutable reference cannot change")
}

func TestFunctionDeclaration(t *testing.T) {
	p := exposureClassProtection()
	fn := p.Function()
	require.NoError(t, fn.Validate())

	assert.Equal(t, []rbacv1.PolicyRule{
		{APIGroups: []string{"core.gardener.cloud"}, Resources: []string{"exposureclasses"}, Verbs: []string{"get", "list", "patch"}},
		{APIGroups: []string{"core.gardener.cloud"}, Resources: []string{"shoots"}, Verbs: []string{"list"}},
		function.EventsRBAC,
	}, fn.RBAC)
	assert.NotContains(t, namespacedProtection().Function().RBAC, function.EventsRBAC,
		"no Events, no right to create them")

	require.Len(t, fn.Sweeps, 1)
	sweep := fn.Sweeps[0]
	assert.Equal(t, ResyncSweep, sweep.Name)
	assert.True(t, sweep.Primary.MetadataOnly, "the decision needs metadata only")
	require.Len(t, sweep.Related, 1)
	assert.Equal(t, kinds.Shoot, sweep.Related[0].Kind)
	assert.False(t, sweep.Related[0].MetadataOnly, "references are in the spec")
	index := sweep.Related[0].Indexes[ReferencesIndex]
	require.NotNil(t, index)
	assert.Equal(t, []string{"/ec"}, index(shoot("ns", "s", 1, 1, "ec")), "each reference once, by Key.String()")
	assert.Empty(t, index(shoot("ns", "s", 1, 1, "")))

	var watched []string
	for _, w := range fn.Watches {
		watched = append(watched, w.Kind.Kind)
	}
	assert.Equal(t, []string{"ExposureClass", "Shoot"}, watched)
}

func TestReferrerMapper(t *testing.T) {
	ctx := context.Background()
	p := exposureClassProtection()
	blocked := exposureClass(true, finalizer)
	blocked.Name = "blocked"
	free := exposureClass(false, finalizer)
	free.Name = "free"
	c := fake.NewClientBuilder().WithScheme(scheme.Gardener).WithObjects(blocked, free).Build()
	mapper := p.referrerMapper(p.Referrers[0])

	keys, err := mapper(ctx, c, event(t, shoot("ns", "s", 1, 1, "ec"), true))
	require.NoError(t, err)
	assert.Equal(t, []function.Key{{Name: "ec"}}, keys, "a deleted referrer: what it referenced, once, without reading anything")

	keys, err = mapper(ctx, c, event(t, shoot("ns", "s", 2, 1, "ec"), false))
	require.NoError(t, err)
	assert.Equal(t, []function.Key{{Name: "blocked"}}, keys, "a changed referrer: every blocked deletion")

	np := namespacedProtection()
	mine := &gardencorev1beta1.NamespacedCloudProfile{ObjectMeta: *objectMeta(true, finalizer)}
	mine.Namespace, mine.Name = "ns", "mine"
	theirs := mine.DeepCopy()
	theirs.Namespace = "other"
	c = fake.NewClientBuilder().WithScheme(scheme.Gardener).WithObjects(mine, theirs).Build()
	keys, err = np.referrerMapper(np.Referrers[0])(ctx, c, function.Event{Key: function.Key{Namespace: "ns", Name: "s"}})
	require.NoError(t, err)
	assert.Equal(t, []function.Key{{Namespace: "ns", Name: "mine"}}, keys, "a same-namespace referrer: its namespace only")
}
