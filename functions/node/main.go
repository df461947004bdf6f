// Command node is GRM's Node controller as a Knative function (pkg/controller/node).
package main

import (
	"github.com/gardener-knative/gardener-knative/pkg/controller/node"
	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func main() { function.Main(node.Function) }
