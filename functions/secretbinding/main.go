// Command secretbinding is GCM's SecretBinding controller as a Knative function: it protects
// the Secrets and labels the Quotas SecretBindings reference, and keeps SecretBindings while
// Shoots use them (pkg/controller/secretbinding).
package main

import (
	"github.com/gardener-knative/gardener-knative/pkg/controller/secretbinding"
	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func main() { function.Main(secretbinding.Function) }
