// Command health is GRM's health controller as a Knative function
// (pkg/controller/health).
package main

import (
	"github.com/gardener-knative/gardener-knative/pkg/controller/health"
	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func main() { function.Main(health.Function) }
