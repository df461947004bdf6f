// Command csrapprover is GRM's CertificateSigningRequest approver as a Knative function
// (pkg/controller/csrapprover).
package main

import (
	"github.com/gardener-knative/gardener-knative/pkg/controller/csrapprover"
	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func main() { function.Main(csrapprover.Function) }
