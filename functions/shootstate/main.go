// Command shootstate is GCM's ShootState finalizer controller as a Knative function: it keeps
// ShootStates while their Shoot's control plane migrates to another seed (pkg/controller/shootstate).
package main

import (
	"github.com/gardener-knative/gardener-knative/pkg/controller/shootstate"
	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func main() { function.Main(shootstate.Function) }
