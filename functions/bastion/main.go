// Command bastion is GCM's Bastion controller as a Knative function: it serves the
// CloudEvents of sources.Bastion on $PORT and deletes expired, rotten and orphaned Bastions.
package main

import (
	"github.com/gardener-knative/gardener-knative/pkg/controller/bastion"
	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func main() { function.Main(bastion.Function) }
