// Command controllerdeployment is GCM's ControllerDeployment controller as a Knative function:
// it keeps ControllerDeployments while ControllerRegistrations use them
// (pkg/controller/controllerdeployment).
package main

import (
	"github.com/gardener-knative/gardener-knative/pkg/controller/controllerdeployment"
	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func main() { function.Main(controllerdeployment.Function) }
