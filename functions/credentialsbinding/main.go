// Command credentialsbinding is GCM's CredentialsBinding controller as a Knative function: it
// protects the credentials and labels the Quotas CredentialsBindings reference, and keeps
// CredentialsBindings while Shoots use them (pkg/controller/credentialsbinding).
package main

import (
	"github.com/gardener-knative/gardener-knative/pkg/controller/credentialsbinding"
	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func main() { function.Main(credentialsbinding.Function) }
