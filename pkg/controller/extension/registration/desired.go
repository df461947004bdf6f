// Package registration is gardener-operator's Extension reconciler as far as the virtual garden
// goes: it keeps the ControllerRegistration and ControllerDeployment an Extension implies,
// deletes them with the Extension (behind Gardener's finalizer) and reports the Installed
// condition.
package registration

import (
	"encoding/json"
	"fmt"
	"slices"

	gardencorev1 "github.com/gardener/gardener/pkg/apis/core/v1"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	operatorv1alpha1 "github.com/gardener/gardener/pkg/apis/operator/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ExtensionLabel marks the ControllerRegistration and ControllerDeployment an Extension owns;
// its value is the Extension's name. gardener-operator owns them through a ManagedResource in
// the runtime cluster, which this project does not have: the label is how deletion knows that
// an object of the Extension's name is the Extension's, and how their events find it.
const ExtensionLabel = "operator.gardener.cloud/extension"

// HelmDeploymentType is the ControllerDeployment type (core.gardener.cloud/v1beta1) whose
// providerConfig is a Helm deployment; gardener-apiserver converts core.gardener.cloud/v1's
// .helm to it.
const HelmDeploymentType = "helm"

// HasExtensionDeployment says whether the Extension asks for a ControllerRegistration at all:
// gardener-operator deletes them when spec.deployment.extension.helm is missing.
func HasExtensionDeployment(ext *operatorv1alpha1.Extension) bool {
	return ext.Spec.Deployment != nil && ext.Spec.Deployment.ExtensionDeployment != nil && ext.Spec.Deployment.ExtensionDeployment.Helm != nil
}

// Desired returns the ControllerRegistration and ControllerDeployment the Extension implies
// (both named like it), as gardener-operator builds them: the resources with the cluster type
// "garden" removed from autoEnable and clusterCompatibility (only the operator deploys into the
// garden), the deployment policy, seed selector and a reference to the ControllerDeployment, and
// the pod-security-enforce annotation; the ControllerDeployment deploys the Helm chart from the
// Extension's OCI repository with its values. The ControllerDeployment is written in
// core.gardener.cloud/v1beta1 form (type "helm", the Helm deployment as providerConfig), which is
// how gardener-apiserver stores v1's .helm. Only call it when HasExtensionDeployment.
func Desired(ext *operatorv1alpha1.Extension) (*gardencorev1beta1.ControllerRegistration, *gardencorev1beta1.ControllerDeployment, error) {
	extDeployment := ext.Spec.Deployment.ExtensionDeployment
	isGarden := func(t gardencorev1beta1.ClusterType) bool { return t == operatorv1alpha1.ClusterTypeGarden }

	var resources []gardencorev1beta1.ControllerResource
	for _, resource := range ext.Spec.Resources {
		resource = *resource.DeepCopy()
		resource.AutoEnable = slices.DeleteFunc(resource.AutoEnable, isGarden)
		resource.ClusterCompatibility = slices.DeleteFunc(resource.ClusterCompatibility, isGarden)
		resources = append(resources, resource)
	}

	registration := &gardencorev1beta1.ControllerRegistration{
		ObjectMeta: metav1.ObjectMeta{Name: ext.Name, Labels: map[string]string{ExtensionLabel: ext.Name}},
		Spec: gardencorev1beta1.ControllerRegistrationSpec{
			Resources: resources,
			Deployment: &gardencorev1beta1.ControllerRegistrationDeployment{
				Policy:         extDeployment.Policy,
				SeedSelector:   extDeployment.SeedSelector.DeepCopy(),
				DeploymentRefs: []gardencorev1beta1.DeploymentRef{{Name: ext.Name}},
			},
		},
	}
	if v, ok := ext.Annotations[v1beta1constants.AnnotationPodSecurityEnforce]; ok {
		metav1.SetMetaDataAnnotation(&registration.ObjectMeta, v1beta1constants.AnnotationPodSecurityEnforce, v)
	}

	helm := gardencorev1beta1.HelmControllerDeployment{
		Values:        extDeployment.Values.DeepCopy(),
		OCIRepository: ociRepositoryV1beta1(extDeployment.Helm.OCIRepository),
	}
	providerConfig, err := json.Marshal(helm)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the Helm deployment of ControllerDeployment %q: %w", ext.Name, err)
	}
	deployment := &gardencorev1beta1.ControllerDeployment{
		ObjectMeta:             metav1.ObjectMeta{Name: ext.Name, Labels: map[string]string{ExtensionLabel: ext.Name}},
		Type:                   HelmDeploymentType,
		InjectGardenKubeconfig: extDeployment.InjectGardenKubeconfig,
	}
	deployment.ProviderConfig.Raw = providerConfig
	return registration, deployment, nil
}

// ociRepositoryV1beta1 is the v1 OCI repository as v1beta1 (the same fields).
func ociRepositoryV1beta1(in *gardencorev1.OCIRepository) *gardencorev1beta1.OCIRepository {
	if in == nil {
		return nil
	}
	in = in.DeepCopy()
	return &gardencorev1beta1.OCIRepository{
		Ref: in.Ref, Repository: in.Repository, Tag: in.Tag, Digest: in.Digest,
		PullSecretRef: in.PullSecretRef, CABundleSecretRef: in.CABundleSecretRef,
	}
}
