package networkpolicy

import (
	"testing"

	rmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// grm is the specification's example Service.
func grm(annotations map[string]string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "gardener-resource-manager", Annotations: annotations},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "gardener-resource-manager"},
			Ports:    []corev1.ServicePort{{Name: "server", Port: 443, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(10250)}},
		},
	}
}

func namespace(name string, labels map[string]string) metav1.PartialObjectMetadata {
	if labels == nil {
		labels = map[string]string{}
	}
	labels[corev1.LabelMetadataName] = name
	return metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func state(svc *corev1.Service, namespaces ...metav1.PartialObjectMetadata) State {
	own := namespace(svc.Namespace, nil)
	return State{Key: types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}, Service: svc, Namespace: &own, Namespaces: namespaces}
}

// policies parses the expected policies from YAML (as the specification writes them).
func policies(t *testing.T, docs ...string) map[string]*networkingv1.NetworkPolicy {
	t.Helper()
	out := map[string]*networkingv1.NetworkPolicy{}
	for _, doc := range docs {
		p := &networkingv1.NetworkPolicy{}
		require.NoError(t, yaml.UnmarshalStrict([]byte(doc), p))
		p.APIVersion, p.Kind = "", ""
		out[p.Namespace+"/"+p.Name] = p
	}
	return out
}

func byKey(d *Desired) map[string]*networkingv1.NetworkPolicy {
	out := map[string]*networkingv1.NetworkPolicy{}
	for _, p := range d.Policies {
		out[p.Namespace+"/"+p.Name] = p
	}
	return out
}

func decide(t *testing.T, s Settings, st State) map[string]*networkingv1.NetworkPolicy {
	t.Helper()
	d, err := Decide(s, st)
	require.NoError(t, err)
	require.NoError(t, d.Err)
	return byKey(d)
}

// The descriptions render the pod selector as Gardener's code does (a metav1.LabelSelector
// value: "{map[…] []}"); the specification's examples show only its match labels.
const (
	ingressSameNamespace = `
metadata:
  name: ingress-to-gardener-resource-manager-tcp-10250
  namespace: a
  labels:
    networking.resources.gardener.cloud/service-name: gardener-resource-manager
    networking.resources.gardener.cloud/service-namespace: a
  annotations:
    gardener.cloud/description: Allows ingress TCP traffic to port 10250 for pods selected by the a/gardener-resource-manager service selector from pods running in namespace a labeled with {map[networking.resources.gardener.cloud/to-gardener-resource-manager-tcp-10250:allowed] []}.
spec:
  ingress:
  - from:
    - podSelector:
        matchLabels:
          networking.resources.gardener.cloud/to-gardener-resource-manager-tcp-10250: allowed
    ports:
    - port: 10250
      protocol: TCP
  podSelector:
    matchLabels:
      app: gardener-resource-manager
  policyTypes:
  - Ingress
`
	egressSameNamespace = `
metadata:
  name: egress-to-gardener-resource-manager-tcp-10250
  namespace: a
  labels:
    networking.resources.gardener.cloud/service-name: gardener-resource-manager
    networking.resources.gardener.cloud/service-namespace: a
  annotations:
    gardener.cloud/description: Allows egress TCP traffic to port 10250 from pods running in namespace a labeled with {map[networking.resources.gardener.cloud/to-gardener-resource-manager-tcp-10250:allowed] []} to pods selected by the a/gardener-resource-manager service selector.
spec:
  egress:
  - to:
    - podSelector:
        matchLabels:
          app: gardener-resource-manager
    ports:
    - port: 10250
      protocol: TCP
  podSelector:
    matchLabels:
      networking.resources.gardener.cloud/to-gardener-resource-manager-tcp-10250: allowed
  policyTypes:
  - Egress
`
	ingressFromB = `
metadata:
  name: ingress-to-gardener-resource-manager-tcp-10250-from-b
  namespace: a
  labels:
    networking.resources.gardener.cloud/service-name: gardener-resource-manager
    networking.resources.gardener.cloud/service-namespace: a
  annotations:
    gardener.cloud/description: Allows ingress TCP traffic to port 10250 for pods selected by the a/gardener-resource-manager service selector from pods running in namespace b labeled with {map[networking.resources.gardener.cloud/to-a-gardener-resource-manager-tcp-10250:allowed] []}.
spec:
  ingress:
  - from:
    - namespaceSelector:
        matchLabels:
          kubernetes.io/metadata.name: b
      podSelector:
        matchLabels:
          networking.resources.gardener.cloud/to-a-gardener-resource-manager-tcp-10250: allowed
    ports:
    - port: 10250
      protocol: TCP
  podSelector:
    matchLabels:
      app: gardener-resource-manager
  policyTypes:
  - Ingress
`
	egressFromB = `
metadata:
  name: egress-to-a-gardener-resource-manager-tcp-10250
  namespace: b
  labels:
    networking.resources.gardener.cloud/service-name: gardener-resource-manager
    networking.resources.gardener.cloud/service-namespace: a
  annotations:
    gardener.cloud/description: Allows egress TCP traffic to port 10250 from pods running in namespace b labeled with {map[networking.resources.gardener.cloud/to-a-gardener-resource-manager-tcp-10250:allowed] []} to pods selected by the a/gardener-resource-manager service selector.
spec:
  egress:
  - to:
    - namespaceSelector:
        matchLabels:
          kubernetes.io/metadata.name: a
      podSelector:
        matchLabels:
          app: gardener-resource-manager
    ports:
    - port: 10250
      protocol: TCP
  podSelector:
    matchLabels:
      networking.resources.gardener.cloud/to-a-gardener-resource-manager-tcp-10250: allowed
  policyTypes:
  - Egress
`
)

// A Service's port gets an ingress and an egress policy in its namespace (the specification's
// first example).
func TestDecideSameNamespace(t *testing.T) {
	assert.Equal(t, policies(t, ingressSameNamespace, egressSameNamespace), decide(t, Settings{}, state(grm(nil))))
}

// A namespace selector adds a pair per selected namespace; unselected and terminating
// namespaces get none (the specification's cross-namespace example).
func TestDecideNamespaceSelectors(t *testing.T) {
	svc := grm(map[string]string{"networking.resources.gardener.cloud/namespace-selectors": `[{"matchLabels":{"kubernetes.io/metadata.name":"b"}},{"matchLabels":{"team":"x"}}]`})
	terminating := namespace("c", map[string]string{"team": "x"})
	terminating.DeletionTimestamp = &metav1.Time{}
	got := decide(t, Settings{}, state(svc, namespace("b", nil), terminating, namespace("d", map[string]string{"team": "y"})))
	assert.Equal(t, policies(t, ingressSameNamespace, egressSameNamespace, ingressFromB, egressFromB), got)
}

// A Service that exists in several namespaces, reached from one: the alias replaces each
// namespace in the pod label, so one label reaches all of them.
func TestDecideNamespaceAlias(t *testing.T) {
	for _, ns := range []string{"foo-1", "foo-2"} {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "example", Annotations: map[string]string{
				"networking.resources.gardener.cloud/namespace-selectors":                `[{"matchLabels":{"kubernetes.io/metadata.name":"bar"}}]`,
				"networking.resources.gardener.cloud/pod-label-selector-namespace-alias": "all-foos",
			}},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "example"}, Ports: []corev1.ServicePort{{Port: 8080, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)}}},
		}
		got := decide(t, Settings{}, state(svc, namespace("bar", nil)))
		egress := got["bar/egress-to-"+ns+"-example-tcp-8080"]
		require.NotNil(t, egress, "the egress policy in bar is named after the namespace")
		assert.Equal(t, map[string]string{"networking.resources.gardener.cloud/to-all-foos-example-tcp-8080": "allowed"}, egress.Spec.PodSelector.MatchLabels)
		ingress := got[ns+"/ingress-to-example-tcp-8080-from-bar"]
		require.NotNil(t, ingress)
		assert.Equal(t, egress.Spec.PodSelector, *ingress.Spec.Ingress[0].From[0].PodSelector)
		assert.Equal(t, map[string]string{"networking.resources.gardener.cloud/to-example-tcp-8080": "allowed"},
			got[ns+"/egress-to-example-tcp-8080"].Spec.PodSelector.MatchLabels, "the alias is for other namespaces only")
	}
}

// from-<alias>-allowed-ports gives a pair per listed port selected by the alias alone.
func TestDecideFromAliasAllowedPorts(t *testing.T) {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "bar3", Annotations: map[string]string{
			"networking.resources.gardener.cloud/from-all-bars-allowed-ports": `[{"port":8083,"protocol":"TCP"}]`,
			"networking.resources.gardener.cloud/namespace-selectors":         `[{"matchLabels":{"kubernetes.io/metadata.name":"b"}}]`,
		}},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "bar3"}},
	}
	got := decide(t, Settings{}, state(svc, namespace("b", nil)))
	assert.ElementsMatch(t, []string{
		"a/ingress-to-bar3-tcp-8083-via-all-bars", "a/egress-to-bar3-tcp-8083-via-all-bars",
		"a/ingress-to-bar3-tcp-8083-via-all-bars-from-b", "b/egress-to-a-bar3-tcp-8083-via-all-bars",
	}, keys(got))
	assert.Equal(t, map[string]string{"networking.resources.gardener.cloud/to-all-bars": "allowed"}, got["a/egress-to-bar3-tcp-8083-via-all-bars"].Spec.PodSelector.MatchLabels)
	assert.Equal(t, map[string]string{"networking.resources.gardener.cloud/to-a-all-bars": "allowed"}, got["b/egress-to-a-bar3-tcp-8083-via-all-bars"].Spec.PodSelector.MatchLabels)
	assert.Equal(t, "Allows ingress TCP traffic to port 8083 for pods selected by the a/bar3 service selector from pods running in namespace a labeled with {map[networking.resources.gardener.cloud/to-all-bars:allowed] []}.",
		got["a/ingress-to-bar3-tcp-8083-via-all-bars"].Annotations["gardener.cloud/description"])
}

// from-world-to-ports allows every peer on the listed ports (all ports when none), with the
// peers the specification's example lists.
func TestDecideFromWorld(t *testing.T) {
	got := decide(t, Settings{}, state(grm(map[string]string{"networking.resources.gardener.cloud/from-world-to-ports": `[{"port":10250,"protocol":"TCP"}]`})))
	assert.Equal(t, policies(t, `
metadata:
  name: ingress-to-gardener-resource-manager-from-world
  namespace: a
  labels:
    networking.resources.gardener.cloud/service-name: gardener-resource-manager
    networking.resources.gardener.cloud/service-namespace: a
  annotations:
    gardener.cloud/description: Allows ingress traffic from everywhere to ports [TCP/10250] for pods selected by the a/gardener-resource-manager service selector.
spec:
  ingress:
  - from:
    - namespaceSelector: {}
      podSelector: {}
    - ipBlock:
        cidr: 0.0.0.0/0
    - ipBlock:
        cidr: ::/0
    ports:
    - port: 10250
      protocol: TCP
  podSelector:
    matchLabels:
      app: gardener-resource-manager
  policyTypes:
  - Ingress
`)["a/ingress-to-gardener-resource-manager-from-world"], got["a/ingress-to-gardener-resource-manager-from-world"])

	all := decide(t, Settings{}, state(grm(map[string]string{"networking.resources.gardener.cloud/from-world-to-ports": `[]`})))["a/ingress-to-gardener-resource-manager-from-world"]
	assert.Empty(t, all.Spec.Ingress[0].Ports, "all ports")
	assert.Equal(t, "Allows ingress traffic from everywhere to ports [] for pods selected by the a/gardener-resource-manager service selector.", all.Annotations["gardener.cloud/description"])
}

// With an ingress controller configured, an Ingress backend (a service port, by number or name)
// gets a pair for the ingress controller on the target port (the specification's example).
func TestDecideIngress(t *testing.T) {
	s := Settings{IngressController: &rmv1alpha1.IngressControllerSelector{Namespace: "default", PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"foo": "bar"}}}}
	st := state(grm(nil))
	backend := func(name string, port networkingv1.ServiceBackendPort) networkingv1.HTTPIngressPath {
		return networkingv1.HTTPIngressPath{Path: "/", Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: name, Port: port}}}
	}
	st.Ingresses = []networkingv1.Ingress{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "gardener-resource-manager"},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: "grm.foo.example.com", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{
			backend("gardener-resource-manager", networkingv1.ServiceBackendPort{Number: 443}),
			backend("gardener-resource-manager", networkingv1.ServiceBackendPort{Name: "server"}),
			backend("other", networkingv1.ServiceBackendPort{Number: 443}),
		}}}}}},
	}}
	got := decide(t, s, st)
	want := policies(t, ingressSameNamespace, egressSameNamespace, `
metadata:
  name: ingress-to-gardener-resource-manager-tcp-10250-from-ingress-controller
  namespace: a
  labels:
    networking.resources.gardener.cloud/service-name: gardener-resource-manager
    networking.resources.gardener.cloud/service-namespace: a
  annotations:
    gardener.cloud/description: Allows ingress TCP traffic to port 10250 for pods selected by the a/gardener-resource-manager service selector from pods running in namespace default labeled with {map[foo:bar] []}.
spec:
  ingress:
  - from:
    - podSelector:
        matchLabels:
          foo: bar
      namespaceSelector:
        matchLabels:
          kubernetes.io/metadata.name: default
    ports:
    - port: 10250
      protocol: TCP
  podSelector:
    matchLabels:
      app: gardener-resource-manager
  policyTypes:
  - Ingress
`, `
metadata:
  name: egress-to-a-gardener-resource-manager-tcp-10250-from-ingress-controller
  namespace: default
  labels:
    networking.resources.gardener.cloud/service-name: gardener-resource-manager
    networking.resources.gardener.cloud/service-namespace: a
  annotations:
    gardener.cloud/description: Allows egress TCP traffic to port 10250 from pods running in namespace default labeled with {map[foo:bar] []} to pods selected by the a/gardener-resource-manager service selector.
spec:
  egress:
  - to:
    - podSelector:
        matchLabels:
          app: gardener-resource-manager
      namespaceSelector:
        matchLabels:
          kubernetes.io/metadata.name: a
    ports:
    - port: 10250
      protocol: TCP
  podSelector:
    matchLabels:
      foo: bar
  policyTypes:
  - Egress
`)
	assert.Equal(t, want, got)
	assert.Len(t, decide(t, Settings{}, st), 2, "Ingresses are ignored without an ingress controller")
}

// Policies that are no longer desired are stale: all of them when the Service loses its
// selector, is deleted or gone, or its namespace is not handled or terminating; the cross-
// namespace ones when the annotation goes.
func TestDecideStale(t *testing.T) {
	annotated := grm(map[string]string{"networking.resources.gardener.cloud/namespace-selectors": `[{"matchLabels":{"kubernetes.io/metadata.name":"b"}}]`})
	var existing []networkingv1.NetworkPolicy
	for _, p := range policies(t, ingressSameNamespace, egressSameNamespace, ingressFromB, egressFromB) {
		existing = append(existing, *p)
	}
	stale := func(s Settings, st State) []string {
		d, err := Decide(s, st)
		require.NoError(t, err)
		var out []string
		for _, p := range Stale(d, existing) {
			out = append(out, p.Namespace+"/"+p.Name)
		}
		return out
	}
	assert.Empty(t, stale(Settings{}, state(annotated, namespace("b", nil))))
	assert.ElementsMatch(t, []string{"a/ingress-to-gardener-resource-manager-tcp-10250-from-b", "b/egress-to-a-gardener-resource-manager-tcp-10250"},
		stale(Settings{}, state(grm(nil), namespace("b", nil))), "annotation removed")

	noSelector := grm(nil)
	noSelector.Spec.Selector = nil
	deleting := grm(nil)
	deleting.DeletionTimestamp = &metav1.Time{}
	terminating := state(grm(nil))
	terminating.Namespace.DeletionTimestamp = &metav1.Time{}
	onlyShoots, err := NewSettings(&Config{NamespaceSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"gardener.cloud/role": "shoot"}}}})
	require.NoError(t, err)
	for name, c := range map[string]struct {
		s  Settings
		st State
	}{
		"no selector":            {st: state(noSelector)},
		"deleting":               {st: state(deleting)},
		"gone":                   {st: State{Key: types.NamespacedName{Namespace: "a", Name: "gardener-resource-manager"}}},
		"terminating namespace":  {st: terminating},
		"namespace not selected": {s: onlyShoots, st: state(annotated, namespace("b", nil))},
	} {
		assert.Len(t, stale(c.s, c.st), len(existing), name)
	}
	handled := state(grm(nil))
	handled.Namespace.Labels["gardener.cloud/role"] = "shoot"
	assert.Len(t, stale(onlyShoots, handled), 2, "a selected namespace's Service keeps its own policies")
}

// A pod label key longer than 63 characters (after the prefix) is shortened to 57 characters, a
// dash and 5 hex digits of its SHA-256, in the policies and their descriptions.
func TestDecideShortensLongKeys(t *testing.T) {
	svc := grm(map[string]string{"networking.resources.gardener.cloud/namespace-selectors": `[{"matchLabels":{"kubernetes.io/metadata.name":"b"}}]`})
	svc.Namespace = "a-namespace-with-a-rather-long-name"
	d, err := Decide(Settings{}, state(svc, namespace("b", nil)))
	require.NoError(t, err)
	egress := byKey(d)["b/egress-to-a-namespace-with-a-rather-long-name-gardener-resource-manager-tcp-10250"]
	require.NotNil(t, egress)
	const short = "networking.resources.gardener.cloud/to-a-namespace-with-a-rather-long-name-gardener-resource--1396f"
	assert.Equal(t, map[string]string{short: "allowed"}, egress.Spec.PodSelector.MatchLabels)
	assert.Contains(t, egress.Annotations["gardener.cloud/description"], "labeled with {map["+short+":allowed] []}")
	assert.Len(t, d.Shortened, 1)
}

// An annotation that does not parse decides nothing; an unparsable from-world annotation keeps
// its policy as it is and lets the others be written.
func TestDecideInvalidAnnotations(t *testing.T) {
	for _, a := range []map[string]string{
		{"networking.resources.gardener.cloud/namespace-selectors": `{`},
		{"networking.resources.gardener.cloud/namespace-selectors": `[{"matchExpressions":[{"key":"a","operator":"Bad"}]}]`},
		{"networking.resources.gardener.cloud/from-x-allowed-ports": `nope`},
		{"networking.resources.gardener.cloud/from-x-allowed-ports": `[{"port":1}]`},
	} {
		_, err := Decide(Settings{}, state(grm(a), namespace("b", nil)))
		assert.Error(t, err, a)
	}
	d, err := Decide(Settings{}, state(grm(map[string]string{"networking.resources.gardener.cloud/from-world-to-ports": `{`})))
	require.NoError(t, err)
	assert.Error(t, d.Err)
	assert.Len(t, d.Policies, 2)
	assert.True(t, d.Has(types.NamespacedName{Namespace: "a", Name: "ingress-to-gardener-resource-manager-from-world"}))
}

// Apply sets the labels and description and replaces the spec, keeping foreign labels and
// annotations.
func TestApply(t *testing.T) {
	desired := policies(t, ingressSameNamespace)["a/ingress-to-gardener-resource-manager-tcp-10250"]
	existing := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"keep": "me"}, Annotations: map[string]string{"keep": "me"}},
		Spec:       networkingv1.NetworkPolicySpec{Egress: []networkingv1.NetworkPolicyEgressRule{{}}, PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}},
	}
	Apply(existing, desired)
	assert.Equal(t, desired.Spec, existing.Spec)
	assert.Equal(t, "me", existing.Labels["keep"])
	assert.Equal(t, "me", existing.Annotations["keep"])
	assert.Equal(t, "gardener-resource-manager", existing.Labels["networking.resources.gardener.cloud/service-name"])
	assert.Equal(t, desired.Annotations["gardener.cloud/description"], existing.Annotations["gardener.cloud/description"])
}

func keys(m map[string]*networkingv1.NetworkPolicy) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
