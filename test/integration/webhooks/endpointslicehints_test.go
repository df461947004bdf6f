package webhooks_test

import (
	"context"
	"testing"

	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/webhook/endpointslicehints"
)

// No component configuration enables the webhook: registered, it is served (as WEBHOOKS does).
func init() {
	register(endpointslicehints.Webhook, nil)
}

func hintedEndpoint(ip, zone string) discoveryv1.Endpoint {
	ep := discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptrTo(true)}}
	if zone != "" {
		ep.Zone = ptrTo(zone)
	}
	return ep
}

// considerLabel opts a Service's EndpointSlices in (the EndpointSlice controller copies the
// Service's labels to them).
const considerLabel = "endpoint-slice-hints.resources.gardener.cloud/consider"

// endpointSlice is a slice of an opted-in Service as the EndpointSlice controller writes it:
// endpoints in two zones and one without a zone, one of them with another zone's hint.
func endpointSlice(namespace string) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{GenerateName: "endpoint-slice-hints-", Namespace: namespace, Labels: map[string]string{considerLabel: "true"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{
			hintedEndpoint("10.1.2.3", "zone-a"),
			hintedEndpoint("10.1.2.4", "zone-b"),
			hintedEndpoint("10.1.2.5", ""),
		},
		Ports: []discoveryv1.EndpointPort{{Name: ptrTo("http"), Port: ptrTo[int32](8080)}},
	}
	s.Endpoints[1].Hints = &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: "zone-a"}}}
	return s
}

// createEndpointSlice creates s in the target until the test ends and returns it as stored.
func createEndpointSlice(t *testing.T, s *discoveryv1.EndpointSlice) *discoveryv1.EndpointSlice {
	t.Helper()
	require.NoError(t, target.Client.Create(context.Background(), s))
	t.Cleanup(func() { assert.NoError(t, target.Client.Delete(context.Background(), s)) })
	return storedEndpointSlice(t, s)
}

func storedEndpointSlice(t *testing.T, s *discoveryv1.EndpointSlice) *discoveryv1.EndpointSlice {
	t.Helper()
	stored := &discoveryv1.EndpointSlice{}
	require.NoError(t, target.Client.Get(context.Background(), client.ObjectKeyFromObject(s), stored))
	return stored
}

// zoneHints returns each endpoint's hinted zones (nil for none).
func zoneHints(s *discoveryv1.EndpointSlice) [][]string {
	var all [][]string
	for _, ep := range s.Endpoints {
		var zones []string
		if ep.Hints != nil {
			for _, z := range ep.Hints.ForZones {
				zones = append(zones, z.Name)
			}
		}
		all = append(all, zones)
	}
	return all
}

func probeEndpointSliceHints(namespace string) func(context.Context) bool {
	return func(ctx context.Context) bool {
		s := endpointSlice(namespace)
		return target.Client.Create(ctx, s, client.DryRunAll) == nil && s.Endpoints[0].Hints != nil
	}
}

func assertHintedSlice(t *testing.T, namespace string) {
	t.Helper()
	ctx := context.Background()
	s := createEndpointSlice(t, endpointSlice(namespace))
	assert.Equal(t, [][]string{{"zone-a"}, {"zone-b"}, nil}, zoneHints(s), "create")

	s.Endpoints = append(s.Endpoints, hintedEndpoint("10.1.2.6", "zone-c"))
	s.Endpoints[0].Hints = nil
	require.NoError(t, target.Client.Update(ctx, s))
	assert.Equal(t, [][]string{{"zone-a"}, {"zone-b"}, nil, {"zone-c"}}, zoneHints(storedEndpointSlice(t, s)), "update")

	notOptedIn := endpointSlice(namespace)
	delete(notOptedIn.Labels, considerLabel)
	assert.Equal(t, [][]string{nil, {"zone-a"}, nil}, zoneHints(createEndpointSlice(t, notOptedIn)), "slices of Services that did not opt in")
}

// Registered in a shoot (opt-in), it matches opted-in slices of kube-system and
// kubernetes-dashboard.
func TestEndpointSliceHintsInShoot(t *testing.T) {
	installRegistration(t, "shoot-opt-in/webhook-endpoint-slice-hints.yaml", "-shoot", probeEndpointSliceHints(metav1.NamespaceSystem))
	assertHintedSlice(t, metav1.NamespaceSystem)

	untouched := createEndpointSlice(t, endpointSlice(targetNamespace(t, nil)))
	assert.Equal(t, [][]string{nil, {"zone-a"}, nil}, zoneHints(untouched), "other namespaces")
}

// In the seed, the registration matches namespaces labelled gardener.cloud/role.
func TestEndpointSliceHintsInSeed(t *testing.T) {
	ns := targetNamespace(t, map[string]string{v1beta1constants.GardenRole: "test"})
	installRegistration(t, "seed-opt-in/webhook-endpoint-slice-hints.yaml", "-seed", probeEndpointSliceHints(ns))
	assertHintedSlice(t, ns)

	untouched := createEndpointSlice(t, endpointSlice(targetNamespace(t, nil)))
	assert.Equal(t, [][]string{nil, {"zone-a"}, nil}, zoneHints(untouched), "namespaces not Gardener's")
}
