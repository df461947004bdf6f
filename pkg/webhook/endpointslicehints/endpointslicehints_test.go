package endpointslicehints

import (
	"context"
	"fmt"
	"testing"

	rmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/webhook"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/webhooktest"
)

func endpoint(ip string, zone *string, hints *discoveryv1.EndpointHints) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}, Zone: zone, Hints: hints}
}

func forZones(zones ...string) *discoveryv1.EndpointHints {
	h := &discoveryv1.EndpointHints{}
	for _, z := range zones {
		h.ForZones = append(h.ForZones, discoveryv1.ForZone{Name: z})
	}
	return h
}

// slice has zoned endpoints without hints, with other zones' hints (as the EndpointSlice
// controller's proportional allocation assigns them) and with node hints, and endpoints
// without a zone.
func slice() *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		TypeMeta:    metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"},
		ObjectMeta:  metav1.ObjectMeta{Name: "example-hints", Namespace: "ns"},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{
			endpoint("10.1.2.3", ptr.To("zone-a"), nil),
			endpoint("10.1.2.4", ptr.To("zone-b"), forZones("zone-a", "zone-c")),
			endpoint("10.1.2.5", ptr.To("zone-c"), &discoveryv1.EndpointHints{ForNodes: []discoveryv1.ForNode{{Name: "node-1"}}}),
			endpoint("10.1.2.6", nil, nil),
			endpoint("10.1.2.7", ptr.To(""), forZones("zone-a")),
		},
	}
}

func TestHintsAreTheEndpointsZone(t *testing.T) {
	for _, op := range []admissionv1.Operation{admissionv1.Create, admissionv1.Update} {
		t.Run(string(op), func(t *testing.T) {
			var old runtime.Object
			if op == admissionv1.Update {
				old = slice()
			}
			out := &discoveryv1.EndpointSlice{}
			webhooktest.Mutate(t, Handler(), webhooktest.Request(t, op, slice(), old), out)
			require.Len(t, out.Endpoints, 5)
			assert.Equal(t, forZones("zone-a"), out.Endpoints[0].Hints)
			assert.Equal(t, forZones("zone-b"), out.Endpoints[1].Hints, "other zones' hints are replaced")
			assert.Equal(t, forZones("zone-c"), out.Endpoints[2].Hints, "node hints are replaced")
			assert.Nil(t, out.Endpoints[3].Hints, "no zone, no hints")
			assert.Equal(t, forZones("zone-a"), out.Endpoints[4].Hints, "an empty zone is no zone: hints stay")
			assert.Equal(t, slice().Endpoints[0].Addresses, out.Endpoints[0].Addresses)
		})
	}
}

func TestNoPatchWhenHintsAreRight(t *testing.T) {
	s := slice()
	s.Endpoints = []discoveryv1.Endpoint{endpoint("10.1.2.3", ptr.To("zone-a"), forZones("zone-a")), endpoint("10.1.2.6", nil, nil)}
	resp := webhooktest.Mutate(t, Handler(), webhooktest.Request(t, admissionv1.Create, s, nil), &discoveryv1.EndpointSlice{})
	assert.Empty(t, resp.Patches)
}

// A zone hint alongside node hints is not "exactly the zone": the node hints go.
func TestNodeHintsBesideTheZoneAreReplaced(t *testing.T) {
	s := slice()
	s.Endpoints = []discoveryv1.Endpoint{endpoint("10.1.2.3", ptr.To("zone-a"), &discoveryv1.EndpointHints{
		ForZones: []discoveryv1.ForZone{{Name: "zone-a"}}, ForNodes: []discoveryv1.ForNode{{Name: "node-1"}},
	})}
	out := &discoveryv1.EndpointSlice{}
	webhooktest.Mutate(t, Handler(), webhooktest.Request(t, admissionv1.Create, s, nil), out)
	assert.Equal(t, forZones("zone-a"), out.Endpoints[0].Hints)
}

func TestUndecodableObjectIsAnError(t *testing.T) {
	req := webhooktest.Request(t, admissionv1.Create, slice(), nil)
	req.Object.Raw = []byte(`{"endpoints":"not a list"}`)
	resp := Handler().Handle(context.Background(), req)
	assert.False(t, resp.Allowed)
	assert.Equal(t, int32(400), resp.Result.Code)
}

func TestEmptySlice(t *testing.T) {
	s := slice()
	s.Endpoints = nil
	resp := webhooktest.Mutate(t, Handler(), webhooktest.Request(t, admissionv1.Create, s, nil), &discoveryv1.EndpointSlice{})
	assert.Empty(t, resp.Patches)
}

func TestConstructor(t *testing.T) {
	assert.False(t, Webhook.Enabled(&componentconfig.ResourceManagerFile{ResourceManagerConfiguration: &rmv1alpha1.ResourceManagerConfiguration{}}), "no configuration enables it; WEBHOOKS does")
	wh, err := Webhook.New(webhook.Deps{Log: webhooktest.Log})
	require.NoError(t, err)
	assert.Equal(t, Path, wh.Path)
	assert.Equal(t, Name, wh.Name)
}

func FuzzEndpointSliceHints(f *testing.F) {
	webhooktest.FuzzAdmission(f, webhook.Admission(Name, Path, Handler(), webhooktest.Log),
		webhooktest.AdmissionReview(f, webhooktest.Request(f, admissionv1.Create, slice(), nil)),
		webhooktest.AdmissionReview(f, webhooktest.Request(f, admissionv1.Update, slice(), slice())))
}

// BenchmarkEndpointSliceHints reviews an update of a slice of 100 endpoints in 3 zones, as
// the EndpointSlice controller writes them.
func BenchmarkEndpointSliceHints(b *testing.B) {
	s := slice()
	s.Endpoints = nil
	for i := range 100 {
		zone := []string{"zone-a", "zone-b", "zone-c"}[i%3]
		s.Endpoints = append(s.Endpoints, endpoint(fmt.Sprintf("10.1.%d.%d", i/250, i%250+1), &zone, nil))
	}
	req := webhooktest.Request(b, admissionv1.Update, s, s)
	h := Handler()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if resp := h.Handle(ctx, req); len(resp.Patches) == 0 {
			b.Fatal("no patch")
		}
	}
}
