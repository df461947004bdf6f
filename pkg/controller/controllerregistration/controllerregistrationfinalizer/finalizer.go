// Package controllerregistrationfinalizer is the "ControllerRegistration finalizer" reconciler
// of GCM's ControllerRegistration controller: a ControllerRegistration keeps the finalizer
// "core.gardener.cloud/controllerregistration" until no ControllerInstallation references it.
package controllerregistrationfinalizer

import (
	"fmt"

	"github.com/gardener/gardener/pkg/apis/core"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	rbacv1 "k8s.io/api/rbac/v1"

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

// Reconciler, Watches and Sweep are the reconciler's part of the function.
var Reconciler, Watches, Sweep = Finalizer.Declaration(ReconcilerName, SweepName, "23 * * * *")

// RBAC: read and patch (finalizers) ControllerRegistrations, list ControllerInstallations.
var RBAC = []rbacv1.PolicyRule{
	{APIGroups: []string{gardencorev1beta1.GroupName}, Resources: []string{"controllerregistrations"}, Verbs: []string{"get", "list", "patch"}},
	{APIGroups: []string{gardencorev1beta1.GroupName}, Resources: []string{"controllerinstallations"}, Verbs: []string{"list"}},
}
