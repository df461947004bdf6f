package main

import (
	"context"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/controllerdeployment"
)

// controllerdeploymentSamples creates the ControllerDeployment "sample-provider-local" that the
// ControllerRegistration "sample-provider-local" deploys with: it gains the finalizer.
// "sample-retired" is being deleted while the registration "sample-legacy" still names it and
// stays (the function logs why; Gardener records no Event here); "sample-unused" is being
// deleted and goes.
func controllerdeploymentSamples(ctx context.Context, c client.Client) error {
	deployment := func(name string, finalizers ...string) *gardencorev1beta1.ControllerDeployment {
		return &gardencorev1beta1.ControllerDeployment{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: finalizers}, Type: "helm"}
	}
	registration := func(name, deployment string) *gardencorev1beta1.ControllerRegistration {
		r := &gardencorev1beta1.ControllerRegistration{ObjectMeta: metav1.ObjectMeta{Name: name}}
		r.Spec.Deployment = &gardencorev1beta1.ControllerRegistrationDeployment{DeploymentRefs: []gardencorev1beta1.DeploymentRef{{Name: deployment}}}
		return r
	}
	return createProtectionSamples(ctx, c,
		protectionSample{obj: deployment("sample-provider-local")},
		protectionSample{obj: registration("sample-provider-local", "sample-provider-local")},
		protectionSample{obj: deployment("sample-retired", controllerdeployment.FinalizerName), deleted: true},
		protectionSample{obj: registration("sample-legacy", "sample-retired")},
		protectionSample{obj: deployment("sample-unused", controllerdeployment.FinalizerName), deleted: true},
	)
}
