// Package seedfinalizer is the "Seed finalizer" reconciler of GCM's ControllerRegistration
// controller: a Seed keeps the finalizer "core.gardener.cloud/controllerregistration" until no
// ControllerInstallation references it, so that its extensions are uninstalled before it goes.
package seedfinalizer

import (
	"github.com/gardener/gardener/pkg/apis/core"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"

	"github.com/gardener-knative/gardener-knative/pkg/controller/controllerregistration/internal/installationfinalizer"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// FinalizerName is the finalizer Gardener puts on Seeds.
const FinalizerName = installationfinalizer.FinalizerName

// The reconciler's and its sweep's names.
const (
	ReconcilerName = "seed-finalizer"
	SweepName      = "seed-finalizers"
)

// Finalizer is the Seeds'. Gardener logs nothing while installations block a Seed's deletion.
var Finalizer = &installationfinalizer.Finalizer{
	Kind:  kinds.Seed,
	Field: core.SeedRefName,
	Referenced: func(ci *gardencorev1beta1.ControllerInstallation) string {
		if ci.Spec.SeedRef == nil {
			return ""
		}
		return ci.Spec.SeedRef.Name
	},
}

// Reconciler, Watches, Sweep and RBAC are the reconciler's part of the function.
var Reconciler, Watches, Sweep, RBAC = Finalizer.Declaration(ReconcilerName, SweepName, "29 * * * *")
