package samples

import (
	"context"

	gardencorev1 "github.com/gardener/gardener/pkg/apis/core/v1"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	operatorv1alpha1 "github.com/gardener/gardener/pkg/apis/operator/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/landscape"
)

// The registration chain's samples: the Extension, the Shoot that makes it required, and where.
const (
	chainExtension      = landscape.SampleChartName // "sample-extension", named like its chart
	chainExtensionType  = "sample"
	chainShootNamespace = "garden-extension-chain"
	chainShoot          = "uses-sample-extension"
	// controllerinstallationSeed is the seed the controllerinstallation function is gardenlet
	// for: the landscape's second control plane (.landscape/seed-kubeconfig).
	controllerinstallationSeed = landscape.SeedName
)

// controllerinstallationSamples set up the registration chain that ends in a Helm release on the
// seed, with nothing in between created by hand:
//
//  1. the Extension "sample-extension" (kind Extension, type "sample", policy OnDemand, the
//     registry's sample chart): the extension function creates the ControllerRegistration and
//     ControllerDeployment "sample-extension";
//  2. the Seed local-seed (provider "local", served by the Extension provider-local of
//     extensionSamples, with the cluster identity gardenlet would have set) and the Shoot
//     "uses-sample-extension" on it enabling the extension: the controllerregistration function
//     finds Extension/sample required on local-seed and creates the ControllerInstallation
//     "sample-extension-<5 characters>" (and one of provider-local for the seed's own kinds);
//  3. the controllerinstallation function installs the chart as the release "sample-extension"
//     into the seed cluster, in the namespace extension-<installation>.
//
// Deleting the Shoot (`kubectl -n garden-extension-chain delete shoot uses-sample-extension`)
// deletes the installation, and with it the release and its namespace. Look at the release with
// `kubectl --kubeconfig .landscape/seed-kubeconfig get cm,secrets -A -l 'owner=helm'` and the
// chart's ConfigMap `sample-extension-config`; the live view's "registration chain" line follows it.
func controllerinstallationSamples(chartRef string) sample {
	return func(ctx context.Context, clusters Clusters) error {
		c := clusters.Garden
		seed := &gardencorev1beta1.Seed{ObjectMeta: metav1.ObjectMeta{Name: controllerinstallationSeed}}
		seed.Spec.Provider = gardencorev1beta1.SeedProvider{Type: "local", Region: "local", Zones: []string{"0"}}
		seed.Spec.Networks = gardencorev1beta1.SeedNetworks{Pods: "10.1.0.0/16", Services: "10.2.0.0/16"}
		seed.Spec.Ingress = &gardencorev1beta1.Ingress{Domain: "ingress.local.seed.local.gardener.cloud"}
		if err := c.Create(ctx, seed); err != nil {
			return err
		}
		seed.Status.ClusterIdentity = ptr.To(controllerinstallationSeed + "-identity")
		if err := setStatus(ctx, c, seed); err != nil {
			return err
		}

		ext := &operatorv1alpha1.Extension{ObjectMeta: metav1.ObjectMeta{Name: chainExtension}}
		ext.Spec.Resources = []gardencorev1beta1.ControllerResource{{Kind: "Extension", Type: chainExtensionType}}
		ext.Spec.Deployment = &operatorv1alpha1.Deployment{ExtensionDeployment: &operatorv1alpha1.ExtensionDeploymentSpec{
			DeploymentSpec: operatorv1alpha1.DeploymentSpec{Helm: &operatorv1alpha1.ExtensionHelm{
				OCIRepository: &gardencorev1.OCIRepository{Ref: ptr.To(chartRef)},
			}},
			Values: &apiextensionsv1.JSON{Raw: []byte(`{"greeting":"hello from the registration chain"}`)},
			Policy: ptr.To(gardencorev1beta1.ControllerDeploymentPolicyOnDemand),
		}}
		if err := clusters.Runtime.Create(ctx, ext); err != nil {
			return err
		}

		if err := client.IgnoreAlreadyExists(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: chainShootNamespace}})); err != nil {
			return err
		}
		shoot := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: chainShoot, Namespace: chainShootNamespace}}
		shoot.Spec.SeedName = ptr.To(controllerinstallationSeed)
		shoot.Spec.Provider.Type = "local"
		shoot.Spec.Provider.Workers = []gardencorev1beta1.Worker{{Name: "local", Minimum: 1, Maximum: 1, Machine: gardencorev1beta1.Machine{Type: "local"}}}
		shoot.Spec.Extensions = []gardencorev1beta1.Extension{{Type: chainExtensionType}}
		if err := c.Create(ctx, shoot); err != nil {
			return err
		}
		shoot.Status.SeedName = ptr.To(controllerinstallationSeed) // scheduled and reconciled there, as gardenlet reports
		return setStatus(ctx, c, shoot)
	}
}
