// Package cloudprofile is GCM's CloudProfile controller: it keeps CloudProfiles while Shoots or
// NamespacedCloudProfiles use them (a reference protection, pkg/controller/referenceprotection),
// and keeps each CloudProfile's status.{kubernetes,machineImages}.versions[].classification
// current with the versions' lifecycles (versions.go).
package cloudprofile

import (
	"fmt"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/gardener-knative/gardener-knative/pkg/controller/referenceprotection"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// Protection is the CloudProfile's: finalizer "gardener", released when neither a
// NamespacedCloudProfile has it as parent nor a Shoot uses it.
var Protection = &referenceprotection.Protection{
	FunctionName: "cloudprofile",
	Kind:         kinds.CloudProfile,
	Finalizer:    gardencorev1beta1.GardenerName,
	Referrers: []referenceprotection.Referrer{
		// A NamespacedCloudProfile's parent is immutable: only its deletion releases.
		{Kind: kinds.NamespacedCloudProfile, References: referenceprotection.Typed(NamespacedCloudProfileReferences)},
		{Kind: kinds.Shoot, References: referenceprotection.Typed(ShootReferences), ReferenceMayHaveChanged: referenceprotection.ShootSpecUnobserved},
	},
	Blocked:     blocked,
	RecordEvent: true,
	Schedule:    "7 * * * *",
}

// VersionsReconcilerName names the reconciler of the status classifications.
const VersionsReconcilerName = "versions"

// Function is GCM's CloudProfile controller: the protection, plus the versions reconciler fed
// by CloudProfile events and by a sweep every ten minutes that catches lifecycle transitions
// (time passes without events).
var Function = func() *function.Function {
	fn := Protection.Function()
	fn.RBAC = append(fn.RBAC, rbacv1.PolicyRule{
		APIGroups: []string{kinds.CloudProfile.Group}, Resources: []string{kinds.CloudProfile.Resource + "/status"}, Verbs: []string{"patch"},
	})
	fn.Reconcilers = append(fn.Reconcilers, function.Reconciler{
		Name: VersionsReconcilerName,
		For:  kinds.CloudProfile,
		New: func(deps function.Deps) (function.Handler, error) {
			return &VersionsReconciler{Writer: deps.Source.Writer, Clock: deps.Clock, Log: deps.Log}, nil
		},
	})
	fn.Watches = append(fn.Watches, function.Watch{Kind: kinds.CloudProfile, Reconciler: VersionsReconcilerName, Predicate: VersionsPredicate})
	fn.Sweeps = append(fn.Sweeps, function.Sweep{
		Name: VersionsReconcilerName, Schedule: "*/10 * * * *", Reconciler: VersionsReconcilerName,
		Primary: function.List{Kind: kinds.CloudProfile},
	})
	return fn
}()

// blocked words the blocked deletion as Gardener does: NamespacedCloudProfiles first, and only
// them when there are any.
func blocked(_ function.Key, referencing []referenceprotection.Referencing) string {
	if names := referenceprotection.NamesOf(referencing, kinds.NamespacedCloudProfile.Kind); len(names) > 0 {
		return fmt.Sprintf("Cannot delete CloudProfile, because the following NamespacedCloudProfiles are still referencing it: %+v", names)
	}
	return fmt.Sprintf("Cannot delete CloudProfile, because the following Shoots are still referencing it: %+v",
		referenceprotection.NamesOf(referencing, kinds.Shoot.Kind))
}

// NamespacedCloudProfileReferences is a NamespacedCloudProfile's parent CloudProfile (by name,
// as Gardener's index has it: validation allows no other parent kind).
func NamespacedCloudProfileReferences(profile *gardencorev1beta1.NamespacedCloudProfile) []function.Key {
	if profile.Spec.Parent.Name == "" {
		return nil
	}
	return []function.Key{{Name: profile.Spec.Parent.Name}}
}

// ShootReferences is the CloudProfile a Shoot uses, by spec.cloudProfileName or by
// spec.cloudProfile of kind CloudProfile (gardener-apiserver may keep either or both).
func ShootReferences(shoot *gardencorev1beta1.Shoot) []function.Key {
	var keys []function.Key
	if shoot.Spec.CloudProfileName != nil && *shoot.Spec.CloudProfileName != "" {
		keys = append(keys, function.Key{Name: *shoot.Spec.CloudProfileName})
	}
	if ref := shoot.Spec.CloudProfile; ref != nil && ref.Kind == v1beta1constants.CloudProfileReferenceKindCloudProfile {
		keys = append(keys, function.Key{Name: ref.Name})
	}
	return keys
}
