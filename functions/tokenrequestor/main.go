// Command tokenrequestor is GRM's TokenRequestor controller as a Knative function
// (pkg/controller/tokenrequestor).
package main

import (
	"github.com/gardener-knative/gardener-knative/pkg/controller/tokenrequestor"
	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func main() { function.Main(tokenrequestor.Function) }
