// Command shootcabundle keeps the shoots' webhook registrations trusting the seed's webhook
// servers, as a Knative function (pkg/controller/shootcabundle).
package main

import (
	"github.com/gardener-knative/gardener-knative/pkg/controller/shootcabundle"
	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func main() { function.Main(shootcabundle.Function) }
