package samples

import (
	"context"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	seedmanagementv1alpha1 "github.com/gardener/gardener/pkg/apis/seedmanagement/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// managedseedsetSamples creates the ManagedSeedSet "sample" in the garden namespace with two
// replicas: the first sweep creates Shoot "sample-0" from its shoot template and records it as
// the pending replica. No gardenlet runs in the landscape, so it waits there (a
// WaitingForShootReconciled Event on every sweep); mark the Shoot's latest spec reconciled
// (status.observedGeneration, status.lastOperation Create Succeeded) and the ManagedSeed
// "sample-0" follows.
func managedseedsetSamples(ctx context.Context, c client.Client) error {
	if err := client.IgnoreAlreadyExists(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: v1beta1constants.GardenNamespace}})); err != nil {
		return err
	}
	labels := map[string]string{"managedseedset": "sample"}
	set := &seedmanagementv1alpha1.ManagedSeedSet{ObjectMeta: metav1.ObjectMeta{Name: "sample", Namespace: v1beta1constants.GardenNamespace}}
	set.Spec.Replicas = ptr.To(int32(2))
	set.Spec.Selector = metav1.LabelSelector{MatchLabels: labels}
	set.Spec.ShootTemplate.Labels = labels
	set.Spec.ShootTemplate.Spec.CloudProfileName = ptr.To("local")
	set.Spec.ShootTemplate.Spec.Region = "local"
	set.Spec.ShootTemplate.Spec.DNS = &gardencorev1beta1.DNS{Domain: ptr.To("replica-name.seeds.local.gardener.cloud")}
	set.Spec.Template.Labels = labels
	set.Spec.Template.Spec.Gardenlet.Config = runtime.RawExtension{Raw: []byte(
		`{"apiVersion":"gardenlet.config.gardener.cloud/v1alpha1","kind":"GardenletConfiguration","seedConfig":{"metadata":{"labels":{"managedseedset":"sample"}},"spec":{"ingress":{"domain":"ingress.replica-name.seeds.local.gardener.cloud"}}}}`)}
	return c.Create(ctx, set)
}
