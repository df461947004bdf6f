// Package endpointslicehints pins every zoned endpoint of an EndpointSlice to its own zone
// (hints.forZones = [its zone]), so that kube-proxy routes topology-aware traffic
// deterministically to endpoints in the client's zone (GRM's endpoint-slice-hints webhook;
// see kubernetes/kubernetes#113731 for why the built-in hints are not enough).
package endpointslicehints

import (
	"context"
	"net/http"
	"strconv"

	"gomodules.xyz/jsonpatch/v2"
	discoveryv1 "k8s.io/api/discovery/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/webhook"
)

const (
	// Name is the webhook's name.
	Name = "endpoint-slice-hints"
	// Path is where Gardener served it.
	Path = "/webhooks/endpoint-slice-hints"
)

// Webhook is the constructor the server registers. Gardener's component configuration no
// longer has a section for this webhook (Gardener dropped it), so it is never enabled by the
// configuration: name it in WEBHOOKS to serve it.
var Webhook = webhook.Constructor{
	Name:    Name,
	Enabled: func(*componentconfig.ResourceManagerFile) bool { return false },
	New: func(deps webhook.Deps) (webhook.Webhook, error) {
		return webhook.Admission(Name, Path, Handler(), deps.Log), nil
	},
}

// Handler replaces the hints of every endpoint that has a zone with exactly that zone;
// endpoints without a zone keep theirs. It writes the JSON patch itself, one operation per
// endpoint to change, instead of diffing the re-encoded slice: the EndpointSlice controller
// writes slices of up to 100 endpoints on every endpoint change, and the generic diff of
// such a slice allocates eight times as much and takes several times as long (see
// docs/webhooks/endpoint-slice-hints.md).
func Handler() admission.Handler {
	return admission.HandlerFunc(func(_ context.Context, req admission.Request) admission.Response {
		slice := &discoveryv1.EndpointSlice{}
		if _, err := webhook.Decode(req, slice); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		var ops []jsonpatch.JsonPatchOperation
		for i, ep := range slice.Endpoints {
			if ep.Zone == nil || *ep.Zone == "" || hintsOnlyFor(ep.Hints, *ep.Zone) {
				continue
			}
			// "add" sets the member whether or not it exists (RFC 6902, 4.1).
			ops = append(ops, jsonpatch.NewOperation("add", "/endpoints/"+strconv.Itoa(i)+"/hints",
				discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: *ep.Zone}}}))
		}
		return admission.Patched("", ops...)
	})
}

// hintsOnlyFor says whether hints are already exactly {forZones: [zone]}.
func hintsOnlyFor(hints *discoveryv1.EndpointHints, zone string) bool {
	return hints != nil && len(hints.ForNodes) == 0 && len(hints.ForZones) == 1 && hints.ForZones[0].Name == zone
}
