// Command event is GCM's Event controller as a Knative function: it deletes Events that are not
// about Shoots once they outlive ttlNonShootEvents (pkg/controller/event).
package main

import (
	"github.com/gardener-knative/gardener-knative/pkg/controller/event"
	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func main() { function.Main(event.Function) }
