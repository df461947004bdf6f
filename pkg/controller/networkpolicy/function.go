// Package networkpolicy is GRM's NetworkPolicy controller as a function: for every Service with
// a pod selector it keeps a pair of NetworkPolicies (ingress to the Service's pods, egress from
// the pods labelled to reach it) per port and per namespace the Service may be reached from (its
// own, those its namespace-selectors annotation selects), per from-<alias>-allowed-ports port,
// one ingress-from-world policy when asked, and pairs for the ingress controller when Ingresses
// route to it; policies no longer desired are deleted.
//
// Gardener runs it in the seed's own GRM, whose source and target are the seed: so the function
// has no Target and runs in seed mode, everything on the Source.
package networkpolicy

import (
	"context"
	"fmt"
	"strings"

	rmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// Config is the controller's part of the ResourceManagerConfiguration
// (controllers.networkPolicy), Enabled overridden by the environment.
type Config struct {
	// Enabled is controllers.networkPolicy.enabled.
	Enabled bool `envconfig:"NETWORK_POLICY_ENABLED"`
	// NamespaceSelectors is controllers.networkPolicy.namespaceSelectors: the namespaces whose
	// Services get policies (all when empty).
	NamespaceSelectors []metav1.LabelSelector `ignored:"true"`
	// IngressControllerSelector is controllers.networkPolicy.ingressControllerSelector: where the
	// ingress controller runs; when set, Ingress backends get policies for it.
	IngressControllerSelector *rmv1alpha1.IngressControllerSelector `ignored:"true"`
}

// FromResourceManager takes the settings from the file (Gardener's defaults applied).
func (c *Config) FromResourceManager(rm *componentconfig.ResourceManagerFile) {
	np := rm.Controllers.NetworkPolicy
	c.Enabled = np.Enabled
	c.NamespaceSelectors = np.NamespaceSelectors
	c.IngressControllerSelector = np.IngressControllerSelector
}

// Owned selects the policies the controller keeps: they name their Service in two labels.
const Owned = resourcesv1alpha1.NetworkingServiceName + "," + resourcesv1alpha1.NetworkingServiceNamespace

// serviceIndex indexes the owned policies of a sweep by their Service ("<namespace>/<name>"),
// so that a Service's policies are found without scanning all of them.
const serviceIndex = "service"

// resync is how often every Service is reconciled, whatever events said.
const resync = "*/5 * * * *"

func off(config any) bool { return !config.(*Config).Enabled }

// Function is GRM's NetworkPolicy controller.
var Function = &function.Function{
	Name:   "networkpolicy",
	Parts:  []function.Part{function.Seed},
	Config: &Config{},
	RBAC: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list"}},
		// get: a desired policy that exists without the controller's labels is adopted.
		{APIGroups: []string{networkingv1.GroupName}, Resources: []string{"networkpolicies"}, Verbs: []string{"get", "list", "create", "patch", "delete"}},
		{APIGroups: []string{networkingv1.GroupName}, Resources: []string{"ingresses"}, Verbs: []string{"list"}},
		// The Warning about pod label keys that had to be shortened.
		function.EventsRBAC,
	},
	Reconcilers: []function.Reconciler{
		{Name: "service", For: kinds.Service, New: newServiceReconciler},
		{Name: "orphan", For: kinds.NetworkPolicy, New: newOrphanReconciler},
	},
	Watches: []function.Watch{
		{Kind: kinds.Service, Reconciler: "service", Predicate: ServicePredicate},
		{Kind: kinds.Namespace, Reconciler: "service", Map: MapNamespaceToServices},
		{Kind: kinds.NetworkPolicy, Reconciler: "service", LabelSelector: Owned, Predicate: PolicyPredicate, Map: MapPolicyToService},
		{Kind: kinds.Ingress, Reconciler: "service", Predicate: IngressPredicate, Map: MapIngressToServices},
	},
	Sweeps: []function.Sweep{
		{
			Name: "resync", Schedule: resync, Reconciler: "service", Off: off,
			Primary: function.List{Kind: kinds.Service},
			Related: []function.List{
				{Kind: kinds.Namespace, MetadataOnly: true},
				{Kind: kinds.NetworkPolicy, LabelSelector: Owned, Indexes: map[string]function.IndexFunc{serviceIndex: indexByService}},
				{Kind: kinds.Ingress},
			},
		},
		{
			// The resync visits existing Services only: the policies of a Service deleted while
			// its events were lost are found from the policies' side.
			Name: "orphans", Schedule: resync, Reconciler: "orphan", Off: off,
			Primary: function.List{Kind: kinds.NetworkPolicy, MetadataOnly: true, LabelSelector: Owned},
			Related: []function.List{{Kind: kinds.Service, MetadataOnly: true}},
		},
	},
}

func indexByService(obj client.Object) []string {
	if key, ok := ServiceOf(obj.GetLabels()); ok {
		return []string{key.String()}
	}
	return nil
}

// ServiceOf is the Service an owned policy's labels name.
func ServiceOf(l map[string]string) (function.Key, bool) {
	name, namespace := l[resourcesv1alpha1.NetworkingServiceName], l[resourcesv1alpha1.NetworkingServiceNamespace]
	return function.Key{Namespace: namespace, Name: name}, name != "" && namespace != ""
}

// ServicePredicate lets every Service event through but the creation of a Service without a pod
// selector, which has no policies to get. Gardener also drops updates that change neither
// selector, ports nor the controller's annotations; an event carries no old object to compare
// with, so updates pass (a reconcile that changes nothing writes nothing).
func ServicePredicate(ev function.Event) bool {
	if !ev.Created || ev.Object == nil {
		return true
	}
	selector, _, _ := unstructured.NestedStringMap(ev.Object.Object, "spec", "selector")
	return selector != nil
}

// PolicyPredicate lets through the changes and deletions of owned policies. Their creations are
// the function's own writes (a policy someone else creates with these labels is met by the
// resync).
func PolicyPredicate(ev function.Event) bool {
	if ev.Object == nil {
		return true
	}
	_, owned := ServiceOf(ev.Object.GetLabels())
	return owned && !ev.Created
}

// IngressPredicate drops the creation of an Ingress that routes to no Service. Updates pass: a
// backend they removed is found by the mapper from the policies it had.
func IngressPredicate(ev function.Event) bool {
	if !ev.Created || ev.Object == nil {
		return true
	}
	ing, err := function.Decode[networkingv1.Ingress](ev)
	return err != nil || ing == nil || len(Backends([]networkingv1.Ingress{*ing}, ing.Namespace)) > 0
}

// MapPolicyToService maps an owned policy to its Service.
func MapPolicyToService(_ context.Context, _ client.Reader, ev function.Event) ([]function.Key, error) {
	if ev.Object == nil {
		return nil, nil
	}
	if key, ok := ServiceOf(ev.Object.GetLabels()); ok {
		return []function.Key{key}, nil
	}
	return nil, nil
}

// MapNamespaceToServices maps a Namespace to the Services it may concern: those in it (whether
// its namespace is handled may have changed), those whose namespace selectors match its labels,
// and those with policies in it (their selectors may have matched labels it no longer has:
// Gardener compares with the old object, which an event does not carry). One metadata-only LIST
// of all Services and one of the owned policies in the namespace, however many there are.
func MapNamespaceToServices(ctx context.Context, reader client.Reader, ev function.Event) ([]function.Key, error) {
	var nsLabels map[string]string
	if ev.Object != nil {
		nsLabels = ev.Object.GetLabels()
	}
	services := &metav1.PartialObjectMetadataList{}
	services.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ServiceList"))
	if err := reader.List(ctx, services); err != nil {
		return nil, fmt.Errorf("listing the Services: %w", err)
	}
	keys := newKeys()
	for _, svc := range services.Items {
		if svc.Namespace == ev.Key.Name || selectsNamespace(svc.Annotations, nsLabels) {
			keys.add(function.Key{Namespace: svc.Namespace, Name: svc.Name})
		}
	}
	if err := addPolicyServices(ctx, reader, ev.Key.Name, keys, func(string) bool { return true }); err != nil {
		return nil, err
	}
	return keys.list, nil
}

// selectsNamespace says whether a Service with these annotations selects a namespace with these
// labels. An annotation that does not parse selects nothing here; the Service's own reconcile
// reports it.
func selectsNamespace(annotations, nsLabels map[string]string) bool {
	selectors, err := NamespaceSelectors(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Annotations: annotations}})
	if err != nil {
		return false
	}
	for _, ls := range selectors {
		if sel, err := metav1.LabelSelectorAsSelector(&ls); err == nil && sel.Matches(labels.Set(nsLabels)) {
			return true
		}
	}
	return false
}

// ingressControllerSuffix ends the names of the policies for the ingress controller.
const ingressControllerSuffix = "-from-ingress-controller"

// MapIngressToServices maps an Ingress to the Services its rules route to, and to the Services
// with ingress-controller policies in its namespace: a backend an update removed is not in the
// event (Gardener maps the old object too).
func MapIngressToServices(ctx context.Context, reader client.Reader, ev function.Event) ([]function.Key, error) {
	keys := newKeys()
	if ing, err := function.Decode[networkingv1.Ingress](ev); err == nil && ing != nil {
		for _, b := range Backends([]networkingv1.Ingress{*ing}, ing.Namespace) {
			keys.add(function.Key{Namespace: ing.Namespace, Name: b.Name})
		}
	}
	err := addPolicyServices(ctx, reader, ev.Key.Namespace, keys, func(name string) bool { return strings.HasSuffix(name, ingressControllerSuffix) })
	return keys.list, err
}

// addPolicyServices adds the Services of the owned policies in namespace whose names match.
func addPolicyServices(ctx context.Context, reader client.Reader, namespace string, keys *keySet, match func(string) bool) error {
	policies := &metav1.PartialObjectMetadataList{}
	policies.SetGroupVersionKind(networkingv1.SchemeGroupVersion.WithKind("NetworkPolicyList"))
	sel, err := labels.Parse(Owned)
	if err != nil {
		return err
	}
	if err := reader.List(ctx, policies, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return fmt.Errorf("listing the NetworkPolicies of namespace %s: %w", namespace, err)
	}
	for _, p := range policies.Items {
		if key, ok := ServiceOf(p.Labels); ok && match(p.Name) {
			keys.add(key)
		}
	}
	return nil
}

type keySet struct {
	seen map[function.Key]bool
	list []function.Key
}

func newKeys() *keySet { return &keySet{seen: map[function.Key]bool{}} }

func (s *keySet) add(k function.Key) {
	if !s.seen[k] {
		s.seen[k] = true
		s.list = append(s.list, k)
	}
}
