// Command exposureclass is GCM's ExposureClass controller as a Knative function: it keeps
// ExposureClasses while Shoots use them (pkg/controller/exposureclass).
package main

import (
	"github.com/gardener-knative/gardener-knative/pkg/controller/exposureclass"
	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func main() { function.Main(exposureclass.Function) }
