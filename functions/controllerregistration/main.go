// Command controllerregistration is GCM's ControllerRegistration controller as a Knative
// function: it decides which extensions each Seed needs and keeps its ControllerInstallations,
// the finalizers of ControllerRegistrations and Seeds, and the bindings of extension
// ClusterRoles (pkg/controller/controllerregistration).
package main

import (
	"github.com/gardener-knative/gardener-knative/pkg/controller/controllerregistration"
	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func main() { function.Main(controllerregistration.Function) }
