// Command tokeninvalidator is GRM's TokenInvalidator controller as a Knative function
// (pkg/controller/tokeninvalidator).
package main

import (
	"github.com/gardener-knative/gardener-knative/pkg/controller/tokeninvalidator"
	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func main() { function.Main(tokeninvalidator.Function) }
