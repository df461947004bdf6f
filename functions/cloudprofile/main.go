// Command cloudprofile is GCM's CloudProfile controller as a Knative function: it keeps
// CloudProfiles while Shoots or NamespacedCloudProfiles use them, and their version
// classifications current (pkg/controller/cloudprofile).
package main

import (
	"github.com/gardener-knative/gardener-knative/pkg/controller/cloudprofile"
	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func main() { function.Main(cloudprofile.Function) }
