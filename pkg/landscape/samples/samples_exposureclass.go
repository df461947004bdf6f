package samples

import (
	"context"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// exposureclassSamples creates the ExposureClass "sample-internet" used by Shoot "local": it
// gains the finalizer. "sample-corporate" is being deleted while Shoot "legacy" uses it and
// stays; "sample-unused" is being deleted and goes.
func exposureclassSamples(ctx context.Context, c client.Client) error {
	const ns = "garden-exposureclass"
	class := func(name string, finalizers ...string) *gardencorev1beta1.ExposureClass {
		return &gardencorev1beta1.ExposureClass{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: finalizers}, Handler: name}
	}
	shoot := func(name, class string) *gardencorev1beta1.Shoot {
		return &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: gardencorev1beta1.ShootSpec{ExposureClassName: ptr.To(class)}}
	}
	return createProtectionSamples(ctx, c,
		protectionSample{obj: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}},
		protectionSample{obj: class("sample-internet")},
		protectionSample{obj: shoot("local", "sample-internet")},
		protectionSample{obj: class("sample-corporate", "gardener"), deleted: true},
		protectionSample{obj: shoot("legacy", "sample-corporate")},
		protectionSample{obj: class("sample-unused", "gardener"), deleted: true},
	)
}
