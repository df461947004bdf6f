package networkpolicy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	rmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// fromPolicy matches the from-<alias>-allowed-ports annotations and captures the alias. Like
// Gardener's, the expression is neither anchored nor escaped: the same keys match.
var fromPolicy = regexp.MustCompile(resourcesv1alpha1.NetworkPolicyFromPolicyAnnotationPrefix + "(.*)" + resourcesv1alpha1.NetworkPolicyFromPolicyAnnotationSuffix)

// allowed is the value of every pod label a policy selects on.
const allowed = v1beta1constants.LabelNetworkPolicyAllowed

// errNamespaceNotFound says that a Service's namespace was not found: Gardener fails such a
// reconcile (and tries again) rather than deciding.
var errNamespaceNotFound = errors.New("failed fetching service namespace")

// Settings are the parts of the configuration the decision reads, parsed once.
type Settings struct {
	// Namespaces select the namespaces whose Services get policies (all when empty).
	Namespaces []labels.Selector
	// IngressController is where the ingress controller's pods run; nil leaves Ingresses alone.
	IngressController *rmv1alpha1.IngressControllerSelector
}

// NewSettings parses the configuration's namespace selectors.
func NewSettings(c *Config) (Settings, error) {
	s := Settings{IngressController: c.IngressControllerSelector}
	for _, ls := range c.NamespaceSelectors {
		sel, err := metav1.LabelSelectorAsSelector(&ls)
		if err != nil {
			return Settings{}, fmt.Errorf("failed parsing namespace selector %s to labels.Selector: %w", ls.String(), err)
		}
		s.Namespaces = append(s.Namespaces, sel)
	}
	return s, nil
}

// handles says whether the Services of a namespace with these labels get policies.
func (s Settings) handles(namespaceLabels map[string]string) bool {
	if len(s.Namespaces) == 0 {
		return true
	}
	for _, sel := range s.Namespaces {
		if sel.Matches(labels.Set(namespaceLabels)) {
			return true
		}
	}
	return false
}

// State is what the decision for one Service reads.
type State struct {
	// Key names the Service (also when it is gone).
	Key types.NamespacedName
	// Service is nil when it is gone.
	Service *corev1.Service
	// Namespace is the Service's namespace; nil when it is gone.
	Namespace *metav1.PartialObjectMetadata
	// Namespaces are the candidates for the Service's namespace selectors: at least those that
	// match one (more do no harm: the decision selects them again).
	Namespaces []metav1.PartialObjectMetadata
	// Ingresses are the Ingresses of the Service's namespace (read only with an ingress
	// controller configured).
	Ingresses []networkingv1.Ingress
}

// Desired is what the policies of one Service should be.
type Desired struct {
	// Policies are the NetworkPolicies to create or update, each complete: name, namespace,
	// the labels naming the Service, the description annotation and the spec.
	Policies []*networkingv1.NetworkPolicy
	// Keep names desired policies that cannot be computed (an unparsable from-world
	// annotation): an existing one is neither updated nor deleted, as in Gardener.
	Keep []types.NamespacedName
	// Shortened lists the pod label selectors whose keys were too long and had to be shortened
	// (usual selector → effective selector), for the Warning Gardener records on the Service.
	Shortened map[string]string
	// Err is the annotation that could not be parsed, if any: the other policies are still
	// desired (Gardener applies them in parallel to the failing one).
	Err error
}

// Has says whether a policy of that key is desired (to be written or kept).
func (d *Desired) Has(key types.NamespacedName) bool {
	if slices.Contains(d.Keep, key) {
		return true
	}
	return slices.ContainsFunc(d.Policies, func(p *networkingv1.NetworkPolicy) bool {
		return p.Namespace == key.Namespace && p.Name == key.Name
	})
}

// Decide computes the NetworkPolicies a Service should have, as Gardener's controller does. An
// error means nothing can be decided (an unparsable namespace-selectors or allowed-ports
// annotation): Gardener then neither writes nor deletes anything.
func Decide(s Settings, st State) (*Desired, error) {
	d := &Desired{}
	svc := st.Service
	if svc == nil || svc.DeletionTimestamp != nil || svc.Spec.Selector == nil {
		return d, nil
	}
	// A Service of a namespace that is not handled, or is terminating (whatever it would get
	// is deleted with the namespace), has no policies: the existing ones go.
	if st.Namespace == nil {
		if !s.handles(nil) {
			return d, nil
		}
		return nil, fmt.Errorf("%w: %s", errNamespaceNotFound, svc.Namespace)
	}
	if !s.handles(st.Namespace.Labels) || st.Namespace.DeletionTimestamp != nil {
		return d, nil
	}
	namespaces, err := reachedFrom(svc, st.Namespaces)
	if err != nil {
		return nil, err
	}
	namespaces = append([]string{svc.Namespace}, namespaces...)

	add := func(p *networkingv1.NetworkPolicy) {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[resourcesv1alpha1.NetworkingServiceName] = svc.Name
		p.Labels[resourcesv1alpha1.NetworkingServiceNamespace] = svc.Namespace
		// A later policy of the same name wins (Gardener writes them in parallel).
		d.Policies = slices.DeleteFunc(d.Policies, func(q *networkingv1.NetworkPolicy) bool {
			return q.Namespace == p.Namespace && q.Name == p.Name
		})
		d.Policies = append(d.Policies, p)
	}
	effective := func(sel metav1.LabelSelector) metav1.LabelSelector {
		out, shortened := shortenKeys(sel)
		if shortened {
			if d.Shortened == nil {
				d.Shortened = map[string]string{}
			}
			d.Shortened[fmt.Sprintf("%+v", sel)] = fmt.Sprintf("%+v", out)
		}
		return out
	}
	pair := func(port networkingv1.NetworkPolicyPort, ingressMeta, egressMeta metav1.ObjectMeta, peerNamespace string, peerPods metav1.LabelSelector) {
		pods := effective(peerPods)
		add(ingressPolicy(svc, port, ingressMeta, peerNamespace, pods))
		add(egressPolicy(svc, port, egressMeta, peerNamespace, pods))
	}
	forNamespaces := func(port networkingv1.NetworkPolicyPort, alias string) error {
		if port.Protocol == nil {
			return fmt.Errorf("port %s of %s has no protocol", port.Port, resourcesv1alpha1.NetworkPolicyFromPolicyAnnotationPrefix+alias+resourcesv1alpha1.NetworkPolicyFromPolicyAnnotationSuffix)
		}
		id := policyID(svc.Name, port)
		selectorSuffix := id
		if alias != "" {
			id += "-via-" + alias
			selectorSuffix = alias
		}
		for _, ns := range namespaces {
			pods := metav1.LabelSelector{MatchLabels: map[string]string{podLabelKey(svc, ns, selectorSuffix): allowed}}
			pair(port, ingressMeta(id, svc.Namespace, ns), egressMeta(id, svc.Namespace, ns), ns, pods)
		}
		return nil
	}

	for _, p := range svc.Spec.Ports {
		if err := forNamespaces(networkingv1.NetworkPolicyPort{Protocol: &p.Protocol, Port: &p.TargetPort}, ""); err != nil {
			return nil, err
		}
	}
	// Annotations in a stable order, so that the same Service always gives the same answer.
	for _, k := range slices.Sorted(maps.Keys(svc.Annotations)) {
		m := fromPolicy.FindStringSubmatch(k)
		if len(m) != 2 {
			continue
		}
		var ports []networkingv1.NetworkPolicyPort
		if err := json.Unmarshal([]byte(svc.Annotations[k]), &ports); err != nil {
			return nil, fmt.Errorf("failed unmarshalling %s: %w", svc.Annotations[k], err)
		}
		for _, port := range ports {
			if err := forNamespaces(port, m[1]); err != nil {
				return nil, err
			}
		}
	}

	if value, ok := svc.Annotations[resourcesv1alpha1.NetworkingFromWorldToPorts]; ok {
		meta := metav1.ObjectMeta{Name: "ingress-to-" + svc.Name + "-from-world", Namespace: svc.Namespace}
		var ports []networkingv1.NetworkPolicyPort
		if err := json.Unmarshal([]byte(value), &ports); err != nil {
			d.Keep = append(d.Keep, types.NamespacedName{Namespace: meta.Namespace, Name: meta.Name})
			d.Err = fmt.Errorf("failed unmarshalling %s: %w", value, err)
		} else {
			add(fromWorldPolicy(svc, meta, ports))
		}
	}

	if ic := s.IngressController; ic != nil {
		for _, port := range ingressPorts(svc, st.Ingresses) {
			id := policyID(svc.Name, port)
			pair(port, ingressMetaViaIngress(id, svc.Namespace), egressMetaViaIngress(id, svc.Namespace, ic.Namespace), ic.Namespace, ic.PodSelector)
		}
	}
	return d, nil
}

// reachedFrom returns the namespaces (other than the Service's, and not terminating) that match
// one of the Service's namespace selectors, sorted.
func reachedFrom(svc *corev1.Service, candidates []metav1.PartialObjectMetadata) ([]string, error) {
	selectors, err := NamespaceSelectors(svc)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, ls := range selectors {
		sel, err := metav1.LabelSelectorAsSelector(&ls)
		if err != nil {
			return nil, fmt.Errorf("failed parsing %s to labels.Selector: %w", ls.String(), err)
		}
		for _, ns := range candidates {
			if ns.Name != svc.Namespace && ns.DeletionTimestamp == nil && sel.Matches(labels.Set(ns.Labels)) && !slices.Contains(names, ns.Name) {
				names = append(names, ns.Name)
			}
		}
	}
	slices.Sort(names)
	return names, nil
}

// NamespaceSelectors are the selectors of the Service's namespace-selectors annotation.
func NamespaceSelectors(svc *corev1.Service) ([]metav1.LabelSelector, error) {
	v, ok := svc.Annotations[resourcesv1alpha1.NetworkingNamespaceSelectors]
	if !ok {
		return nil, nil
	}
	var selectors []metav1.LabelSelector
	if err := json.Unmarshal([]byte(v), &selectors); err != nil {
		return nil, fmt.Errorf("failed unmarshalling %s: %w", v, err)
	}
	return selectors, nil
}

// policyID is "<service>-<protocol>-<port>", the heart of every policy name and pod label.
func policyID(service string, port networkingv1.NetworkPolicyPort) string {
	return fmt.Sprintf("%s-%s-%s", service, strings.ToLower(string(*port.Protocol)), port.Port.String())
}

// podLabelKey is the label pods of namespace carry to reach the Service: "to-<suffix>" in its
// own namespace, "to-<namespace or alias>-<suffix>" from others.
func podLabelKey(svc *corev1.Service, namespace, suffix string) string {
	infix := ""
	if svc.Namespace != namespace {
		infix = svc.Namespace
		if alias, ok := svc.Annotations[resourcesv1alpha1.NetworkingPodLabelSelectorNamespaceAlias]; ok {
			infix = alias
		}
		infix += "-"
	}
	return resourcesv1alpha1.NetworkPolicyLabelKeyPrefix + "to-" + infix + suffix
}

// maxLabelKey is the longest name part of a label key Kubernetes accepts.
const maxLabelKey = 63

// shortenKeys replaces every key whose name (after Gardener's prefix) is too long by its first 57
// characters, a dash and the first 5 hex digits of the name's SHA-256.
func shortenKeys(sel metav1.LabelSelector) (metav1.LabelSelector, bool) {
	out := *sel.DeepCopy()
	shortened := false
	for k, v := range sel.MatchLabels {
		name := strings.TrimPrefix(k, resourcesv1alpha1.NetworkPolicyLabelKeyPrefix)
		if len(name) <= maxLabelKey {
			continue
		}
		sum := sha256.Sum256([]byte(name))
		delete(out.MatchLabels, k)
		out.MatchLabels[resourcesv1alpha1.NetworkPolicyLabelKeyPrefix+name[:maxLabelKey-6]+"-"+hex.EncodeToString(sum[:])[:5]] = v
		shortened = true
	}
	return out, shortened
}

func ingressMeta(id, serviceNamespace, namespace string) metav1.ObjectMeta {
	name := "ingress-to-" + id
	if serviceNamespace != namespace {
		name += "-from-" + namespace
	}
	return metav1.ObjectMeta{Name: name, Namespace: serviceNamespace}
}

func egressMeta(id, serviceNamespace, namespace string) metav1.ObjectMeta {
	name := "egress-to-" + id
	if serviceNamespace != namespace {
		name = "egress-to-" + serviceNamespace + "-" + id
	}
	return metav1.ObjectMeta{Name: name, Namespace: namespace}
}

func ingressMetaViaIngress(id, serviceNamespace string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: "ingress-to-" + id + "-from-ingress-controller", Namespace: serviceNamespace}
}

func egressMetaViaIngress(id, serviceNamespace, controllerNamespace string) metav1.ObjectMeta {
	meta := egressMeta(id, serviceNamespace, controllerNamespace)
	meta.Name += "-from-ingress-controller"
	return meta
}

// namespaceSelector selects namespace by name, or nothing (the policy's own) when it is local.
func namespaceSelector(local, namespace string) *metav1.LabelSelector {
	if local == namespace {
		return nil
	}
	return &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: namespace}}
}

func described(meta metav1.ObjectMeta, description string) metav1.ObjectMeta {
	meta.Annotations = map[string]string{v1beta1constants.GardenerDescription: description}
	return meta
}

// ingressPolicy lets pods of namespace selected by pods reach the Service's pods on port.
func ingressPolicy(svc *corev1.Service, port networkingv1.NetworkPolicyPort, meta metav1.ObjectMeta, namespace string, pods metav1.LabelSelector) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		ObjectMeta: described(meta, fmt.Sprintf("Allows ingress %s traffic to port %s for pods selected by the %s service selector from pods running in namespace %s labeled with %s.",
			*port.Protocol, port.Port.String(), serviceKey(svc), namespace, pods)),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: svc.Spec.Selector},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From:  []networkingv1.NetworkPolicyPeer{{PodSelector: &pods, NamespaceSelector: namespaceSelector(svc.Namespace, namespace)}},
				Ports: []networkingv1.NetworkPolicyPort{port},
			}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		},
	}
}

// egressPolicy lets pods of namespace selected by pods reach the Service's pods on port.
func egressPolicy(svc *corev1.Service, port networkingv1.NetworkPolicyPort, meta metav1.ObjectMeta, namespace string, pods metav1.LabelSelector) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		ObjectMeta: described(meta, fmt.Sprintf("Allows egress %s traffic to port %s from pods running in namespace %s labeled with %s to pods selected by the %s service selector.",
			*port.Protocol, port.Port.String(), namespace, pods, serviceKey(svc))),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: pods,
			Egress: []networkingv1.NetworkPolicyEgressRule{{
				To:    []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: svc.Spec.Selector}, NamespaceSelector: namespaceSelector(namespace, svc.Namespace)}},
				Ports: []networkingv1.NetworkPolicyPort{port},
			}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
		},
	}
}

// fromWorldPolicy lets every peer reach the Service's pods on ports (all ports when none):
// all pods of all namespaces and every IPv4 and IPv6 address, as the specification's example
// spells it out.
func fromWorldPolicy(svc *corev1.Service, meta metav1.ObjectMeta, ports []networkingv1.NetworkPolicyPort) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		ObjectMeta: described(meta, fmt.Sprintf("Allows ingress traffic from everywhere to ports %v for pods selected by the %s service selector.",
			portsAndProtocols(ports), serviceKey(svc))),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: svc.Spec.Selector},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From: []networkingv1.NetworkPolicyPeer{
					{NamespaceSelector: &metav1.LabelSelector{}, PodSelector: &metav1.LabelSelector{}},
					{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0"}},
					{IPBlock: &networkingv1.IPBlock{CIDR: "::/0"}},
				},
				Ports: ports,
			}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		},
	}
}

func portsAndProtocols(ports []networkingv1.NetworkPolicyPort) []string {
	var out []string
	for _, p := range ports {
		if p.Protocol == nil {
			out = append(out, fmt.Sprintf("%v", p.Port))
		} else {
			out = append(out, fmt.Sprintf("%v/%v", *p.Protocol, p.Port))
		}
	}
	return out
}

func serviceKey(svc *corev1.Service) string {
	return types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}.String()
}

// ingressPorts are the target ports of the Service that Ingresses of its namespace route to: each
// backend's service port (by name or number) translated to its port's protocol and target port.
func ingressPorts(svc *corev1.Service, ingresses []networkingv1.Ingress) []networkingv1.NetworkPolicyPort {
	var out []networkingv1.NetworkPolicyPort
	for _, backend := range Backends(ingresses, svc.Namespace) {
		if backend.Name != svc.Name {
			continue
		}
		for _, p := range svc.Spec.Ports {
			// As Gardener: the first port whose name or number equals the backend's (two empty
			// names are equal too).
			if backend.Port.Name == p.Name || backend.Port.Number == p.Port {
				out = append(out, networkingv1.NetworkPolicyPort{Protocol: ptrTo(p.Protocol), Port: ptrTo(p.TargetPort)})
				break
			}
		}
	}
	return out
}

// Backends are the service backends of the Ingresses' HTTP rules in namespace, in order.
func Backends(ingresses []networkingv1.Ingress, namespace string) []networkingv1.IngressServiceBackend {
	var out []networkingv1.IngressServiceBackend
	for _, ing := range ingresses {
		if ing.Namespace != namespace {
			continue
		}
		for _, rule := range ing.Spec.Rules {
			if rule.HTTP == nil {
				continue
			}
			for _, path := range rule.HTTP.Paths {
				if path.Backend.Service != nil {
					out = append(out, *path.Backend.Service)
				}
			}
		}
	}
	return out
}

func ptrTo[T any](v T) *T { return &v }

// Stale are the existing policies of the Service that are not desired.
func Stale(d *Desired, existing []networkingv1.NetworkPolicy) []*networkingv1.NetworkPolicy {
	var out []*networkingv1.NetworkPolicy
	for i := range existing {
		if !d.Has(types.NamespacedName{Namespace: existing[i].Namespace, Name: existing[i].Name}) {
			out = append(out, &existing[i])
		}
	}
	return out
}

// Apply makes existing (as read) what desired says: the labels and the description are set
// (other labels and annotations stay), the spec is replaced, as Gardener's merge patch does.
func Apply(existing, desired *networkingv1.NetworkPolicy) {
	if existing.Labels == nil {
		existing.Labels = map[string]string{}
	}
	maps.Copy(existing.Labels, desired.Labels)
	if existing.Annotations == nil {
		existing.Annotations = map[string]string{}
	}
	maps.Copy(existing.Annotations, desired.Annotations)
	existing.Spec.PodSelector = desired.Spec.PodSelector
	existing.Spec.Ingress = desired.Spec.Ingress
	existing.Spec.Egress = desired.Spec.Egress
	existing.Spec.PolicyTypes = desired.Spec.PolicyTypes
}
