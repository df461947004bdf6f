// Command networkpolicy is GRM's NetworkPolicy controller as a Knative function
// (pkg/controller/networkpolicy).
package main

import (
	"github.com/gardener-knative/gardener-knative/pkg/controller/networkpolicy"
	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func main() { function.Main(networkpolicy.Function) }
