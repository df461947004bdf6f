// Command webhookcertificates issues and rotates the webhook servers' serving certificates and
// injects their CA into every registration, as a Knative function
// (pkg/controller/webhookcertificates).
package main

import (
	"github.com/gardener-knative/gardener-knative/pkg/controller/webhookcertificates"
	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func main() { function.Main(webhookcertificates.Function) }
