// Command garbagecollector is GRM's garbage collector as a Knative function
// (pkg/controller/garbagecollector).
package main

import (
	"github.com/gardener-knative/gardener-knative/pkg/controller/garbagecollector"
	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func main() { function.Main(garbagecollector.Function) }
