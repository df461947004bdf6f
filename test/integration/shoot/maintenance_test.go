package shoot_test

import (
	"context"
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gardener-knative/gardener-knative/pkg/controller/shoot/maintenance"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
)

// The maintenance tests run on a fake day in 2030, so that the Shoots created now are long
// created and CloudProfile expirations can be placed around it.
var maintenanceDay = time.Date(2030, time.June, 3, 0, 0, 0, 0, time.UTC)

func onDay(day, hour, minute int) time.Time {
	return maintenanceDay.AddDate(0, 0, day).Add(time.Duration(hour)*time.Hour + time.Duration(minute)*time.Minute)
}

func k8sVersion(v string, expiresAt *time.Time, classification ...gardencorev1beta1.VersionClassification) gardencorev1beta1.ExpirableVersion {
	version := gardencorev1beta1.ExpirableVersion{Version: v}
	if expiresAt != nil {
		version.ExpirationDate = &metav1.Time{Time: *expiresAt}
	}
	if len(classification) > 0 {
		version.Classification = &classification[0]
	}
	return version
}

func machineImageVersion(v gardencorev1beta1.ExpirableVersion) gardencorev1beta1.MachineImageVersion {
	return gardencorev1beta1.MachineImageVersion{ExpirableVersion: v, Architectures: []string{"amd64"}, CRI: []gardencorev1beta1.CRI{{Name: gardencorev1beta1.CRINameContainerD}}}
}

// profileSpec offers Kubernetes 1.30.1 and 1.30.5 (1.30.6 in preview, 1.29.9 expired) and
// gardenlinux 1592.1.0 (expired) and 1592.2.0, updated by patch.
func profileSpec() gardencorev1beta1.CloudProfileSpec {
	expiredLongAgo := maintenanceDay.AddDate(0, -1, 0)
	return gardencorev1beta1.CloudProfileSpec{
		Type: "local",
		Kubernetes: gardencorev1beta1.KubernetesSettings{Versions: []gardencorev1beta1.ExpirableVersion{
			k8sVersion("1.29.9", &expiredLongAgo), k8sVersion("1.30.1", nil), k8sVersion("1.30.5", nil), k8sVersion("1.30.6", nil, gardencorev1beta1.ClassificationPreview),
		}},
		MachineTypes: []gardencorev1beta1.MachineType{{Name: "m5.large"}},
		MachineImages: []gardencorev1beta1.MachineImage{{
			Name: "gardenlinux", UpdateStrategy: ptr.To(gardencorev1beta1.UpdateStrategyPatch),
			Versions: []gardencorev1beta1.MachineImageVersion{machineImageVersion(k8sVersion("1592.1.0", &expiredLongAgo)), machineImageVersion(k8sVersion("1592.2.0", nil))},
		}},
		Regions: []gardencorev1beta1.Region{{Name: "local"}},
	}
}

// cloudProfile creates a CloudProfile named after the fixture's namespace.
func (f *fixture) cloudProfile(t testing.TB, spec gardencorev1beta1.CloudProfileSpec) *gardencorev1beta1.CloudProfile {
	t.Helper()
	p := &gardencorev1beta1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: f.ns}, Spec: spec}
	require.NoError(t, env.Client.Create(context.Background(), p))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), p) })
	return p
}

// maintainedShoot creates a Shoot with one worker pool, auto-updates on, the given window
// (none if begin is empty) and a succeeded last operation.
func (f *fixture) maintainedShoot(t testing.TB, name, version, image, begin, end string, shape ...func(*gardencorev1beta1.Shoot)) *gardencorev1beta1.Shoot {
	t.Helper()
	s := f.shootWithSpec(t, name, func(s *gardencorev1beta1.Shoot) {
		s.Spec.CloudProfileName = ptr.To(f.ns)
		s.Spec.Kubernetes.Version = version
		s.Spec.Provider.Workers = []gardencorev1beta1.Worker{{Name: "pool", Machine: gardencorev1beta1.Machine{
			Type: "m5.large", Image: &gardencorev1beta1.ShootMachineImage{Name: "gardenlinux", Version: ptr.To(image)},
		}}}
		s.Spec.Maintenance = &gardencorev1beta1.Maintenance{AutoUpdate: &gardencorev1beta1.MaintenanceAutoUpdate{KubernetesVersion: true, MachineImageVersion: ptr.To(true)}}
		if begin != "" {
			s.Spec.Maintenance.TimeWindow = &gardencorev1beta1.MaintenanceTimeWindow{Begin: begin, End: end}
		}
		for _, sh := range shape {
			sh(s)
		}
	})
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), s.DeepCopy()) })
	return writeShootStatus(t, s, func(s *gardencorev1beta1.ShootStatus) {
		s.LastOperation = lastOperation(gardencorev1beta1.LastOperationTypeReconcile, gardencorev1beta1.LastOperationStateSucceeded)
	})
}

func versionsOf(t testing.TB, s *gardencorev1beta1.Shoot) (string, string) {
	t.Helper()
	s = fresh(t, s)
	return s.Spec.Kubernetes.Version, *s.Spec.Provider.Workers[0].Machine.Image.Version
}

func TestMaintenanceUpdatesVersionsOncePerWindow(t *testing.T) {
	f := newFixture(t, functiontest.AsFunction(), functiontest.At(onDay(0, 21, 59)))
	profile := f.cloudProfile(t, profileSpec())
	s := f.maintainedShoot(t, "auto", "1.30.1", "1592.1.0", "220000+0000", "230000+0000")

	writes := f.Measure(func() { f.Sweep(maintenance.Name) })
	assert.Zero(t, writes["patch"], "before the window")

	// Late in the window every Shoot's start point has passed.
	f.Clock.SetTime(onDay(0, 22, 44))
	f.Sweep(maintenance.Name)
	k8s, image := versionsOf(t, s)
	assert.Equal(t, "1.30.5", k8s, "the latest patch; never the preview")
	assert.Equal(t, "1592.2.0", image, "away from the expired image")
	s = fresh(t, s)
	assert.Equal(t, "reconcile", s.Annotations[v1beta1constants.GardenerOperation])
	assert.Equal(t, "deployInfrastructure,deployDNSRecordInternal,deployDNSRecordExternal,deployDNSRecordIngress,restartControlPlanePods", s.Annotations[v1beta1constants.ShootTasks])
	assert.Equal(t, onDay(0, 22, 44).Format(time.RFC3339), s.Annotations[maintenance.MaintainedAtAnnotation])
	require.NotNil(t, s.Status.LastMaintenance)
	assert.Equal(t, gardencorev1beta1.LastOperationStateSucceeded, s.Status.LastMaintenance.State)
	assert.Equal(t, onDay(0, 22, 44), s.Status.LastMaintenance.TriggeredTime.UTC())
	assert.Equal(t, `All maintenance operations successful. Control Plane: Updated Kubernetes version from "1.30.1" to "1.30.5". Reason: Automatic update of Kubernetes version configured, `+
		`Worker pool "pool": Updated machine image "gardenlinux" from "1592.1.0" to "1592.2.0". Reason: Machine image version expired - force update required (image update strategy: patch)`,
		s.Status.LastMaintenance.Description)
	assert.Nil(t, s.Status.LastMaintenance.FailureReason)
	assert.Equal(t, map[string]int32{
		`KubernetesVersionMaintenance: Control Plane: Updated Kubernetes version from "1.30.1" to "1.30.5". Reason: Automatic update of Kubernetes version configured.`:                                                        1,
		`MachineImageVersionMaintenance: Worker pool "pool": Updated machine image "gardenlinux" from "1592.1.0" to "1592.2.0". Reason: Machine image version expired - force update required (image update strategy: patch).`: 1,
	}, events(t, s))

	// gardenlet takes the operation; a new patch version appears. The rest of the window does
	// not maintain again.
	s.Annotations[v1beta1constants.GardenerOperation] = ""
	require.NoError(t, env.Client.Update(context.Background(), s))
	profile = fresh(t, profile)
	profile.Spec.Kubernetes.Versions = append(profile.Spec.Kubernetes.Versions, k8sVersion("1.30.7", nil))
	require.NoError(t, env.Client.Update(context.Background(), profile))
	f.Clock.SetTime(onDay(0, 22, 45))
	writes = f.Measure(func() { f.Sweep(maintenance.Name) })
	assert.Zero(t, writes["patch"], "maintained once per window: %v", writes)

	f.Clock.SetTime(onDay(1, 22, 44))
	f.Sweep(maintenance.Name)
	k8s, _ = versionsOf(t, s)
	assert.Equal(t, "1.30.7", k8s, "the next day's window")
}

func TestMaintenanceInAWindowWrappingMidnight(t *testing.T) {
	f := newFixture(t, functiontest.AsFunction(), functiontest.At(onDay(0, 22, 59)))
	f.cloudProfile(t, profileSpec())
	// 23:00 to 02:00 in UTC+01:00 is 22:00 to 01:00 UTC; maintenance starts until 00:45 UTC.
	s := f.maintainedShoot(t, "night", "1.30.1", "1592.2.0", "230000+0100", "020000+0100")

	f.Clock.SetTime(onDay(1, 0, 50))
	writes := f.Measure(func() { f.Sweep(maintenance.Name) })
	assert.Zero(t, writes["patch"], "after the effective end")

	f.Clock.SetTime(onDay(1, 0, 40))
	f.Sweep(maintenance.Name)
	k8s, _ := versionsOf(t, s)
	assert.Equal(t, "1.30.5", k8s, "after midnight, in the occurrence that began the day before")

	s = fresh(t, s)
	s.Spec.Kubernetes.Version = "1.30.1" // rolled back by its owner
	require.NoError(t, env.Client.Update(context.Background(), s))
	f.Clock.SetTime(onDay(1, 21, 59))
	writes = f.Measure(func() { f.Sweep(maintenance.Name) })
	require.Zero(t, writes["patch"], "before this night's window: %v", writes)
	f.Clock.SetTime(onDay(1, 23, 59))
	f.Sweep(maintenance.Name)
	k8s, _ = versionsOf(t, s)
	assert.Equal(t, "1.30.5", k8s, "the next occurrence, before midnight")
}

func TestMaintainNowWithANamespacedCloudProfile(t *testing.T) {
	f := newFixture(t, functiontest.AsFunction(), functiontest.At(onDay(0, 12, 0)))
	parent := f.cloudProfile(t, profileSpec())
	namespaced := &gardencorev1beta1.NamespacedCloudProfile{ObjectMeta: metav1.ObjectMeta{Name: "custom", Namespace: f.ns}}
	namespaced.Spec.Parent = gardencorev1beta1.CloudProfileReference{Kind: v1beta1constants.CloudProfileReferenceKindCloudProfile, Name: parent.Name}
	require.NoError(t, env.Client.Create(context.Background(), namespaced))
	// The NamespacedCloudProfile controller's merged spec: the parent's, with 1.30.1 extended
	// and a version 1.30.9 the parent does not offer (as if the parent had it).
	merged := profileSpec()
	merged.Kubernetes.Versions = append(merged.Kubernetes.Versions, k8sVersion("1.30.9", nil))
	namespaced.Status.CloudProfileSpec = merged
	require.NoError(t, env.Client.Status().Update(context.Background(), namespaced))

	s := f.maintainedShoot(t, "now", "1.30.1", "1592.2.0", "030000+0000", "040000+0000", func(s *gardencorev1beta1.Shoot) {
		s.Spec.CloudProfileName = nil
		s.Spec.CloudProfile = &gardencorev1beta1.CloudProfileReference{Kind: v1beta1constants.CloudProfileReferenceKindNamespacedCloudProfile, Name: "custom"}
		s.Spec.Maintenance.AutoUpdate.MachineImageVersion = ptr.To(false)
	})
	f.Send("update", s)
	k8s, _ := versionsOf(t, s)
	assert.Equal(t, "1.30.1", k8s, "outside the window, not asked")

	s = fresh(t, s)
	s.Annotations = map[string]string{v1beta1constants.GardenerOperation: v1beta1constants.ShootOperationMaintain}
	require.NoError(t, env.Client.Update(context.Background(), s))
	f.Send("update", s)
	s = fresh(t, s)
	assert.Equal(t, "1.30.9", s.Spec.Kubernetes.Version, "from the NamespacedCloudProfile's merged spec")
	assert.Equal(t, "reconcile", s.Annotations[v1beta1constants.GardenerOperation], "the maintain request is consumed")
	assert.Equal(t, gardencorev1beta1.LastOperationStateSucceeded, s.Status.LastMaintenance.State)
}

func TestMaintenanceReportsFailuresUntilFixed(t *testing.T) {
	// Without a window, a Shoot is maintained once a day: late in the day its start point has
	// passed.
	f := newFixture(t, functiontest.AsFunction(), functiontest.At(onDay(0, 23, 30)))
	f.cloudProfile(t, profileSpec())
	// 1.27.3 is not offered, and no 1.28 is: there is nowhere to force it to.
	s := f.maintainedShoot(t, "stuck", "1.27.3", "1592.2.0", "", "", func(s *gardencorev1beta1.Shoot) {
		s.Spec.Maintenance.AutoUpdate.KubernetesVersion = false
	})
	f.Sweep(maintenance.Name)
	s = fresh(t, s)
	assert.Equal(t, "1.27.3", s.Spec.Kubernetes.Version, "no consecutive minor to force the update to")
	require.NotNil(t, s.Status.LastMaintenance)
	assert.Equal(t, gardencorev1beta1.LastOperationStateFailed, s.Status.LastMaintenance.State)
	assert.Equal(t, `(0/1) maintenance operations successful. Control Plane: Kubernetes version update failed. Reason for update: Version does not exist in CloudProfile`, s.Status.LastMaintenance.Description)
	assert.Equal(t, `Control Plane: Kubernetes maintenance failure due to: could not determine higher suitable version than "1.27.3": cannot perform forceful update of expired version "1.27.3". No suitable version found in CloudProfile - this is most likely a misconfiguration of the CloudProfile`,
		ptr.Deref(s.Status.LastMaintenance.FailureReason, ""))
	assert.Contains(t, events(t, s), `KubernetesVersionMaintenance: Control Plane: Kubernetes version maintenance failed. Reason for update: Version does not exist in CloudProfile. Error: could not determine higher suitable version than "1.27.3": cannot perform forceful update of expired version "1.27.3". No suitable version found in CloudProfile - this is most likely a misconfiguration of the CloudProfile`)

	// Its owner moves to an offered version; the next maintenance has nothing to do and
	// clears the failure.
	s.Spec.Kubernetes.Version = "1.30.5"
	require.NoError(t, env.Client.Update(context.Background(), s))
	f.Clock.SetTime(onDay(1, 23, 30))
	f.Sweep(maintenance.Name)
	s = fresh(t, s)
	assert.Equal(t, gardencorev1beta1.LastOperationStateSucceeded, s.Status.LastMaintenance.State)
	assert.Equal(t, "Maintenance succeeded", s.Status.LastMaintenance.Description)
	assert.Nil(t, s.Status.LastMaintenance.FailureReason)
}

// gardener.cloud/operation=maintain maintains a Shoot outside its window, by the event alone:
// the reconcile reads the Shoot's CloudProfile live (a sweep reads it from its LIST).
func TestMaintainNowByItsEvent(t *testing.T) {
	f := newFixture(t, functiontest.AsFunction(), functiontest.At(onDay(0, 12, 0)))
	f.cloudProfile(t, profileSpec())
	s := f.maintainedShoot(t, "asked", "1.30.1", "1592.1.0", "030000+0000", "040000+0000")
	s.Annotations = map[string]string{v1beta1constants.GardenerOperation: v1beta1constants.ShootOperationMaintain}
	require.NoError(t, env.Client.Update(context.Background(), s))
	f.Send("update", s)
	k8s, image := versionsOf(t, s)
	assert.Equal(t, "1.30.5", k8s)
	assert.Equal(t, "1592.2.0", image)
	assert.Equal(t, gardencorev1beta1.LastOperationStateSucceeded, fresh(t, s).Status.LastMaintenance.State)
}
