package samples

import (
	"context"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/seed/secrets"
)

// controllerregistrationSamples show the controllerregistration function deciding a seed's
// extensions: the Seed "sample-registrations" (provider type "sample-cloud") gains its
// finalizer and ControllerInstallations of
//   - "sample-cr-provider" (OnDemand: ControlPlane, Infrastructure and Worker of its type),
//   - "sample-cr-always" (policy Always, for seeds labelled sample=registrations),
//   - "sample-cr-os" (OnDemand: the OperatingSystemConfig its Shoot "os" uses),
//   - "provider-local" (of extensionSamples' Extension: the DNSRecord type of the garden's
//     internal domain, which seedSamples' domain Secret declares and every Shoot needs),
//
// but none of "sample-cr-unused" (OnDemand, nothing needs it). Deleting the Shoot
// (`kubectl -n garden-controllerregistration delete shoot os`) removes the installations of
// "sample-cr-os" and "provider-local". The ClusterRole "sample-extension-permissions" gets a ClusterRoleBinding to the
// ServiceAccount "extension-sample" of the seed's namespace, which its selector selects.
func controllerregistrationSamples(ctx context.Context, c client.Client) error {
	const (
		seedName  = "sample-registrations"
		provider  = "sample-cloud"
		namespace = "garden-controllerregistration"
	)
	seedLabels := map[string]string{"sample": "registrations"}
	seed := &gardencorev1beta1.Seed{ObjectMeta: metav1.ObjectMeta{Name: seedName, Labels: seedLabels}}
	seed.Spec.Provider = gardencorev1beta1.SeedProvider{Type: provider, Region: "local"}
	seed.Spec.Networks = gardencorev1beta1.SeedNetworks{Pods: "10.1.0.0/16", Services: "10.2.0.0/16"}
	seed.Spec.Ingress = &gardencorev1beta1.Ingress{Domain: "ingress.sample.local.gardener.cloud"}

	registration := func(name string, policy gardencorev1beta1.ControllerDeploymentPolicy, resources ...gardencorev1beta1.ControllerResource) *gardencorev1beta1.ControllerRegistration {
		r := &gardencorev1beta1.ControllerRegistration{ObjectMeta: metav1.ObjectMeta{Name: name}}
		r.Spec.Resources = resources
		r.Spec.Deployment = &gardencorev1beta1.ControllerRegistrationDeployment{Policy: ptr.To(policy)}
		if policy != gardencorev1beta1.ControllerDeploymentPolicyOnDemand {
			r.Spec.Deployment.SeedSelector = &metav1.LabelSelector{MatchLabels: seedLabels}
		}
		return r
	}
	type res = gardencorev1beta1.ControllerResource
	shoot := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: "os", Namespace: namespace}}
	shoot.Spec.SeedName = ptr.To(seedName)
	shoot.Spec.Provider.Type = provider
	shoot.Spec.Provider.Workers = []gardencorev1beta1.Worker{{Name: "worker", Minimum: 1, Maximum: 2,
		Machine: gardencorev1beta1.Machine{Type: "small", Image: &gardencorev1beta1.ShootMachineImage{Name: "sample-os"}}}}

	seedNamespace := "seed-" + seedName
	clusterRole := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{
			Name:        "sample-extension-permissions",
			Labels:      map[string]string{v1beta1constants.LabelAuthorizationCustomExtensionsPermissions: "true"},
			Annotations: map[string]string{v1beta1constants.LabelAuthorizationExtensionsServiceAccountSelector: `{"matchLabels":{"extension":"sample"}}`},
		},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}},
	}

	if err := c.Create(ctx, seed); err != nil {
		return err
	}
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}},
		// The seed's namespace as the seed function creates it (controlled by the seed, which it
		// checks), here at once for the extension's ServiceAccount.
		secrets.NewNamespace(seed, seedNamespace),
		registration("sample-cr-provider", gardencorev1beta1.ControllerDeploymentPolicyOnDemand,
			res{Kind: "ControlPlane", Type: provider}, res{Kind: "Infrastructure", Type: provider}, res{Kind: "Worker", Type: provider}),
		// Not primary: Gardener allows a seed selector only on registrations that control no
		// resource primarily.
		registration("sample-cr-always", gardencorev1beta1.ControllerDeploymentPolicyAlways, res{Kind: "Extension", Type: "sample-always", Primary: ptr.To(false)}),
		registration("sample-cr-os", gardencorev1beta1.ControllerDeploymentPolicyOnDemand, res{Kind: "OperatingSystemConfig", Type: "sample-os"}),
		registration("sample-cr-unused", gardencorev1beta1.ControllerDeploymentPolicyOnDemand, res{Kind: "Extension", Type: "sample-unused"}),
		shoot,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "extension-sample", Namespace: seedNamespace, Labels: map[string]string{"extension": "sample"}}},
		clusterRole,
	} {
		if err := client.IgnoreAlreadyExists(c.Create(ctx, obj)); err != nil {
			return err
		}
	}
	return nil
}
