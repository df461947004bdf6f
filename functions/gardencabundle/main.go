// Command gardencabundle carries the runtime part's serving certificates' bundles into its
// webhook registrations in the garden, as a Knative function (pkg/controller/gardencabundle).
package main

import (
	"github.com/gardener-knative/gardener-knative/pkg/controller/gardencabundle"
	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func main() { function.Main(gardencabundle.Function) }
