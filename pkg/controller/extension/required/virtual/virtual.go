// Package virtual is gardener-operator's extension-required-virtual reconciler: an Extension's
// RequiredVirtual condition says whether any ControllerInstallation of its registration (the
// ControllerRegistration of its name) is required on a seed.
package virtual

import (
	"context"
	"fmt"

	"github.com/gardener/gardener/pkg/apis/core"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	operatorv1alpha1 "github.com/gardener/gardener/pkg/apis/operator/v1alpha1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/extension/required"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// ReconcilerName names the reconciler in the extension function.
const ReconcilerName = "required-virtual"

// SweepName names its sweep.
const SweepName = "required-virtual"

// The RequiredVirtual condition's reasons and messages, as gardener-operator's.
const (
	ReasonRequired     = "RequiredControllerInstallation"
	MessageRequired    = "Extension has required ControllerInstallations for seed clusters"
	ReasonNotRequired  = "NoRequiredControllerInstallation"
	MessageNotRequired = "Extension does not have required ControllerInstallations for seed clusters"
)

// RegistrationRefName is the field selector gardener-apiserver offers for
// ControllerInstallations by registration.
const RegistrationRefName = core.RegistrationRefName

// Watches are the reconciler's events: a new Extension (as gardener-operator's, creations only),
// and the ControllerInstallations of a registration, in the garden.
func Watches() []function.Watch {
	return []function.Watch{
		{Kind: kinds.Extension, Cluster: function.Target, Reconciler: ReconcilerName, Predicate: func(ev function.Event) bool { return ev.Created }},
		{Kind: kinds.ControllerInstallation, Reconciler: ReconcilerName, Predicate: InstallationPredicate, Map: MapInstallationToExtension},
	}
}

// Sweeps is the resync: every Extension against one LIST of ControllerInstallations.
var Sweeps = []function.Sweep{{
	Name:       SweepName,
	Schedule:   "*/10 * * * *",
	Reconciler: ReconcilerName,
	Primary:    function.List{Kind: kinds.Extension, Cluster: function.Target},
	Related: []function.List{{
		Kind:    kinds.ControllerInstallation,
		Indexes: map[string]function.IndexFunc{RegistrationRefName: registrationRefName},
	}},
}}

// RBAC is what the reconciler does in the garden: read the installations.
var RBAC = []rbacv1.PolicyRule{
	{APIGroups: []string{gardencorev1beta1.SchemeGroupVersion.Group}, Resources: []string{"controllerinstallations"}, Verbs: []string{"list"}},
}

// TargetRBAC is what it does in the runtime cluster: the Extensions' condition.
var TargetRBAC = []rbacv1.PolicyRule{
	{APIGroups: []string{operatorv1alpha1.SchemeGroupVersion.Group}, Resources: []string{"extensions"}, Verbs: []string{"get", "list"}},
	{APIGroups: []string{operatorv1alpha1.SchemeGroupVersion.Group}, Resources: []string{"extensions/status"}, Verbs: []string{"patch"}},
}

func registrationRefName(obj client.Object) []string {
	return []string{obj.(*gardencorev1beta1.ControllerInstallation).Spec.RegistrationRef.Name}
}

// InstallationPredicate passes events of ControllerInstallations that name a registration.
func InstallationPredicate(ev function.Event) bool {
	if ev.Object == nil {
		return false
	}
	name, _, _ := unstructured.NestedString(ev.Object.Object, "spec", "registrationRef", "name")
	return name != ""
}

// MapInstallationToExtension maps a ControllerInstallation's event to the Extension of its
// registration, without a request: the Extension is in the runtime cluster, the installation in
// the garden, so whether its RequiredVirtual condition must change is the reconcile's to read.
// gardener-operator compares the installation's old and new Required condition, which one event
// cannot show.
func MapInstallationToExtension(_ context.Context, _ client.Reader, ev function.Event) ([]function.Key, error) {
	name, _, _ := unstructured.NestedString(ev.Object.Object, "spec", "registrationRef", "name")
	return []function.Key{{Name: name}}, nil
}

// Required says whether any of the installations is required (its Required condition is True).
func Required(installations []gardencorev1beta1.ControllerInstallation) bool {
	for _, installation := range installations {
		c := function.GetCondition(installation.Status.Conditions, gardencorev1beta1.ControllerInstallationRequired)
		if c != nil && c.Status == gardencorev1beta1.ConditionTrue {
			return true
		}
	}
	return false
}

// New builds the reconciler.
var New = required.NewReconciler(operatorv1alpha1.ExtensionRequiredVirtual, decide)

// decide lists the ControllerInstallations of the Extension's registration in the garden (by the
// field selector spec.registrationRef.name).
func decide(ctx context.Context, req function.Request, ext *operatorv1alpha1.Extension) (required.Verdict, error) {
	installations := &gardencorev1beta1.ControllerInstallationList{}
	if err := req.Source.List(ctx, installations, client.MatchingFields{RegistrationRefName: ext.Name}); err != nil {
		return required.Verdict{}, fmt.Errorf("error listing controllerinstallations: %w", err)
	}
	if Required(installations.Items) {
		return required.Verdict{Status: gardencorev1beta1.ConditionTrue, Reason: ReasonRequired, Message: MessageRequired}, nil
	}
	return required.Verdict{Status: gardencorev1beta1.ConditionFalse, Reason: ReasonNotRequired, Message: MessageNotRequired}, nil
}
