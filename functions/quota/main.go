// Command quota is GCM's Quota controller as a Knative function: it keeps Quotas while
// SecretBindings or CredentialsBindings use them (pkg/controller/quota).
package main

import (
	"github.com/gardener-knative/gardener-knative/pkg/controller/quota"
	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func main() { function.Main(quota.Function) }
