package namespacedcloudprofile

import (
	"context"
	"io"
	"log/slog"
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/scheme"
)

func TestFunctionIsValid(t *testing.T) {
	require.NoError(t, Function.Validate())
}

func TestShootReferences(t *testing.T) {
	s := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Namespace: "garden-dev", Name: "s"}}
	assert.Empty(t, ShootReferences(s))
	s.Spec.CloudProfile = &gardencorev1beta1.CloudProfileReference{Kind: "CloudProfile", Name: "custom"}
	assert.Empty(t, ShootReferences(s), "a CloudProfile of the same name is another object")
	s.Spec.CloudProfile.Kind = "NamespacedCloudProfile"
	assert.Equal(t, []function.Key{{Namespace: "garden-dev", Name: "custom"}}, ShootReferences(s), "in the Shoot's namespace")
}

func profileEvent(generation, observed int64, deleting, deleted bool) function.Event {
	u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"observedGeneration": observed}}}
	u.SetGeneration(generation)
	if deleting {
		u.SetDeletionTimestamp(&expiry)
	}
	return function.Event{Deleted: deleted, Object: u}
}

func TestGenerationUnobserved(t *testing.T) {
	assert.True(t, GenerationUnobserved(profileEvent(1, 0, false, false)), "new")
	assert.True(t, GenerationUnobserved(profileEvent(3, 2, false, false)), "spec changed")
	assert.False(t, GenerationUnobserved(profileEvent(3, 3, false, false)), "merged already (e.g. the function's own status write)")
	assert.False(t, GenerationUnobserved(profileEvent(3, 2, true, false)), "being deleted: the status stays")
	assert.False(t, GenerationUnobserved(profileEvent(3, 2, false, true)), "gone")
	assert.True(t, GenerationUnobserved(function.Event{}), "a reference-mode event says nothing")
}

func TestStatusStale(t *testing.T) {
	parent := parentProfile()
	profile := namespaced(gardencorev1beta1.NamespacedCloudProfileSpec{})
	profile.Generation = 2
	merged := MergedSpec(profile, parent)
	profile.Status.CloudProfileSpec = *merged.DeepCopy()
	profile.Status.ObservedGeneration = 2

	stale := func(p *gardencorev1beta1.NamespacedCloudProfile) bool {
		t.Helper()
		s, err := StatusStale(p, MergedSpec(p, parent))
		require.NoError(t, err)
		return s
	}
	assert.False(t, stale(profile), "current")

	p := profile.DeepCopy()
	p.Generation = 3
	assert.True(t, stale(p), "a generation not merged yet")

	p = profile.DeepCopy()
	p.Status.CloudProfileSpec.MachineTypes = nil
	assert.True(t, stale(p), "status differs")

	p = profile.DeepCopy()
	p.Status.CloudProfileSpec.Kubernetes.Versions = append([]gardencorev1beta1.ExpirableVersion{}, p.Status.CloudProfileSpec.Kubernetes.Versions...)
	p.Status.CloudProfileSpec.MachineImages[0].Versions[0].CRI = append([]gardencorev1beta1.CRI{}, p.Status.CloudProfileSpec.MachineImages[0].Versions[0].CRI...)
	assert.False(t, stale(p), "differently built but serialized alike")

	p = profile.DeepCopy()
	p.Status.CloudProfileSpec.ProviderConfig = &runtime.RawExtension{Raw: []byte(`{"parent":true,"mergedByTheExtension":true}`)}
	assert.True(t, stale(p), "no namespaced providerConfig: the status must carry the parent's")
	p.Spec.ProviderConfig = &runtime.RawExtension{Raw: []byte(`{"mergedByTheExtension":true}`)}
	assert.False(t, stale(p), "a namespaced providerConfig: the extension's merge in the status is left alone")
}

func newStatusReconciler(c client.Client, onlyIfStale bool) *StatusReconciler {
	return &StatusReconciler{Writer: function.NewWriter(c), Log: slog.New(slog.NewTextHandler(io.Discard, nil)), OnlyIfStale: onlyIfStale}
}

func TestStatusReconciler(t *testing.T) {
	ctx := context.Background()
	parent := parentProfile()
	profile := namespaced(gardencorev1beta1.NamespacedCloudProfileSpec{Kubernetes: &gardencorev1beta1.KubernetesSettings{Versions: []gardencorev1beta1.ExpirableVersion{{Version: "1.33.0", ExpirationDate: &laterExpiry}}}})
	profile.Generation = 4
	c := fake.NewClientBuilder().WithScheme(scheme.Gardener).WithObjects(parent, profile).WithStatusSubresource(profile).Build()
	req := function.Request{Key: client.ObjectKeyFromObject(profile), Reader: c, Trigger: function.ByEvent}

	require.NoError(t, newStatusReconciler(c, false).Reconcile(ctx, req))
	got := &gardencorev1beta1.NamespacedCloudProfile{}
	require.NoError(t, c.Get(ctx, req.Key, got))
	assert.Equal(t, int64(4), got.Status.ObservedGeneration)
	assert.True(t, laterExpiry.Equal(got.Status.CloudProfileSpec.Kubernetes.Versions[0].ExpirationDate))
	assert.Equal(t, "local", got.Status.CloudProfileSpec.Type)

	t.Run("the sweep leaves a providerConfig merged by the extension alone", func(t *testing.T) {
		got.Spec.ProviderConfig = &runtime.RawExtension{Raw: []byte(`{"namespaced":true}`)}
		require.NoError(t, c.Update(ctx, got))
		got.Status.CloudProfileSpec.ProviderConfig = &runtime.RawExtension{Raw: []byte(`{"merged":true}`)}
		require.NoError(t, c.Status().Update(ctx, got))
		require.NoError(t, c.Get(ctx, req.Key, got))
		rv := got.ResourceVersion

		require.NoError(t, newStatusReconciler(c, true).Reconcile(ctx, function.Request{Key: req.Key, Reader: c, Trigger: function.BySweep}))
		require.NoError(t, c.Get(ctx, req.Key, got))
		assert.Equal(t, rv, got.ResourceVersion)

		require.NoError(t, newStatusReconciler(c, false).Reconcile(ctx, req))
		require.NoError(t, c.Get(ctx, req.Key, got))
		assert.Equal(t, `{"parent":true}`, string(got.Status.CloudProfileSpec.ProviderConfig.Raw), "an event writes the parent's, as Gardener does, for the extension to merge again")
	})

	t.Run("no parent: left alone", func(t *testing.T) {
		orphan := namespaced(gardencorev1beta1.NamespacedCloudProfileSpec{})
		orphan.Name = "orphan"
		orphan.Spec.Parent.Name = "missing"
		require.NoError(t, c.Create(ctx, orphan))
		require.NoError(t, newStatusReconciler(c, false).Reconcile(ctx, function.Request{Key: client.ObjectKeyFromObject(orphan), Reader: c}))
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(orphan), orphan))
		assert.Zero(t, orphan.Status.ObservedGeneration)
	})

	t.Run("being deleted: the status stays", func(t *testing.T) {
		deleting := namespaced(gardencorev1beta1.NamespacedCloudProfileSpec{CABundle: ptr.To("x")})
		deleting.Name, deleting.Finalizers = "deleting", []string{"gardener"}
		require.NoError(t, c.Create(ctx, deleting))
		require.NoError(t, c.Delete(ctx, deleting))
		require.NoError(t, newStatusReconciler(c, false).Reconcile(ctx, function.Request{Key: client.ObjectKeyFromObject(deleting), Reader: c}))
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(deleting), deleting))
		assert.Nil(t, deleting.Status.CloudProfileSpec.CABundle)
	})
}

func TestMapCloudProfileToNamespacedCloudProfiles(t *testing.T) {
	child := namespaced(gardencorev1beta1.NamespacedCloudProfileSpec{})
	other := namespaced(gardencorev1beta1.NamespacedCloudProfileSpec{})
	other.Namespace, other.Spec.Parent.Name = "garden-other", "another-parent"
	c := fake.NewClientBuilder().WithScheme(scheme.Gardener).WithObjects(child, other).Build()
	keys, err := MapCloudProfileToNamespacedCloudProfiles(context.Background(), c, function.Event{Key: function.Key{Name: "parent"}})
	require.NoError(t, err)
	assert.Equal(t, []function.Key{client.ObjectKeyFromObject(child)}, keys)
}
