package samples

import (
	"context"

	gardencorev1 "github.com/gardener/gardener/pkg/apis/core/v1"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	operatorv1alpha1 "github.com/gardener/gardener/pkg/apis/operator/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// extensionSamples creates the Extension provider-local (Gardener's example: the local
// provider's kinds, a Helm chart from an OCI repository, values for the seeds and for the
// runtime cluster): the extension function gives it its finalizer, the ControllerRegistration
// and ControllerDeployment provider-local and the conditions Installed, RequiredVirtual and
// RequiredRuntime. A DNSRecord of class garden of type local in the garden namespace makes it
// required in the runtime cluster ("Extension required for kinds [DNSRecord]"). Its chart is the
// landscape registry's sample chart (chartRef); its registration serves the kinds the seed
// local-seed requires for itself (ControlPlane, Infrastructure, Worker of type local), so the
// controllerregistration function installs it there too, beside the registration chain's
// sample-extension (controllerinstallationSamples).
func extensionSamples(chartRef string) func(context.Context, client.Client) error {
	return func(ctx context.Context, c client.Client) error {
		const provider = "local"
		ext := &operatorv1alpha1.Extension{ObjectMeta: metav1.ObjectMeta{Name: "provider-local"}}
		for _, kind := range []string{"BackupBucket", "BackupEntry", "DNSRecord", "Infrastructure", "ControlPlane", "Worker"} {
			ext.Spec.Resources = append(ext.Spec.Resources, gardencorev1beta1.ControllerResource{Kind: kind, Type: provider})
		}
		ext.Spec.Deployment = &operatorv1alpha1.Deployment{ExtensionDeployment: &operatorv1alpha1.ExtensionDeploymentSpec{
			DeploymentSpec: operatorv1alpha1.DeploymentSpec{Helm: &operatorv1alpha1.ExtensionHelm{
				OCIRepository: &gardencorev1.OCIRepository{Ref: ptr.To(chartRef)},
			}},
			Values:               &apiextensionsv1.JSON{Raw: []byte(`{"controllers":{"dnsrecord":{"concurrentSyncs":20}}}`)},
			RuntimeClusterValues: &apiextensionsv1.JSON{Raw: []byte(`{"controllers":{"dnsrecord":{"concurrentSyncs":1}}}`)},
		}}

		gardenNamespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "garden"}}
		record := &extensionsv1alpha1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Name: "garden-api", Namespace: gardenNamespace.Name}}
		record.Spec.Type = provider
		record.Spec.Class = ptr.To(extensionsv1alpha1.ExtensionClassGarden)
		record.Spec.Name = "api.garden.local.example.com"
		record.Spec.RecordType = extensionsv1alpha1.DNSRecordTypeA
		record.Spec.Values = []string{"192.0.2.1"}
		// The provider's credentials, as Gardener's validation requires (no provider reads them here).
		record.Spec.SecretRef = corev1.SecretReference{Name: "garden-dns-credentials", Namespace: gardenNamespace.Name}

		for _, obj := range []client.Object{gardenNamespace, ext, record} {
			if err := client.IgnoreAlreadyExists(c.Create(ctx, obj)); err != nil {
				return err
			}
		}
		return nil
	}
}
