// Package required is gardenlet's "required" controller for ControllerInstallations: it sets an
// installation's Required condition from whether extension objects of the kinds and types its
// ControllerRegistration serves exist on the seed.
package required

import (
	"fmt"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Gardener's reasons and message of the Required condition.
const (
	ReasonExtensionObjectsExist = "ExtensionObjectsExist"
	ReasonNoExtensionObjects    = "NoExtensionObjects"
	MessageNoExtensionObjects   = "no extension objects exist in the seed having the kind/type combinations the controller is responsible for"
)

// TypesByKind holds, per extension kind that was read, the types of its objects that make a
// controller required. A kind absent from it was not read, so nothing is known of it.
type TypesByKind map[string]sets.Set[string]

// RequiringTypes returns the types of objects that make their controller required: those of
// class shoot (the default) or seed. Objects of class garden are gardener-operator's.
func RequiringTypes(objects []extensionsv1alpha1.Object) sets.Set[string] {
	types := sets.New[string]()
	for _, obj := range objects {
		spec := obj.GetExtensionSpec()
		class := extensionsv1alpha1.ExtensionClassShoot
		if c := spec.GetExtensionClass(); c != nil {
			class = *c
		}
		if class == extensionsv1alpha1.ExtensionClassShoot || class == extensionsv1alpha1.ExtensionClassSeed {
			types.Insert(spec.GetExtensionType())
		}
	}
	return types
}

// Decision is the Required condition an installation gets.
type Decision struct {
	Required bool
	Message  string
}

// Status is the condition's status.
func (d Decision) Status() gardencorev1beta1.ConditionStatus {
	if d.Required {
		return gardencorev1beta1.ConditionTrue
	}
	return gardencorev1beta1.ConditionFalse
}

// Reason is the condition's reason.
func (d Decision) Reason() string {
	if d.Required {
		return ReasonExtensionObjectsExist
	}
	return ReasonNoExtensionObjects
}

// Decide says whether a controller serving resources is required, given the types of the
// extension objects on the seed. It is required when an object of a kind/type it serves exists;
// it is not when none does and every kind it serves was read; otherwise (a kind it serves was
// not read) it cannot be decided and ok is false, as in gardenlet.
//
// The message lists the kind/type combinations sorted (gardenlet's order is a set's), so that
// the same objects always give the same message and a condition that did not change is not
// written again.
func Decide(resources []gardencorev1beta1.ControllerResource, existing TypesByKind) (d Decision, ok bool) {
	allKindsRead := true
	found := sets.New[string]()
	for _, resource := range resources {
		types, read := existing[resource.Kind]
		if !read {
			allKindsRead = false
			continue
		}
		if types.Has(resource.Type) {
			found.Insert(resource.Kind + "/" + resource.Type)
		}
	}
	if found.Len() > 0 {
		return Decision{Required: true, Message: fmt.Sprintf("extension objects still exist in the seed: %+v", sets.List(found))}, true
	}
	if !allKindsRead {
		return Decision{}, false
	}
	return Decision{Required: false, Message: MessageNoExtensionObjects}, true
}
