// Package namespacedcloudprofile is GCM's NamespacedCloudProfile controller: it keeps
// NamespacedCloudProfiles while Shoots of their namespace use them (a reference protection,
// pkg/controller/referenceprotection), and keeps each one's status.cloudProfileSpec the merge of
// its parent CloudProfile with its overrides (merge.go, status.go).
package namespacedcloudprofile

import (
	"fmt"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/gardener-knative/gardener-knative/pkg/controller/referenceprotection"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// Protection is the NamespacedCloudProfile's: finalizer "gardener", released when no Shoot of
// its namespace uses it.
var Protection = &referenceprotection.Protection{
	FunctionName: "namespacedcloudprofile",
	Kind:         kinds.NamespacedCloudProfile,
	Finalizer:    gardencorev1beta1.GardenerName,
	Referrers: []referenceprotection.Referrer{{
		Kind:                    kinds.Shoot,
		References:              referenceprotection.Typed(ShootReferences),
		SameNamespace:           true,
		ReferenceMayHaveChanged: referenceprotection.ShootSpecUnobserved,
	}},
	Blocked: func(_ function.Key, referencing []referenceprotection.Referencing) string {
		return fmt.Sprintf("Cannot delete NamespacedCloudProfile, because the following Shoots are still referencing it: %+v",
			referenceprotection.NamesOf(referencing, kinds.Shoot.Kind))
	},
	RecordEvent: true,
	Schedule:    "17 * * * *",
}

const (
	// StatusReconcilerName names the reconciler that writes the status on events.
	StatusReconcilerName = "status"
	// StatusResyncName names the sweep (and its reconciler) that repairs stale statuses.
	StatusResyncName = "status-resync"
)

// Function is GCM's NamespacedCloudProfile controller: the protection, plus the status
// reconciler fed by NamespacedCloudProfile spec changes and by every event of a parent
// CloudProfile, and an hourly sweep over all NamespacedCloudProfiles and CloudProfiles (two
// LISTs) that repairs stale statuses after missed events.
var Function = func() *function.Function {
	fn := Protection.Function()
	fn.RBAC = append(fn.RBAC,
		rbacv1.PolicyRule{APIGroups: []string{kinds.NamespacedCloudProfile.Group}, Resources: []string{kinds.NamespacedCloudProfile.Resource + "/status"}, Verbs: []string{"patch"}},
		rbacv1.PolicyRule{APIGroups: []string{kinds.CloudProfile.Group}, Resources: []string{kinds.CloudProfile.Resource}, Verbs: []string{"get", "list"}},
	)
	fn.Reconcilers = append(fn.Reconcilers,
		function.Reconciler{Name: StatusReconcilerName, For: kinds.NamespacedCloudProfile, New: func(deps function.Deps) (function.Handler, error) {
			return &StatusReconciler{Writer: deps.Source.Writer, Log: deps.Log}, nil
		}},
		function.Reconciler{Name: StatusResyncName, For: kinds.NamespacedCloudProfile, New: func(deps function.Deps) (function.Handler, error) {
			return &StatusReconciler{Writer: deps.Source.Writer, Log: deps.Log, OnlyIfStale: true}, nil
		}},
	)
	fn.Watches = append(fn.Watches,
		function.Watch{Kind: kinds.NamespacedCloudProfile, Reconciler: StatusReconcilerName, Predicate: GenerationUnobserved},
		function.Watch{Kind: kinds.CloudProfile, Reconciler: StatusReconcilerName, Predicate: CloudProfileExists, Map: MapCloudProfileToNamespacedCloudProfiles},
	)
	fn.Sweeps = append(fn.Sweeps, function.Sweep{
		Name: StatusResyncName, Schedule: "52 * * * *", Reconciler: StatusResyncName,
		Primary: function.List{Kind: kinds.NamespacedCloudProfile},
		Related: []function.List{{Kind: kinds.CloudProfile}},
	})
	return fn
}()

// GenerationUnobserved stands in for Gardener's GenerationChangedPredicate, which compares the
// old and the new object; Knative's update events carry only the new one. A spec change raises
// the generation above status.observedGeneration until the status reconciler has merged it, so
// this lets through exactly the events that have something to merge, and filters the function's
// own status writes. Profiles being deleted keep their status.
func GenerationUnobserved(ev function.Event) bool {
	if ev.Deleted {
		return false
	}
	if ev.Object == nil {
		return true
	}
	return ev.Object.GetDeletionTimestamp() == nil && ev.SpecUnobserved()
}

// CloudProfileExists lets through every event of a CloudProfile but its deletion, as Gardener
// maps every CloudProfile event to its NamespacedCloudProfiles (with the parent gone there is
// nothing to merge).
func CloudProfileExists(ev function.Event) bool { return !ev.Deleted }

// ShootReferences is the NamespacedCloudProfile a Shoot uses: spec.cloudProfile of kind
// NamespacedCloudProfile, in the Shoot's namespace.
func ShootReferences(shoot *gardencorev1beta1.Shoot) []function.Key {
	if ref := shoot.Spec.CloudProfile; ref != nil && ref.Kind == v1beta1constants.CloudProfileReferenceKindNamespacedCloudProfile {
		return []function.Key{{Namespace: shoot.Namespace, Name: ref.Name}}
	}
	return nil
}
