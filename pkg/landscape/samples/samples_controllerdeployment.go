package samples

import (
	"context"
	"encoding/json"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/controllerdeployment"
	"github.com/gardener-knative/gardener-knative/pkg/controller/extension/registration"
)

// controllerdeploymentSamples creates the ControllerDeployment "sample-provider-local" that the
// ControllerRegistration "sample-provider-local" deploys with: it gains the finalizer.
// "sample-retired" is being deleted while the registration "sample-legacy" still names it and
// stays (the function logs why; Gardener records no Event here); "sample-unused" is being
// deleted and goes. Each names the sample chart, as Gardener's validation requires (a cluster
// runs it: config/webhook-extension-registration.yaml).
func controllerdeploymentSamples(chartRef string) func(context.Context, client.Client) error {
	return func(ctx context.Context, c client.Client) error {
		return createControllerDeploymentSamples(ctx, c, chartRef)
	}
}

func createControllerDeploymentSamples(ctx context.Context, c client.Client, chartRef string) error {
	helm, err := json.Marshal(gardencorev1beta1.HelmControllerDeployment{OCIRepository: &gardencorev1beta1.OCIRepository{Ref: ptr.To(chartRef)}})
	if err != nil {
		return err
	}
	deployment := func(name string, finalizers ...string) *gardencorev1beta1.ControllerDeployment {
		d := &gardencorev1beta1.ControllerDeployment{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: finalizers}, Type: registration.HelmDeploymentType}
		d.ProviderConfig.Raw = helm
		return d
	}
	registrationNaming := func(name, deployment string) *gardencorev1beta1.ControllerRegistration {
		r := &gardencorev1beta1.ControllerRegistration{ObjectMeta: metav1.ObjectMeta{Name: name}}
		r.Spec.Deployment = &gardencorev1beta1.ControllerRegistrationDeployment{DeploymentRefs: []gardencorev1beta1.DeploymentRef{{Name: deployment}}}
		return r
	}
	return createProtectionSamples(ctx, c,
		protectionSample{obj: deployment("sample-provider-local")},
		protectionSample{obj: registrationNaming("sample-provider-local", "sample-provider-local")},
		protectionSample{obj: deployment("sample-retired", controllerdeployment.FinalizerName), deleted: true},
		protectionSample{obj: registrationNaming("sample-legacy", "sample-retired")},
		protectionSample{obj: deployment("sample-unused", controllerdeployment.FinalizerName), deleted: true},
	)
}
