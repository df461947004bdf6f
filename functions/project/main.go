// Command project is GCM's Project controller as a Knative function: it manages project
// namespaces, marks and deletes stale Projects, and records activity on them
// (pkg/controller/project).
package main

import (
	"github.com/gardener-knative/gardener-knative/pkg/controller/project"
	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func main() { function.Main(project.Function) }
