package cloudprofile

import (
	"context"
	"log/slog"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/function"
)

// Classification is the lifecycle classification of version at now. A version without
// lifecycle stages that uses the deprecated classification and expirationDate fields is read as
// the stages they stand for (its classification, Supported if unset, then Expired from the
// expiration date). A version without either is Supported; before its first stage starts it
// is Unavailable; a stage counts from strictly after its start time, and a stage without one
// has always started.
func Classification(version gardencorev1beta1.ExpirableVersion, now time.Time) gardencorev1beta1.VersionClassification {
	stages := version.Lifecycle
	if len(stages) == 0 && (version.Classification != nil || version.ExpirationDate != nil) {
		stages = []gardencorev1beta1.LifecycleStage{{Classification: ptr.Deref(version.Classification, gardencorev1beta1.ClassificationSupported)}}
		if version.ExpirationDate != nil {
			stages = append(stages, gardencorev1beta1.LifecycleStage{Classification: gardencorev1beta1.ClassificationExpired, StartTime: version.ExpirationDate})
		}
	}
	if len(stages) == 0 {
		return gardencorev1beta1.ClassificationSupported
	}
	current := gardencorev1beta1.ClassificationUnavailable
	for _, stage := range stages {
		var start time.Time
		if stage.StartTime != nil {
			start = stage.StartTime.Time
		}
		if start.Before(now) {
			current = stage.Classification
		}
	}
	return current
}

// VersionsStatus is the status Gardener keeps on a CloudProfile: every Kubernetes and machine
// image version, in spec order, with its classification at now; nil lists where the spec has
// no versions.
func VersionsStatus(spec gardencorev1beta1.CloudProfileSpec, now time.Time) gardencorev1beta1.CloudProfileStatus {
	var status gardencorev1beta1.CloudProfileStatus
	if versions := spec.Kubernetes.Versions; len(versions) > 0 {
		status.Kubernetes = &gardencorev1beta1.KubernetesStatus{Versions: make([]gardencorev1beta1.ExpirableVersionStatus, 0, len(versions))}
		for _, v := range versions {
			status.Kubernetes.Versions = append(status.Kubernetes.Versions, gardencorev1beta1.ExpirableVersionStatus{Version: v.Version, Classification: Classification(v, now)})
		}
	}
	if len(spec.MachineImages) > 0 {
		status.MachineImages = make([]gardencorev1beta1.MachineImageStatus, 0, len(spec.MachineImages))
		for _, image := range spec.MachineImages {
			imageStatus := gardencorev1beta1.MachineImageStatus{Name: image.Name, Versions: make([]gardencorev1beta1.ExpirableVersionStatus, 0, len(image.Versions))}
			for _, v := range image.Versions {
				imageStatus.Versions = append(imageStatus.Versions, gardencorev1beta1.ExpirableVersionStatus{Version: v.Version, Classification: Classification(v.ExpirableVersion, now)})
			}
			status.MachineImages = append(status.MachineImages, imageStatus)
		}
	}
	return status
}

// VersionsPredicate lets through the events of CloudProfiles that exist and are not being
// deleted: Gardener keeps no status of a CloudProfile on its way out.
func VersionsPredicate(ev function.Event) bool {
	return !ev.Deleted && (ev.Object == nil || ev.Object.GetDeletionTimestamp() == nil)
}

// VersionsReconciler writes VersionsStatus to the CloudProfile's status when it differs.
// Gardener requeues a CloudProfile for the instant of its next lifecycle transition; without
// timers, the versions sweep finds transitions within its period.
type VersionsReconciler struct {
	Writer function.Writer
	Clock  clock.PassiveClock
	Log    *slog.Logger
}

var _ function.Handler = &VersionsReconciler{}

// Reconcile reads the CloudProfile and patches its status if the classifications changed.
func (r *VersionsReconciler) Reconcile(ctx context.Context, req function.Request) error {
	profile := &gardencorev1beta1.CloudProfile{}
	if err := req.Reader.Get(ctx, req.Key, profile); err != nil {
		return client.IgnoreNotFound(err)
	}
	if profile.DeletionTimestamp != nil {
		return nil
	}
	status := VersionsStatus(profile.Spec, r.Clock.Now())
	changed, err := r.Writer.PatchStatus(ctx, profile, func() { profile.Status = status })
	if changed {
		r.Log.Info("Updated version classifications", "cloudProfile", req.Key)
	}
	return client.IgnoreNotFound(err)
}
