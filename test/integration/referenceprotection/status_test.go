package referenceprotection_test

import (
	"context"
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gardener-knative/gardener-knative/pkg/controller/cloudprofile"
	"github.com/gardener-knative/gardener-knative/pkg/controller/namespacedcloudprofile"
)

func TestNamespacedCloudProfileStatus(t *testing.T) {
	ctx := context.Background()
	h := serve(t, namespacedcloudprofile.Function)
	ns := namespace(t)
	expiry := metav1.NewTime(time.Now().Add(30 * 24 * time.Hour).Truncate(time.Second).UTC())

	parent := &gardencorev1beta1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: unique("parent")}}
	parent.Spec.Type = "local"
	parent.Spec.Kubernetes.Versions = []gardencorev1beta1.ExpirableVersion{{Version: "1.33.0"}, {Version: "1.32.0"}}
	parent.Spec.MachineImages = []gardencorev1beta1.MachineImage{{Name: "gardenlinux", Versions: []gardencorev1beta1.MachineImageVersion{
		{ExpirableVersion: gardencorev1beta1.ExpirableVersion{Version: "1.0"}, Architectures: []string{"amd64"}},
	}}}
	createWithStatus(t, parent)
	profile := newNamespacedCloudProfile(ns, parent.Name)
	profile.Spec.Kubernetes = &gardencorev1beta1.KubernetesSettings{Versions: []gardencorev1beta1.ExpirableVersion{{Version: "1.32.0", ExpirationDate: &expiry}}}
	profile.Spec.MachineImages = []gardencorev1beta1.MachineImage{{Name: "custom", Versions: []gardencorev1beta1.MachineImageVersion{
		{ExpirableVersion: gardencorev1beta1.ExpirableVersion{Version: "0.1"}, Architectures: []string{"arm64"}},
	}}}
	createWithStatus(t, profile)

	t.Run("the profile's add event merges its parent into the status", func(t *testing.T) {
		h.ResetRequests()
		h.Send("add", profile)
		assert.Equal(t, 3, h.Requests("get"), "protection: the profile's metadata; status: the profile and its parent")
		assert.Equal(t, 2, h.Requests("patch"), "the finalizer, the status")
		got := reread(t, profile)
		assert.Equal(t, got.Generation, got.Status.ObservedGeneration)
		assert.Equal(t, "local", got.Status.CloudProfileSpec.Type)
		require.Len(t, got.Status.CloudProfileSpec.Kubernetes.Versions, 2)
		assert.True(t, expiry.Equal(got.Status.CloudProfileSpec.Kubernetes.Versions[1].ExpirationDate))
		require.Len(t, got.Status.CloudProfileSpec.MachineImages, 2)
		assert.Equal(t, "custom", got.Status.CloudProfileSpec.MachineImages[1].Name)
		assert.Contains(t, got.Finalizers, "gardener")
	})

	t.Run("its own status write comes back as an event that costs nothing", func(t *testing.T) {
		h.ResetRequests()
		h.Send("update", reread(t, profile))
		assert.Zero(t, h.Requests(""))
	})

	t.Run("a change of the parent reaches the status through the parent's event", func(t *testing.T) {
		p := reread(t, parent)
		p.Spec.Kubernetes.Versions = append(p.Spec.Kubernetes.Versions, gardencorev1beta1.ExpirableVersion{Version: "1.34.0"})
		require.NoError(t, env.Client.Update(ctx, p))
		h.ResetRequests()
		h.Send("update", p)
		assert.Len(t, reread(t, profile).Status.CloudProfileSpec.Kubernetes.Versions, 3)
		assert.Equal(t, 1, h.Requests("list"), "all NamespacedCloudProfiles, filtered by parent")
		assert.Equal(t, 2, h.Requests("get"), "the child and its parent")
		assert.Equal(t, 1, h.Requests("patch"))
	})

	t.Run("a spec change whose event was dropped is repaired by the sweep", func(t *testing.T) {
		p := reread(t, profile)
		p.Spec.MachineImages = nil
		require.NoError(t, env.Client.Update(ctx, p))
		h.Sweep(namespacedcloudprofile.StatusResyncName)
		got := reread(t, profile)
		assert.Equal(t, got.Generation, got.Status.ObservedGeneration)
		assert.Len(t, got.Status.CloudProfileSpec.MachineImages, 1)

		rv := got.ResourceVersion
		h.Sweep(namespacedcloudprofile.StatusResyncName)
		assert.Equal(t, rv, reread(t, profile).ResourceVersion, "a current status is not written again")
	})
}

func TestCloudProfileVersions(t *testing.T) {
	h := serve(t, cloudprofile.Function)
	profile := &gardencorev1beta1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: unique("versions")}}
	expires := metav1.NewTime(h.Clock.Now().Add(time.Hour).Truncate(time.Second))
	profile.Spec.Kubernetes.Versions = []gardencorev1beta1.ExpirableVersion{{Version: "1.33.0"}, {Version: "1.32.0", ExpirationDate: &expires}}
	createWithStatus(t, profile)

	h.ResetRequests()
	h.Send("add", profile)
	assert.Equal(t, 2, h.Requests("get"), "protection (metadata) and versions")
	assert.Equal(t, 2, h.Requests("patch"), "the finalizer, the status")
	got := reread(t, profile)
	require.NotNil(t, got.Status.Kubernetes)
	assert.Equal(t, []gardencorev1beta1.ExpirableVersionStatus{
		{Version: "1.33.0", Classification: gardencorev1beta1.ClassificationSupported},
		{Version: "1.32.0", Classification: gardencorev1beta1.ClassificationSupported},
	}, got.Status.Kubernetes.Versions)

	h.Clock.Step(2 * time.Hour)
	h.Sweep(cloudprofile.VersionsReconcilerName)
	assert.Equal(t, gardencorev1beta1.ClassificationExpired, reread(t, profile).Status.Kubernetes.Versions[1].Classification,
		"time passed without an event: the versions sweep finds the transition")
}
