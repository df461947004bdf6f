// Command namespacedcloudprofile is GCM's NamespacedCloudProfile controller as a Knative
// function: it keeps NamespacedCloudProfiles while Shoots use them, and merges their parent
// CloudProfile into their status (pkg/controller/namespacedcloudprofile).
package main

import (
	"github.com/gardener-knative/gardener-knative/pkg/controller/namespacedcloudprofile"
	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func main() { function.Main(namespacedcloudprofile.Function) }
