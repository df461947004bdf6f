package managedresource_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	rmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/networkpolicy"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
)

// handledLabel marks the namespaces whose Services the function serves in these tests
// (controllers.networkPolicy.namespaceSelectors), so that its sweeps leave the Services of the
// suite's other tests alone.
const handledLabel = "networkpolicy-test"

func networkPolicyConfig(ingress *rmv1alpha1.IngressControllerSelector) *networkpolicy.Config {
	return &networkpolicy.Config{
		Enabled:                   true,
		NamespaceSelectors:        []metav1.LabelSelector{{MatchLabels: map[string]string{handledLabel: "handled"}}},
		IngressControllerSelector: ingress,
	}
}

// npNamespace creates a namespace of the seed with labels (and the handled label when asked).
func npNamespace(t testing.TB, handled bool, labels map[string]string) *corev1.Namespace {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "np-", Labels: map[string]string{}}}
	for k, v := range labels {
		ns.Labels[k] = v
	}
	if handled {
		ns.Labels[handledLabel] = "handled"
	}
	require.NoError(t, seed.Client.Create(context.Background(), ns))
	return ns
}

// npService creates a Service selecting app=name with the given TCP ports (target port = port +
// 1000) and annotations.
func npService(t testing.TB, namespace, name string, annotations map[string]string, ports ...int32) *corev1.Service {
	t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Annotations: annotations},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": name}},
	}
	for _, p := range ports {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: fmt.Sprintf("p%d", p), Port: p, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(p + 1000)})
	}
	require.NoError(t, seed.Client.Create(context.Background(), svc))
	return svc
}

// policiesOf lists the policies that name the Service, as "<namespace>/<name>".
func policiesOf(t testing.TB, svc *corev1.Service) []string {
	t.Helper()
	list := &networkingv1.NetworkPolicyList{}
	require.NoError(t, seed.Client.List(context.Background(), list, client.MatchingLabels{
		resourcesv1alpha1.NetworkingServiceName: svc.Name, resourcesv1alpha1.NetworkingServiceNamespace: svc.Namespace,
	}))
	var out []string
	for _, p := range list.Items {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	slices.Sort(out)
	return out
}

func selectorsFor(labels map[string]string) string {
	return fmt.Sprintf(`[{"matchLabels":{%q:%q}}]`, keyOf(labels), labels[keyOf(labels)])
}

func keyOf(m map[string]string) string {
	for k := range m {
		return k
	}
	return ""
}

func writes(counts map[string]int) int {
	return counts["create"] + counts["patch"] + counts["update"] + counts["delete"]
}

// An annotated Service gets its pairs in its namespace and in the namespace its selector
// selects; an event that changes nothing writes nothing; the pairs of the selected namespace go
// with the annotation, all of them with the Service; the resync restores a deleted policy.
func TestNetworkPolicyService(t *testing.T) {
	ctx := context.Background()
	h := functiontest.New(t, seed, networkpolicy.Function, functiontest.AsFunction(), functiontest.WithConfig(networkPolicyConfig(nil)))
	a := npNamespace(t, true, nil)
	peerLabels := map[string]string{"peer-of": a.Name}
	b := npNamespace(t, false, peerLabels)
	svc := npService(t, a.Name, "web", map[string]string{resourcesv1alpha1.NetworkingNamespaceSelectors: selectorsFor(peerLabels)}, 80)
	h.Send("add", svc)

	all := []string{
		a.Name + "/egress-to-web-tcp-1080", a.Name + "/ingress-to-web-tcp-1080", a.Name + "/ingress-to-web-tcp-1080-from-" + b.Name,
		b.Name + "/egress-to-" + a.Name + "-web-tcp-1080",
	}
	slices.Sort(all)
	assert.Equal(t, all, policiesOf(t, svc))
	egress := &networkingv1.NetworkPolicy{}
	require.NoError(t, seed.Client.Get(ctx, client.ObjectKey{Namespace: b.Name, Name: "egress-to-" + a.Name + "-web-tcp-1080"}, egress))
	assert.Equal(t, map[string]string{"networking.resources.gardener.cloud/to-" + a.Name + "-web-tcp-1080": "allowed"}, egress.Spec.PodSelector.MatchLabels)
	assert.Equal(t, &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: a.Name}}, egress.Spec.Egress[0].To[0].NamespaceSelector)
	assert.Equal(t, intstr.FromInt32(1080), *egress.Spec.Egress[0].Ports[0].Port, "the target port")

	noop := h.Measure(func() { h.Send("update", svc) })
	assert.Zero(t, writes(noop), "nothing changed, nothing written: %v", noop)

	// A policy deleted behind the function's back: the resync restores it.
	require.NoError(t, seed.Client.Delete(ctx, egress))
	h.Sweep("resync")
	assert.Equal(t, all, policiesOf(t, svc))
	quiet := h.Measure(func() { h.Sweep("resync") })
	assert.Zero(t, writes(quiet)+quiet["get"], "a resync with nothing to do reads its lists only: %v", quiet)

	// Without the annotation, the cross-namespace pair goes.
	delete(svc.Annotations, resourcesv1alpha1.NetworkingNamespaceSelectors)
	require.NoError(t, seed.Client.Update(ctx, svc))
	h.Send("update", svc)
	assert.Equal(t, []string{a.Name + "/egress-to-web-tcp-1080", a.Name + "/ingress-to-web-tcp-1080"}, policiesOf(t, svc))

	require.NoError(t, seed.Client.Delete(ctx, svc))
	h.Send("delete", svc)
	assert.Empty(t, policiesOf(t, svc))
}

// A namespace that gains the label a Service selects gets the Service's pairs on its event, and
// loses them when the label goes (its event carries no old labels: the policies in it say which
// Services to reconcile). A Service of a namespace that is not handled gets none.
func TestNetworkPolicyNamespaceLabels(t *testing.T) {
	ctx := context.Background()
	h := functiontest.New(t, seed, networkpolicy.Function, functiontest.AsFunction(), functiontest.WithConfig(networkPolicyConfig(nil)))
	a := npNamespace(t, true, nil)
	peerLabels := map[string]string{"reaches": a.Name}
	svc := npService(t, a.Name, "db", map[string]string{resourcesv1alpha1.NetworkingNamespaceSelectors: selectorsFor(peerLabels)}, 5432)
	h.Send("add", svc)
	require.Len(t, policiesOf(t, svc), 2)

	b := npNamespace(t, false, nil)
	b.Labels["reaches"] = a.Name
	require.NoError(t, seed.Client.Update(ctx, b))
	h.Send("update", b)
	assert.Contains(t, policiesOf(t, svc), b.Name+"/egress-to-"+a.Name+"-db-tcp-6432")
	assert.Len(t, policiesOf(t, svc), 4)

	delete(b.Labels, "reaches")
	require.NoError(t, seed.Client.Update(ctx, b))
	h.Send("update", b)
	assert.Len(t, policiesOf(t, svc), 2)

	unhandled := npNamespace(t, false, nil)
	other := npService(t, unhandled.Name, "db", nil, 5432)
	h.Send("add", other)
	assert.Empty(t, policiesOf(t, other))
}

// The namespace alias replaces the Service's namespace in the pod label, from-<alias>-allowed-
// ports adds pairs selected by the alias alone, and from-world-to-ports one ingress policy from
// everywhere; a desired policy that exists without the function's labels is taken over.
func TestNetworkPolicyAliasAllowedPortsAndFromWorld(t *testing.T) {
	ctx := context.Background()
	h := functiontest.New(t, seed, networkpolicy.Function, functiontest.AsFunction(), functiontest.WithConfig(networkPolicyConfig(nil)))
	a := npNamespace(t, true, nil)
	peerLabels := map[string]string{"scrapes": a.Name}
	b := npNamespace(t, false, peerLabels)
	require.NoError(t, seed.Client.Create(ctx, &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: a.Name, Name: "ingress-to-api-from-world", Labels: map[string]string{"someone": "else"}},
		Spec:       networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}},
	}))
	svc := npService(t, a.Name, "api", map[string]string{
		resourcesv1alpha1.NetworkingNamespaceSelectors:                      selectorsFor(peerLabels),
		resourcesv1alpha1.NetworkingPodLabelSelectorNamespaceAlias:          "all-apis",
		"networking.resources.gardener.cloud/from-prometheus-allowed-ports": `[{"port":9090,"protocol":"TCP"}]`,
		resourcesv1alpha1.NetworkingFromWorldToPorts:                        `[{"port":443,"protocol":"TCP"}]`,
	}, 443)
	h.Send("add", svc)

	got := policiesOf(t, svc)
	for _, want := range []string{
		b.Name + "/egress-to-" + a.Name + "-api-tcp-1443",
		a.Name + "/ingress-to-api-tcp-9090-via-prometheus",
		b.Name + "/egress-to-" + a.Name + "-api-tcp-9090-via-prometheus",
		a.Name + "/ingress-to-api-from-world",
	} {
		assert.Contains(t, got, want)
	}
	assert.Len(t, got, 9, "two pairs per port and namespace, and one from the world")

	egress := &networkingv1.NetworkPolicy{}
	require.NoError(t, seed.Client.Get(ctx, client.ObjectKey{Namespace: b.Name, Name: "egress-to-" + a.Name + "-api-tcp-1443"}, egress))
	assert.Equal(t, map[string]string{"networking.resources.gardener.cloud/to-all-apis-api-tcp-1443": "allowed"}, egress.Spec.PodSelector.MatchLabels)
	require.NoError(t, seed.Client.Get(ctx, client.ObjectKey{Namespace: b.Name, Name: "egress-to-" + a.Name + "-api-tcp-9090-via-prometheus"}, egress))
	assert.Equal(t, map[string]string{"networking.resources.gardener.cloud/to-all-apis-prometheus": "allowed"}, egress.Spec.PodSelector.MatchLabels)

	world := &networkingv1.NetworkPolicy{}
	require.NoError(t, seed.Client.Get(ctx, client.ObjectKey{Namespace: a.Name, Name: "ingress-to-api-from-world"}, world))
	assert.Equal(t, "else", world.Labels["someone"], "taken over, foreign labels kept")
	assert.Equal(t, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}, world.Spec.PolicyTypes)
	require.Len(t, world.Spec.Ingress, 1)
	assert.Len(t, world.Spec.Ingress[0].From, 3, "all pods, every IPv4 and IPv6 address")
	assert.Equal(t, intstr.FromInt32(443), *world.Spec.Ingress[0].Ports[0].Port)
}

// With an ingress controller configured, an Ingress routing to a Service's port gets the pair
// for the ingress controller on its target port; when the Ingress stops routing to it, the pair
// goes (the update's mapper finds it from the policies).
func TestNetworkPolicyIngress(t *testing.T) {
	ctx := context.Background()
	controller := npNamespace(t, false, nil)
	h := functiontest.New(t, seed, networkpolicy.Function, functiontest.AsFunction(), functiontest.WithConfig(networkPolicyConfig(&rmv1alpha1.IngressControllerSelector{
		Namespace: controller.Name, PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "nginx"}},
	})))
	a := npNamespace(t, true, nil)
	svc := npService(t, a.Name, "shop", nil, 80, 443)
	prefix := networkingv1.PathTypePrefix
	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: a.Name, Name: "shop"},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: "shop.example.com", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
			Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &prefix, Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "shop", Port: networkingv1.ServiceBackendPort{Name: "p443"}}}}},
		}}}}},
	}
	require.NoError(t, seed.Client.Create(ctx, ing))
	h.Send("add", ing)

	got := policiesOf(t, svc)
	assert.Contains(t, got, a.Name+"/ingress-to-shop-tcp-1443-from-ingress-controller")
	assert.Contains(t, got, controller.Name+"/egress-to-"+a.Name+"-shop-tcp-1443-from-ingress-controller")
	assert.Len(t, got, 6, "two pairs of the Service's ports, one for the ingress controller")
	ingress := &networkingv1.NetworkPolicy{}
	require.NoError(t, seed.Client.Get(ctx, client.ObjectKey{Namespace: a.Name, Name: "ingress-to-shop-tcp-1443-from-ingress-controller"}, ingress))
	assert.Equal(t, networkingv1.NetworkPolicyPeer{
		PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nginx"}},
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: controller.Name}},
	}, ingress.Spec.Ingress[0].From[0])

	ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Name = "elsewhere"
	require.NoError(t, seed.Client.Update(ctx, ing))
	h.Send("update", ing)
	assert.Len(t, policiesOf(t, svc), 4)
}

// The policies of a Service deleted while its events were lost are deleted by the orphans
// sweep.
func TestNetworkPolicyOrphans(t *testing.T) {
	ctx := context.Background()
	h := functiontest.New(t, seed, networkpolicy.Function, functiontest.AsFunction(), functiontest.WithConfig(networkPolicyConfig(nil)))
	a := npNamespace(t, true, nil)
	svc := npService(t, a.Name, "gone", nil, 80)
	h.Send("add", svc)
	require.Len(t, policiesOf(t, svc), 2)
	require.NoError(t, seed.Client.Delete(ctx, svc))
	h.Sweep("orphans")
	assert.Empty(t, policiesOf(t, svc))
}

// BenchmarkNetworkPolicy10Ports3Selectors reconciles a Service with 10 ports whose 3 namespace
// selectors select one namespace each, on its creation event (80 policies) and again with
// nothing changed. Reported: requests by verb of both.
func BenchmarkNetworkPolicy10Ports3Selectors(b *testing.B) {
	h := functiontest.New(b, seed, networkpolicy.Function, functiontest.AsFunction(), functiontest.WithConfig(networkPolicyConfig(nil)))
	var first, noop map[string]int
	var firstTime, noopTime time.Duration
	for b.Loop() {
		a := npNamespace(b, true, nil)
		selectors := "["
		for i := range 3 {
			peer := npNamespace(b, false, map[string]string{"bench-peer": fmt.Sprintf("%s-%d", a.Name, i)})
			if i > 0 {
				selectors += ","
			}
			selectors += fmt.Sprintf(`{"matchLabels":{"bench-peer":%q}}`, peer.Labels["bench-peer"])
		}
		ports := make([]int32, 10)
		for i := range ports {
			ports[i] = int32(8080 + i)
		}
		svc := npService(b, a.Name, "bench", map[string]string{resourcesv1alpha1.NetworkingNamespaceSelectors: selectors + "]"}, ports...)
		start := time.Now()
		first = h.Measure(func() { h.Send("add", svc) })
		firstTime += time.Since(start)
		start = time.Now()
		noop = h.Measure(func() { h.Send("update", svc) })
		noopTime += time.Since(start)
		require.Len(b, policiesOf(b, svc), 80)
		require.Zero(b, writes(noop), "a no-op writes nothing: %v", noop)
	}
	b.ReportMetric(float64(firstTime.Milliseconds())/float64(b.N), "first-ms")
	b.ReportMetric(float64(noopTime.Milliseconds())/float64(b.N), "noop-ms")
	for _, verb := range []string{"get", "list", "create", "patch", "delete"} {
		b.ReportMetric(float64(first[verb]), "first-"+verb+"s")
		b.ReportMetric(float64(noop[verb]), "noop-"+verb+"s")
	}
}

// A pod label key too long for Kubernetes is shortened, and the Service gets Gardener's Warning
// each time such a policy is written (counted on the first Event when repeated).
func TestNetworkPolicyShortenedKeyWarning(t *testing.T) {
	ctx := context.Background()
	h := functiontest.New(t, seed, networkpolicy.Function, functiontest.AsFunction(), functiontest.WithConfig(networkPolicyConfig(nil)))
	a := npNamespace(t, true, nil)
	svc := npService(t, a.Name, "a-service-with-a-name-long-enough-to-need-shortening-xx", nil, 80)
	h.Send("add", svc)
	name := "ingress-to-" + svc.Name + "-tcp-1080"
	ingress := &networkingv1.NetworkPolicy{}
	require.NoError(t, seed.Client.Get(ctx, client.ObjectKey{Namespace: a.Name, Name: name}, ingress))
	for k := range ingress.Spec.Ingress[0].From[0].PodSelector.MatchLabels {
		assert.Len(t, k, len("networking.resources.gardener.cloud/")+63, "shortened to 63 characters")
	}

	require.NoError(t, seed.Client.Delete(ctx, ingress))
	h.Send("delete", ingress)
	events := &corev1.EventList{}
	require.NoError(t, seed.Client.List(ctx, events, client.InNamespace(a.Name)))
	var count int32
	for _, e := range events.Items {
		if e.Reason == "PodLabelSelectorKey(s)TooLong" && e.InvolvedObject.Name == svc.Name {
			assert.Equal(t, corev1.EventTypeWarning, e.Type)
			count += e.Count
		}
	}
	assert.Equal(t, int32(3), count, "one per policy written with the shortened selector: two, then the restored one")
}
