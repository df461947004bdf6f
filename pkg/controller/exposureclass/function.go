// Package exposureclass keeps ExposureClasses while Shoots use them (GCM's ExposureClass
// controller): a reference protection (pkg/controller/referenceprotection) of ExposureClasses
// referenced by Shoots' spec.exposureClassName.
package exposureclass

import (
	"fmt"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"

	"github.com/gardener-knative/gardener-knative/pkg/controller/referenceprotection"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// Protection is the ExposureClass's: finalizer "gardener", released when no Shoot names it.
var Protection = &referenceprotection.Protection{
	FunctionName: "exposureclass",
	Kind:         kinds.ExposureClass,
	Finalizer:    gardencorev1beta1.GardenerName,
	Referrers: []referenceprotection.Referrer{{
		Kind:                    kinds.Shoot,
		References:              referenceprotection.Typed(ShootReferences),
		ReferenceMayHaveChanged: referenceprotection.ShootSpecUnobserved,
	}},
	Blocked: func(_ function.Key, referencing []referenceprotection.Referencing) string {
		return fmt.Sprintf("Cannot delete ExposureClass, because it is still associated by the following Shoots: %+v",
			referenceprotection.NamesOf(referencing, kinds.Shoot.Kind))
	},
	RecordEvent: true,
	Schedule:    "27 * * * *",
}

// Function is GCM's ExposureClass controller.
var Function = Protection.Function()

// ShootReferences is the ExposureClass a Shoot names, if any.
func ShootReferences(shoot *gardencorev1beta1.Shoot) []function.Key {
	if shoot.Spec.ExposureClassName == nil {
		return nil
	}
	return []function.Key{{Name: *shoot.Spec.ExposureClassName}}
}
