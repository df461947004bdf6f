// Command resource-manager serves GRM's admission and authorization webhooks at Gardener's
// paths on $PORT: those named in WEBHOOKS, else those its ResourceManagerConfiguration enables
// (see docs/webhooks.md).
package main

import (
	"github.com/gardener-knative/gardener-knative/pkg/webhook"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/crddeletionprotection"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/endpointslicehints"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/extensionvalidation"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/highavailabilityconfig"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/kubernetesservicehost"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/nodeagentauthorizer"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/podkubeapiserverloadbalancing"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/podschedulername"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/podtopologyspreadconstraints"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/projectedtokenmount"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/seccompprofile"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/systemcomponentsconfig"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/vpainplaceupdates"
)

// webhooks are all the webhooks the server knows.
var webhooks = []webhook.Constructor{
	highavailabilityconfig.Webhook,
	kubernetesservicehost.Webhook,
	projectedtokenmount.Webhook,
	podtopologyspreadconstraints.Webhook,
	systemcomponentsconfig.Webhook,
	endpointslicehints.Webhook,
	crddeletionprotection.Webhook,
	extensionvalidation.Webhook,
	nodeagentauthorizer.Webhook,
	podschedulername.Webhook,
	seccompprofile.Webhook,
	podkubeapiserverloadbalancing.Webhook,
	vpainplaceupdates.Webhook,
}

func main() { webhook.Main(webhooks) }
