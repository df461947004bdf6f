// Command controllerinstallation is gardenlet's ControllerInstallation controller as a Knative
// function on two clusters: it installs the ControllerInstallations of one seed (SEED_NAME) from
// the garden (KUBECONFIG) as Helm releases on the seed (TARGET_KUBECONFIG)
// (pkg/controller/controllerinstallation).
package main

import (
	"github.com/gardener-knative/gardener-knative/pkg/controller/controllerinstallation"
	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func main() { function.Main(controllerinstallation.Function) }
