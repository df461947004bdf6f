// Command bastion is GCM's Bastion controller as a Knative function: it deletes expired, rotten
// and orphaned Bastions (pkg/controller/bastion).
package main

import (
	"github.com/gardener-knative/gardener-knative/pkg/controller/bastion"
	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func main() { function.Main(bastion.Function) }
