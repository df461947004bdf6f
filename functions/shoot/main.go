// Command shoot is GCM's Shoot controller as a Knative function, hosting its reconcilers
// (pkg/controller/shoot).
package main

import (
	"github.com/gardener-knative/gardener-knative/pkg/controller/shoot"
	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func main() { function.Main(shoot.Function) }
