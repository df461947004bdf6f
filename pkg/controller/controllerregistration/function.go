// Package controllerregistration declares GCM's ControllerRegistration controller as one
// function hosting its reconcilers: the "main" seed reconciler (pkg/.../seed), which decides
// each Seed's ControllerInstallations; the ControllerRegistration and Seed finalizers
// (controllerregistrationfinalizer, seedfinalizer); and the extension ClusterRole reconciler
// (extensionclusterrole).
package controllerregistration

import (
	"github.com/gardener-knative/gardener-knative/pkg/controller/controllerregistration/controllerregistrationfinalizer"
	"github.com/gardener-knative/gardener-knative/pkg/controller/controllerregistration/extensionclusterrole"
	"github.com/gardener-knative/gardener-knative/pkg/controller/controllerregistration/seed"
	"github.com/gardener-knative/gardener-knative/pkg/controller/controllerregistration/seedfinalizer"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// Function is GCM's ControllerRegistration controller. Gardener's only setting for it,
// controllers.controllerRegistration.concurrentSyncs, is Knative's concurrency here, so it has
// no configuration of its own.
var Function = &function.Function{
	Name:          "controllerregistration",
	Parts:         []function.Part{function.Runtime},
	WorksOnGarden: true,
	RBAC:          function.JoinRules(seed.RBAC, controllerregistrationfinalizer.RBAC, seedfinalizer.RBAC, extensionclusterrole.RBAC),
	Reconcilers: []function.Reconciler{
		{Name: seed.ReconcilerName, For: kinds.Seed, New: seed.New},
		{Name: seed.AllSeedsReconcilerName, For: kinds.ControllerRegistration, New: seed.NewAllSeeds},
		controllerregistrationfinalizer.Reconciler,
		seedfinalizer.Reconciler,
		extensionclusterrole.Declaration,
	},
	Watches: concat(seed.Watches, controllerregistrationfinalizer.Watches, seedfinalizer.Watches, extensionclusterrole.Watches),
	Sweeps: []function.Sweep{
		seed.Sweep,
		controllerregistrationfinalizer.Sweep,
		seedfinalizer.Sweep,
		extensionclusterrole.Sweep,
	},
}

func concat(parts ...[]function.Watch) []function.Watch {
	var all []function.Watch
	for _, p := range parts {
		all = append(all, p...)
	}
	return all
}
