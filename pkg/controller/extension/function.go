// Package extension declares what gardener-operator does for operator.gardener.cloud/v1alpha1
// Extensions as one function hosting three reconcilers: Main (pkg/controller/extension/
// registration) keeps the ControllerRegistration and ControllerDeployment an Extension implies
// and its Installed condition; RequiredRuntime (required/runtime) and RequiredVirtual
// (required/virtual) keep the conditions of those names. As gardener-operator, it runs in the
// garden runtime cluster, where the Extensions are (its Target), and works on the garden, where
// their registrations and installations are (its Source; see docs/functions/extension.md).
package extension

import (
	"github.com/gardener-knative/gardener-knative/pkg/controller/extension/registration"
	requiredruntime "github.com/gardener-knative/gardener-knative/pkg/controller/extension/required/runtime"
	"github.com/gardener-knative/gardener-knative/pkg/controller/extension/required/virtual"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// Function is gardener-operator's Extension controllers.
var Function = &function.Function{
	Name:          "extension",
	Parts:         []function.Part{function.Runtime},
	WorksOnGarden: true,
	RBAC:          function.JoinRules(registration.RBAC, virtual.RBAC),
	TargetRBAC:    function.JoinRules(registration.TargetRBAC, requiredruntime.TargetRBAC, virtual.TargetRBAC),
	Reconcilers: []function.Reconciler{
		{Name: registration.ReconcilerName, For: kinds.Extension, Cluster: function.Target, New: registration.New},
		{Name: requiredruntime.ReconcilerName, For: kinds.Extension, Cluster: function.Target, New: requiredruntime.New},
		{Name: virtual.ReconcilerName, For: kinds.Extension, Cluster: function.Target, New: virtual.New},
	},
	Watches: concat(registration.Watches, requiredruntime.Watches(), virtual.Watches()),
	Sweeps:  concat(registration.Sweeps, requiredruntime.Sweeps(), virtual.Sweeps),
}

func concat[T any](parts ...[]T) []T {
	var all []T
	for _, p := range parts {
		all = append(all, p...)
	}
	return all
}
