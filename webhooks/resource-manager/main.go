// Command resource-manager serves GRM's admission and authorization webhooks (the registry
// webhooks.All) at Gardener's paths on $PORT: those named in WEBHOOKS, else those its
// ResourceManagerConfiguration enables (see docs/webhooks.md).
package main

import (
	"github.com/gardener-knative/gardener-knative/pkg/webhook"
	"github.com/gardener-knative/gardener-knative/webhooks"
)

func main() { webhook.Main(webhooks.All) }
