// Package controllerdeployment keeps ControllerDeployments while ControllerRegistrations use
// them (GCM's ControllerDeployment controller): a reference protection
// (pkg/controller/referenceprotection) of ControllerDeployments referenced by
// ControllerRegistrations' spec.deployment.deploymentRefs[].name.
package controllerdeployment

import (
	"fmt"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"

	"github.com/gardener-knative/gardener-knative/pkg/controller/referenceprotection"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// FinalizerName is the finalizer Gardener's ControllerDeployment controller uses.
const FinalizerName = "core.gardener.cloud/controllerdeployment"

// Protection is the ControllerDeployment's. Gardener records no Event for a blocked deletion
// here; the reason is logged.
var Protection = &referenceprotection.Protection{
	FunctionName: "controllerdeployment",
	Kind:         kinds.ControllerDeployment,
	Finalizer:    FinalizerName,
	Referrers: []referenceprotection.Referrer{{
		Kind:       kinds.ControllerRegistration,
		References: referenceprotection.Typed(ControllerRegistrationReferences),
		// deploymentRefs are mutable, and ControllerRegistrations change rarely: every update
		// may have dropped a reference.
		ReferenceMayHaveChanged: func(function.Event) bool { return true },
	}},
	Blocked: func(key function.Key, referencing []referenceprotection.Referencing) string {
		return fmt.Sprintf("cannot remove finalizer of ControllerDeployment %q because still found ControllerRegistrations: %+v",
			key.Name, referenceprotection.NamesOf(referencing, kinds.ControllerRegistration.Kind))
	},
	Schedule: "37 * * * *",
}

// Function is GCM's ControllerDeployment controller.
var Function = Protection.Function()

// ControllerRegistrationReferences are the ControllerDeployments a ControllerRegistration's
// deployment names.
func ControllerRegistrationReferences(registration *gardencorev1beta1.ControllerRegistration) []function.Key {
	if registration.Spec.Deployment == nil {
		return nil
	}
	keys := make([]function.Key, 0, len(registration.Spec.Deployment.DeploymentRefs))
	for _, ref := range registration.Spec.Deployment.DeploymentRefs {
		keys = append(keys, function.Key{Name: ref.Name})
	}
	return keys
}
