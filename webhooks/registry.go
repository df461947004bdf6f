// Package webhooks is the registry of GRM's webhooks: every webhook the server knows, once.
// Its subfolder resource-manager is the server's main package; hack/webhookload measures the
// same list.
package webhooks

import (
	"github.com/gardener-knative/gardener-knative/pkg/webhook"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/crddeletionprotection"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/endpointslicehints"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/extensionregistration"
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
	"github.com/gardener-knative/gardener-knative/pkg/webhook/tokeninvalidator"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/vpainplaceupdates"
)

// All are all the webhooks the server knows.
var All = []webhook.Constructor{
	highavailabilityconfig.Webhook,
	kubernetesservicehost.Webhook,
	projectedtokenmount.Webhook,
	tokeninvalidator.Webhook,
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
	extensionregistration.Webhook,
}
