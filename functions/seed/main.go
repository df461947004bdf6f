// Command seed is GCM's Seed controller as a Knative function: seed namespaces and their shared
// secrets, the BackupBucketsReady and ExtensionsReady conditions, and the gardenlet lifecycle
// (pkg/controller/seed).
package main

import (
	"github.com/gardener-knative/gardener-knative/pkg/controller/seed"
	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func main() { function.Main(seed.Function) }
