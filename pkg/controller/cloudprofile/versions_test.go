package cloudprofile

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/scheme"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) *metav1.Time { return &metav1.Time{Time: now.Add(d)} }

func TestClassification(t *testing.T) {
	const day = 24 * time.Hour
	for _, tc := range []struct {
		name    string
		version gardencorev1beta1.ExpirableVersion
		want    gardencorev1beta1.VersionClassification
	}{
		{name: "nothing set: supported", want: gardencorev1beta1.ClassificationSupported},
		{name: "legacy classification", version: gardencorev1beta1.ExpirableVersion{Classification: ptr.To(gardencorev1beta1.ClassificationPreview)}, want: gardencorev1beta1.ClassificationPreview},
		{name: "legacy expiration in the future: supported until then", version: gardencorev1beta1.ExpirableVersion{ExpirationDate: at(day)}, want: gardencorev1beta1.ClassificationSupported},
		{name: "legacy expiration passed", version: gardencorev1beta1.ExpirableVersion{ExpirationDate: at(-day), Classification: ptr.To(gardencorev1beta1.ClassificationDeprecated)}, want: gardencorev1beta1.ClassificationExpired},
		{name: "legacy expiration at this instant: not yet", version: gardencorev1beta1.ExpirableVersion{ExpirationDate: at(0), Classification: ptr.To(gardencorev1beta1.ClassificationDeprecated)}, want: gardencorev1beta1.ClassificationDeprecated},
		{name: "lifecycle: the last stage started", version: gardencorev1beta1.ExpirableVersion{Lifecycle: []gardencorev1beta1.LifecycleStage{
			{Classification: gardencorev1beta1.ClassificationPreview, StartTime: at(-2 * day)},
			{Classification: gardencorev1beta1.ClassificationSupported, StartTime: at(-day)},
			{Classification: gardencorev1beta1.ClassificationDeprecated, StartTime: at(day)},
		}}, want: gardencorev1beta1.ClassificationSupported},
		{name: "lifecycle: a first stage without start time has always started", version: gardencorev1beta1.ExpirableVersion{Lifecycle: []gardencorev1beta1.LifecycleStage{
			{Classification: gardencorev1beta1.ClassificationPreview},
			{Classification: gardencorev1beta1.ClassificationSupported, StartTime: at(day)},
		}}, want: gardencorev1beta1.ClassificationPreview},
		{name: "lifecycle: before the first stage, unavailable", version: gardencorev1beta1.ExpirableVersion{Lifecycle: []gardencorev1beta1.LifecycleStage{
			{Classification: gardencorev1beta1.ClassificationPreview, StartTime: at(day)},
		}}, want: gardencorev1beta1.ClassificationUnavailable},
		{name: "lifecycle wins over legacy fields", version: gardencorev1beta1.ExpirableVersion{
			ExpirationDate: at(-day),
			Lifecycle:      []gardencorev1beta1.LifecycleStage{{Classification: gardencorev1beta1.ClassificationSupported}},
		}, want: gardencorev1beta1.ClassificationSupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Classification(tc.version, now))
		})
	}
}

func profileSpec() gardencorev1beta1.CloudProfileSpec {
	var spec gardencorev1beta1.CloudProfileSpec
	spec.Kubernetes.Versions = []gardencorev1beta1.ExpirableVersion{
		{Version: "1.33.0", ExpirationDate: at(time.Hour)},
		{Version: "1.32.0", ExpirationDate: at(-time.Hour)},
	}
	spec.MachineImages = []gardencorev1beta1.MachineImage{{Name: "gardenlinux", Versions: []gardencorev1beta1.MachineImageVersion{
		{ExpirableVersion: gardencorev1beta1.ExpirableVersion{Version: "1.0", Classification: ptr.To(gardencorev1beta1.ClassificationPreview)}},
	}}}
	return spec
}

func TestVersionsStatus(t *testing.T) {
	assert.Equal(t, gardencorev1beta1.CloudProfileStatus{
		Kubernetes: &gardencorev1beta1.KubernetesStatus{Versions: []gardencorev1beta1.ExpirableVersionStatus{
			{Version: "1.33.0", Classification: gardencorev1beta1.ClassificationSupported},
			{Version: "1.32.0", Classification: gardencorev1beta1.ClassificationExpired},
		}},
		MachineImages: []gardencorev1beta1.MachineImageStatus{{Name: "gardenlinux", Versions: []gardencorev1beta1.ExpirableVersionStatus{
			{Version: "1.0", Classification: gardencorev1beta1.ClassificationPreview},
		}}},
	}, VersionsStatus(profileSpec(), now))

	assert.Equal(t, gardencorev1beta1.CloudProfileStatus{}, VersionsStatus(gardencorev1beta1.CloudProfileSpec{}, now), "no versions, no status lists")
}

func TestVersionsReconciler(t *testing.T) {
	ctx := context.Background()
	profile := &gardencorev1beta1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: "local"}, Spec: profileSpec()}
	c := fake.NewClientBuilder().WithScheme(scheme.Gardener).WithObjects(profile).WithStatusSubresource(profile).Build()
	clock := testclock.NewFakeClock(now)
	r := &VersionsReconciler{Writer: function.NewWriter(c), Clock: clock, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	req := function.Request{Key: client.ObjectKeyFromObject(profile), Reader: c, Trigger: function.ByEvent}

	require.NoError(t, r.Reconcile(ctx, req))
	require.NoError(t, c.Get(ctx, req.Key, profile))
	assert.Equal(t, gardencorev1beta1.ClassificationSupported, profile.Status.Kubernetes.Versions[0].Classification)
	rv := profile.ResourceVersion

	require.NoError(t, r.Reconcile(ctx, req))
	require.NoError(t, c.Get(ctx, req.Key, profile))
	assert.Equal(t, rv, profile.ResourceVersion, "nothing changed, nothing written")

	clock.Step(2 * time.Hour)
	require.NoError(t, r.Reconcile(ctx, req))
	require.NoError(t, c.Get(ctx, req.Key, profile))
	assert.Equal(t, gardencorev1beta1.ClassificationExpired, profile.Status.Kubernetes.Versions[0].Classification, "time passed: expired")

	require.NoError(t, r.Reconcile(ctx, function.Request{Key: client.ObjectKey{Name: "gone"}, Reader: c}), "a CloudProfile that is gone has no status")
}

func TestVersionsPredicate(t *testing.T) {
	assert.False(t, VersionsPredicate(function.Event{Deleted: true}))
	assert.True(t, VersionsPredicate(function.Event{}))
}
