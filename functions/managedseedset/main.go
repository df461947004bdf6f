// Command managedseedset is GCM's ManagedSeedSet controller as a Knative function: it keeps a
// ManagedSeedSet's replicas (Shoot, ManagedSeed, Seed) at its replica count
// (pkg/controller/managedseedset).
package main

import (
	"github.com/gardener-knative/gardener-knative/pkg/controller/managedseedset"
	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func main() { function.Main(managedseedset.Function) }
