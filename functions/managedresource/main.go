// Command managedresource is GRM's ManagedResource controller as a Knative function
// (pkg/controller/managedresource).
package main

import (
	"github.com/gardener-knative/gardener-knative/pkg/controller/managedresource"
	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func main() { function.Main(managedresource.Function) }
