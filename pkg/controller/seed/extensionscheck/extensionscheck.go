// Package extensionscheck is the "Extensions Check" reconciler of GCM's Seed controller: it keeps
// a Seed's ExtensionsReady condition in line with the ControllerInstallations of the seed
// (spec.seedRef.name), which must all be Valid, Installed and Healthy and not Progressing.
package extensionscheck

import (
	"context"
	"fmt"
	"time"

	"github.com/gardener/gardener/pkg/apis/core"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/seed/internal/seedcheck"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// ReconcilerName names the reconciler (and its sweep) in the seed function.
const ReconcilerName = "extensions-check"

// Gardener's reasons of the ExtensionsReady condition, and the message when all is well.
const (
	ReasonNotValid     = "NotAllExtensionsValid"
	ReasonNotInstalled = "NotAllExtensionsInstalled"
	ReasonNotHealthy   = "NotAllExtensionsHealthy"
	ReasonProgressing  = "SomeExtensionsProgressing"
	ReasonReady        = "AllExtensionsReady"

	MessageReady = "All extensions installed into the seed cluster are ready and healthy."
)

// checked are the ControllerInstallation conditions the check requires.
var checked = []gardencorev1beta1.ConditionType{
	gardencorev1beta1.ControllerInstallationValid,
	gardencorev1beta1.ControllerInstallationInstalled,
	gardencorev1beta1.ControllerInstallationHealthy,
	gardencorev1beta1.ControllerInstallationProgressing,
}

// Condition computes a seed's ExtensionsReady condition from its current one (nil when it has
// none) and the seed's ControllerInstallations. The first failing aspect, in Gardener's order
// (not valid, not installed, not healthy, progressing), names the reason; its message lists the
// installations with their conditions' messages. A failing check is Progressing while threshold
// has not passed since the condition left True.
func Condition(now time.Time, threshold time.Duration, current *gardencorev1beta1.Condition, installations []gardencorev1beta1.ControllerInstallation) gardencorev1beta1.Condition {
	var notValid, notInstalled, notHealthy, progressing = map[string]string{}, map[string]string{}, map[string]string{}, map[string]string{}
	for _, ci := range installations {
		if len(ci.Status.Conditions) == 0 {
			notInstalled[ci.Name] = "extension was not yet installed"
			continue
		}
		found := 0
		for _, c := range ci.Status.Conditions {
			switch {
			case c.Type == gardencorev1beta1.ControllerInstallationValid && c.Status != gardencorev1beta1.ConditionTrue:
				notValid[ci.Name] = c.Message
			case c.Type == gardencorev1beta1.ControllerInstallationInstalled && c.Status != gardencorev1beta1.ConditionTrue:
				notInstalled[ci.Name] = c.Message
			case c.Type == gardencorev1beta1.ControllerInstallationHealthy && c.Status != gardencorev1beta1.ConditionTrue:
				notHealthy[ci.Name] = c.Message
			case c.Type == gardencorev1beta1.ControllerInstallationProgressing && c.Status != gardencorev1beta1.ConditionFalse:
				progressing[ci.Name] = c.Message
			}
			if isChecked(c.Type) {
				found++
			}
		}
		if _, unhealthy := notHealthy[ci.Name]; !unhealthy && found != len(checked) {
			notHealthy[ci.Name] = "not all required conditions found in ControllerInstallation"
		}
	}

	condition := function.InitCondition(now, gardencorev1beta1.SeedExtensionsReady)
	if current != nil {
		condition = *current
	}
	// fmt prints maps sorted by key, so the messages are stable: an unchanged situation
	// rewrites nothing.
	switch {
	case len(notValid) != 0:
		return function.ProgressingOrFalseCondition(now, threshold, condition, ReasonNotValid, fmt.Sprintf("Some extensions are not valid: %+v", notValid))
	case len(notInstalled) != 0:
		return function.ProgressingOrFalseCondition(now, threshold, condition, ReasonNotInstalled, fmt.Sprintf("Some extensions are not installed: %+v", notInstalled))
	case len(notHealthy) != 0:
		return function.ProgressingOrFalseCondition(now, threshold, condition, ReasonNotHealthy, fmt.Sprintf("Some extensions are not healthy: %+v", notHealthy))
	case len(progressing) != 0:
		return function.ProgressingOrFalseCondition(now, threshold, condition, ReasonProgressing, fmt.Sprintf("Some extensions are progressing: %+v", progressing))
	}
	return function.UpdatedCondition(now, condition, gardencorev1beta1.ConditionTrue, ReasonReady, MessageReady)
}

func isChecked(t gardencorev1beta1.ConditionType) bool {
	for _, c := range checked {
		if c == t {
			return true
		}
	}
	return false
}

// Reconciler sets the ExtensionsReady condition of the Seed a key names.
type Reconciler struct {
	Writer function.Writer
	Clock  clock.PassiveClock
	// Threshold is how long the condition stays Progressing before it turns False; zero turns
	// it at once.
	Threshold time.Duration
}

var _ function.Handler = &Reconciler{}

// Reconcile reads the seed and its ControllerInstallations (by the field selector
// spec.seedRef.name) and patches the condition if it changed.
func (r *Reconciler) Reconcile(ctx context.Context, req function.Request) error {
	return seedcheck.Reconcile(ctx, req, r.Writer, gardencorev1beta1.SeedExtensionsReady, &gardencorev1beta1.ControllerInstallationList{}, core.SeedRefName,
		func(current *gardencorev1beta1.Condition, installations *gardencorev1beta1.ControllerInstallationList) gardencorev1beta1.Condition {
			return Condition(r.Clock.Now(), r.Threshold, current, installations.Items)
		})
}

// Watches feed the reconciler with ControllerInstallations of a seed, as Gardener's: their
// creation and deletion, and updates (Gardener passes an update only when the status, reason or
// message of a checked condition changed; Knative's update events carry only the new object,
// so every update passes and a reconcile that finds nothing changed writes nothing).
func Watches(reconciler string) []function.Watch {
	return []function.Watch{{Kind: kinds.ControllerInstallation, Reconciler: reconciler, Predicate: ControllerInstallationPredicate, Map: MapControllerInstallationToSeed}}
}

// ControllerInstallationPredicate passes events of ControllerInstallations that name a seed.
func ControllerInstallationPredicate(ev function.Event) bool {
	return ev.Object != nil && installationSeed(ev.Object) != ""
}

// MapControllerInstallationToSeed maps a ControllerInstallation to its seed, from the event alone.
func MapControllerInstallationToSeed(_ context.Context, _ client.Reader, ev function.Event) ([]function.Key, error) {
	return []function.Key{{Name: installationSeed(ev.Object)}}, nil
}

func installationSeed(obj *unstructured.Unstructured) string {
	seed, _, _ := unstructured.NestedString(obj.Object, "spec", "seedRef", "name")
	return seed
}

// Sweep re-checks every seed every 30 s (Gardener's default syncPeriod of the controller), for
// the expiry of the threshold and missed events: one LIST of Seeds and one of
// ControllerInstallations, indexed by seed.
func Sweep(reconciler string) function.Sweep {
	return seedcheck.Sweep(reconciler, kinds.ControllerInstallation, core.SeedRefName, func(obj client.Object) []string {
		if ref := obj.(*gardencorev1beta1.ControllerInstallation).Spec.SeedRef; ref != nil {
			return []string{ref.Name}
		}
		return nil
	})
}

// RBAC is what the reconciler does: read Seeds and ControllerInstallations, patch the Seeds' status.
var RBAC = []rbacv1.PolicyRule{
	{APIGroups: []string{gardencorev1beta1.SchemeGroupVersion.Group}, Resources: []string{"seeds"}, Verbs: []string{"get", "list"}},
	{APIGroups: []string{gardencorev1beta1.SchemeGroupVersion.Group}, Resources: []string{"seeds/status"}, Verbs: []string{"patch"}},
	{APIGroups: []string{gardencorev1beta1.SchemeGroupVersion.Group}, Resources: []string{"controllerinstallations"}, Verbs: []string{"list"}},
}
