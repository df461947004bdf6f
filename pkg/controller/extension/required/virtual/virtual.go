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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
// and ControllerInstallations whose Required condition disagrees with their Extension's
// RequiredVirtual condition.
func Watches() []function.Watch {
	return []function.Watch{
		{Kind: kinds.Extension, Reconciler: ReconcilerName, Predicate: func(ev function.Event) bool { return ev.Created }},
		{Kind: kinds.ControllerInstallation, Reconciler: ReconcilerName, Predicate: InstallationPredicate, Map: MapInstallationToExtension},
	}
}

// Sweeps is the resync: every Extension against one LIST of ControllerInstallations.
var Sweeps = []function.Sweep{{
	Name:       SweepName,
	Schedule:   "*/10 * * * *",
	Reconciler: ReconcilerName,
	Primary:    function.List{Kind: kinds.Extension},
	Related: []function.List{{
		Kind:    kinds.ControllerInstallation,
		Indexes: map[string]function.IndexFunc{RegistrationRefName: registrationRefName},
	}},
}}

// RBAC is what the reconciler does in the garden.
var RBAC = []rbacv1.PolicyRule{
	{APIGroups: []string{operatorv1alpha1.SchemeGroupVersion.Group}, Resources: []string{"extensions"}, Verbs: []string{"get", "list"}},
	{APIGroups: []string{operatorv1alpha1.SchemeGroupVersion.Group}, Resources: []string{"extensions/status"}, Verbs: []string{"patch"}},
	{APIGroups: []string{gardencorev1beta1.SchemeGroupVersion.Group}, Resources: []string{"controllerinstallations"}, Verbs: []string{"list"}},
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
// registration when the Extension's RequiredVirtual condition may have to change: it is missing,
// or the installation says required while the Extension says not (or the other way round, which
// the reconcile settles with the other installations). One GET of the Extension; gardener-operator
// compares the installation's old and new Required condition, which one event cannot show.
func MapInstallationToExtension(ctx context.Context, reader client.Reader, ev function.Event) ([]function.Key, error) {
	name, _, _ := unstructured.NestedString(ev.Object.Object, "spec", "registrationRef", "name")
	ext := &operatorv1alpha1.Extension{}
	if err := reader.Get(ctx, client.ObjectKey{Name: name}, ext); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	installationRequired := !ev.Deleted && requiredInUnstructured(ev.Object)
	condition := function.GetCondition(ext.Status.Conditions, operatorv1alpha1.ExtensionRequiredVirtual)
	if condition == nil || (condition.Status == gardencorev1beta1.ConditionTrue) != installationRequired {
		return []function.Key{{Name: name}}, nil
	}
	return nil, nil
}

func requiredInUnstructured(obj *unstructured.Unstructured) bool {
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conditions {
		m, _ := c.(map[string]any)
		if m["type"] == string(gardencorev1beta1.ControllerInstallationRequired) {
			return m["status"] == string(gardencorev1beta1.ConditionTrue)
		}
	}
	return false
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

// decide lists the ControllerInstallations of the Extension's registration (by the field
// selector spec.registrationRef.name).
func decide(ctx context.Context, reader client.Reader, ext *operatorv1alpha1.Extension) (required.Verdict, error) {
	installations := &gardencorev1beta1.ControllerInstallationList{}
	if err := reader.List(ctx, installations, client.MatchingFields{RegistrationRefName: ext.Name}); err != nil {
		return required.Verdict{}, fmt.Errorf("error listing controllerinstallations: %w", err)
	}
	if Required(installations.Items) {
		return required.Verdict{Status: gardencorev1beta1.ConditionTrue, Reason: ReasonRequired, Message: MessageRequired}, nil
	}
	return required.Verdict{Status: gardencorev1beta1.ConditionFalse, Reason: ReasonNotRequired, Message: MessageNotRequired}, nil
}
