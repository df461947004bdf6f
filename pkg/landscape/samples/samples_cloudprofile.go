package samples

import (
	"context"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// cloudprofileSamples creates the CloudProfile "sample-local" used by Shoot "local": it gains
// the finalizer, and its status classifies its Kubernetes versions (1.31.0 expired, 1.32.0
// expiring two minutes after start: watch it turn expired). "sample-retired" is being deleted
// while Shoot "legacy" uses it and stays; "sample-unused" is being deleted and goes.
func cloudprofileSamples(ctx context.Context, c client.Client) error {
	const ns = "garden-cloudprofile"
	now := time.Now()
	profile := func(name string, finalizers ...string) *gardencorev1beta1.CloudProfile {
		p := &gardencorev1beta1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: finalizers}}
		p.Spec.Type = "local"
		p.Spec.Kubernetes.Versions = []gardencorev1beta1.ExpirableVersion{
			{Version: "1.33.0"},
			{Version: "1.32.0", ExpirationDate: &metav1.Time{Time: now.Add(2 * time.Minute)}},
			{Version: "1.31.0", ExpirationDate: &metav1.Time{Time: now.Add(-time.Hour)}},
		}
		return p
	}
	shoot := func(name, profile string) *gardencorev1beta1.Shoot {
		s := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
		s.Spec.CloudProfile = &gardencorev1beta1.CloudProfileReference{Kind: "CloudProfile", Name: profile}
		return s
	}
	return createProtectionSamples(ctx, c,
		protectionSample{obj: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}},
		protectionSample{obj: profile("sample-local"), withStatus: true},
		protectionSample{obj: shoot("local", "sample-local")},
		protectionSample{obj: profile("sample-retired", "gardener"), withStatus: true, deleted: true, reconciled: func(o client.Object) bool {
			return o.(*gardencorev1beta1.CloudProfile).Status.Kubernetes != nil
		}},
		protectionSample{obj: shoot("legacy", "sample-retired")},
		protectionSample{obj: &gardencorev1beta1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: "sample-unused", Finalizers: []string{"gardener"}}}, deleted: true},
	)
}
