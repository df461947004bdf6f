package samples

import (
	"context"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// shootHibernationSamples creates a project namespace whose Shoots show the shoot function's
// schedule reconcilers at work:
//   - hibernation: "sleepy" hibernates at every even minute and wakes up at every odd one
//     (spec.hibernation.enabled flips, status.lastHibernationTriggerTime follows, Events
//     "Hibernated" and "WokenUp");
//   - maintenance: "maintained" has a maintenance window from 30 minutes before start to 30
//     minutes after it (its start point, in the first half of the window, has passed) and runs
//     Kubernetes 1.30.1 and the expired gardenlinux 1592.1.0 of the CloudProfile
//     "sample-maintenance": the first maintenance tick updates it to 1.30.5 and 1592.2.0,
//     annotates gardener.cloud/operation=reconcile and shoot.gardener.cloud/tasks, and reports
//     status.lastMaintenance and Events.
//     "maintain-later" has its window in 12 hours and stays as it is.
func shootHibernationSamples(ctx context.Context, c client.Client) error {
	const ns = "garden-shoot-schedules"
	now := time.Now().UTC()
	expired := &metav1.Time{Time: now.AddDate(0, -1, 0)}
	image := func(version string, expiration *metav1.Time) gardencorev1beta1.MachineImageVersion {
		return gardencorev1beta1.MachineImageVersion{
			ExpirableVersion: gardencorev1beta1.ExpirableVersion{Version: version, ExpirationDate: expiration},
			Architectures:    []string{"amd64"},
			CRI:              []gardencorev1beta1.CRI{{Name: gardencorev1beta1.CRINameContainerD}},
		}
	}
	profile := &gardencorev1beta1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: "sample-maintenance"}}
	profile.Spec = gardencorev1beta1.CloudProfileSpec{
		Type: "local",
		Kubernetes: gardencorev1beta1.KubernetesSettings{Versions: []gardencorev1beta1.ExpirableVersion{
			{Version: "1.30.1"}, {Version: "1.30.5"}, {Version: "1.30.6", Classification: ptr.To(gardencorev1beta1.ClassificationPreview)},
		}},
		MachineTypes: []gardencorev1beta1.MachineType{{Name: "local"}},
		MachineImages: []gardencorev1beta1.MachineImage{{
			Name: "gardenlinux", UpdateStrategy: ptr.To(gardencorev1beta1.UpdateStrategyPatch),
			Versions: []gardencorev1beta1.MachineImageVersion{image("1592.1.0", expired), image("1592.2.0", nil)},
		}},
		Regions: []gardencorev1beta1.Region{{Name: "local"}},
	}
	namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{v1beta1constants.GardenRole: v1beta1constants.GardenRoleProject}}}
	for _, obj := range []client.Object{namespace, profile} {
		if err := client.IgnoreAlreadyExists(c.Create(ctx, obj)); err != nil {
			return err
		}
	}

	window := func(from, to time.Duration) *gardencorev1beta1.MaintenanceTimeWindow {
		return &gardencorev1beta1.MaintenanceTimeWindow{Begin: now.Add(from).Format("150405-0700"), End: now.Add(to).Format("150405-0700")}
	}
	shoot := func(name string, shape func(*gardencorev1beta1.Shoot)) *gardencorev1beta1.Shoot {
		s := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
		s.Spec.CloudProfile = &gardencorev1beta1.CloudProfileReference{Kind: v1beta1constants.CloudProfileReferenceKindCloudProfile, Name: profile.Name}
		s.Spec.Kubernetes.Version = "1.30.1"
		s.Spec.Provider.Workers = []gardencorev1beta1.Worker{{Name: "pool", Machine: gardencorev1beta1.Machine{
			Type: "local", Image: &gardencorev1beta1.ShootMachineImage{Name: "gardenlinux", Version: ptr.To("1592.1.0")},
		}}}
		s.Spec.Maintenance = &gardencorev1beta1.Maintenance{
			AutoUpdate: &gardencorev1beta1.MaintenanceAutoUpdate{KubernetesVersion: true, MachineImageVersion: ptr.To(true)},
			TimeWindow: window(12*time.Hour, 13*time.Hour),
		}
		shape(s)
		return s
	}
	for _, s := range []*gardencorev1beta1.Shoot{
		shoot("sleepy", func(s *gardencorev1beta1.Shoot) {
			s.Spec.Hibernation = &gardencorev1beta1.Hibernation{Schedules: []gardencorev1beta1.HibernationSchedule{{
				Start: ptr.To("*/2 * * * *"), End: ptr.To("1-59/2 * * * *"), Location: ptr.To("Europe/Berlin"),
			}}}
		}),
		shoot("maintained", func(s *gardencorev1beta1.Shoot) {
			s.Spec.Maintenance.TimeWindow = window(-30*time.Minute, 30*time.Minute)
		}),
		shoot("maintain-later", func(*gardencorev1beta1.Shoot) {}),
	} {
		if err := c.Create(ctx, s); err != nil {
			return err
		}
		// gardenlet reconciled it: maintenance then asks for the next reconcile.
		s.Status.ObservedGeneration = s.Generation
		s.Status.LastOperation = &gardencorev1beta1.LastOperation{
			Type: gardencorev1beta1.LastOperationTypeReconcile, State: gardencorev1beta1.LastOperationStateSucceeded, Progress: 100, LastUpdateTime: metav1.NewTime(now),
		}
		if err := setStatus(ctx, c, s); err != nil {
			return err
		}
	}
	return nil
}
