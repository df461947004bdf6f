package samples

import (
	"context"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// namespacedcloudprofileSamples creates the NamespacedCloudProfile "custom" of the CloudProfile
// "sample-parent", used by Shoot "local": its status shows the parent's spec with its overrides
// (Kubernetes 1.32.0 kept a year longer, an extra machine image and machine type). "retired"
// is being deleted while Shoot "legacy" uses it and stays; "unused" is being deleted and goes.
func namespacedcloudprofileSamples(ctx context.Context, c client.Client) error {
	const ns = "garden-namespacedcloudprofile"
	inAYear := metav1.NewTime(time.Now().AddDate(1, 0, 0).Truncate(time.Second))
	parent := &gardencorev1beta1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: "sample-parent"}}
	parent.Spec.Type = "local"
	parent.Spec.Kubernetes.Versions = []gardencorev1beta1.ExpirableVersion{
		{Version: "1.33.0"},
		{Version: "1.32.0", ExpirationDate: &metav1.Time{Time: time.Now().Add(24 * time.Hour)}},
	}
	parent.Spec.MachineImages = []gardencorev1beta1.MachineImage{{Name: "gardenlinux", Versions: []gardencorev1beta1.MachineImageVersion{
		{ExpirableVersion: gardencorev1beta1.ExpirableVersion{Version: "1877.0.0"}, Architectures: []string{"amd64"}},
	}}}

	profile := func(name string, finalizers ...string) *gardencorev1beta1.NamespacedCloudProfile {
		p := &gardencorev1beta1.NamespacedCloudProfile{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Finalizers: finalizers}}
		p.Spec.Parent = gardencorev1beta1.CloudProfileReference{Kind: "CloudProfile", Name: parent.Name}
		return p
	}
	custom := profile("custom")
	custom.Spec.Kubernetes = &gardencorev1beta1.KubernetesSettings{Versions: []gardencorev1beta1.ExpirableVersion{{Version: "1.32.0", ExpirationDate: &inAYear}}}
	custom.Spec.MachineImages = []gardencorev1beta1.MachineImage{{Name: "project-image", Versions: []gardencorev1beta1.MachineImageVersion{
		{ExpirableVersion: gardencorev1beta1.ExpirableVersion{Version: "0.1.0"}, Architectures: []string{"arm64"}},
	}}}
	custom.Spec.MachineTypes = []gardencorev1beta1.MachineType{{Name: "project-large"}}

	shoot := func(name, profile string) *gardencorev1beta1.Shoot {
		s := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
		s.Spec.CloudProfile = &gardencorev1beta1.CloudProfileReference{Kind: "NamespacedCloudProfile", Name: profile}
		return s
	}
	return createProtectionSamples(ctx, c,
		protectionSample{obj: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}},
		protectionSample{obj: parent, withStatus: true},
		protectionSample{obj: custom, withStatus: true},
		protectionSample{obj: shoot("local", "custom")},
		protectionSample{obj: profile("retired", "gardener"), withStatus: true, deleted: true, reconciled: func(o client.Object) bool {
			p := o.(*gardencorev1beta1.NamespacedCloudProfile)
			return p.Status.ObservedGeneration == p.Generation
		}},
		protectionSample{obj: shoot("legacy", "retired")},
		protectionSample{obj: profile("unused", "gardener"), deleted: true},
	)
}
