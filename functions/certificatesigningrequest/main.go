// Command certificatesigningrequest is GCM's CertificateSigningRequest controller as a Knative
// function: it auto-approves gardenlets' client certificate requests
// (pkg/controller/certificatesigningrequest).
package main

import (
	"github.com/gardener-knative/gardener-knative/pkg/controller/certificatesigningrequest"
	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func main() { function.Main(certificatesigningrequest.Function) }
