// Command extension is gardener-operator's Extension controllers as a Knative function: it keeps
// the ControllerRegistration and ControllerDeployment each Extension implies and the Extension's
// conditions (pkg/controller/extension).
package main

import (
	"github.com/gardener-knative/gardener-knative/pkg/controller/extension"
	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func main() { function.Main(extension.Function) }
