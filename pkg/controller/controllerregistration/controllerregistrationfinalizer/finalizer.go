// Package controllerregistrationfinalizer is the "ControllerRegistration finalizer" reconciler
// of GCM's ControllerRegistration controller: a ControllerRegistration keeps the finalizer
// "core.gardener.cloud/controllerregistration" until no ControllerInstallation references it.
package controllerregistrationfinalizer

import (
	"fmt"

	"github.com/gardener/gardener/pkg/apis/core"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"

	"github.com/gardener-knative/gardener-knative/pkg/controller/controllerregistration/internal/installationfinalizer"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// FinalizerName is the finalizer Gardener puts on ControllerRegistrations.
const FinalizerName = installationfinalizer.FinalizerName

// The reconciler's and its sweep's names.
const (
	ReconcilerName = "controllerregistration-finalizer"
	SweepName      = "registration-finalizers"
)

// Finalizer is the ControllerRegistrations'.
var Finalizer = &installationfinalizer.Finalizer{
	Kind:  kinds.ControllerRegistration,
	Field: core.RegistrationRefName,
	Referenced: func(ci *gardencorev1beta1.ControllerInstallation) string {
		return ci.Spec.RegistrationRef.Name
	},
	Blocked: func(name string, installations []string) string {
		return fmt.Sprintf("cannot remove finalizer of ControllerRegistration %q because still found ControllerInstallations: %v", name, installations)
	},
}

// Reconciler, Watches, Sweep and RBAC are the reconciler's part of the function.
var Reconciler, Watches, Sweep, RBAC = Finalizer.Declaration(ReconcilerName, SweepName, "23 * * * *")
