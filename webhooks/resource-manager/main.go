// Command resource-manager serves GRM's admission and authorization webhooks at Gardener's
// paths on $PORT: those named in WEBHOOKS, else those its ResourceManagerConfiguration enables
// (see docs/webhooks.md).
package main

import (
	"github.com/gardener-knative/gardener-knative/pkg/webhook"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/kubernetesservicehost"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/nodeagentauthorizer"
)

func main() {
	webhook.Main([]webhook.Constructor{
		kubernetesservicehost.Webhook,
		nodeagentauthorizer.Webhook,
	})
}
