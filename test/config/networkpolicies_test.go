package config_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gardener-knative/gardener-knative/pkg/function"
)

// ourPod is a pod config/ makes run: its namespace and labels.
type ourPod struct {
	what, namespace string
	labels          labels.Set
}

// Every pod each part runs (its Knative Services' and its ContainerSources') is isolated for
// ingress by the part's NetworkPolicies (config/<part>/120-networkpolicies.yaml, docs/deployment.md
// "Network policies"), and what is opened is opened to named peers only: Knative Serving's data
// plane at queue-proxy, kube-apiservers at the webhook servers' own TLS port, and the Broker's
// ingress to the part's sources. The one-node cluster's suite proves that the enforcer drops the
// rest (test/cluster TestNetworkPoliciesEnforced); this test proves every pod is covered, also
// one a new function adds.
func TestEveryPodIsBehindANetworkPolicy(t *testing.T) {
	ms := manifests(t)
	var policies []networkingv1.NetworkPolicy
	for _, m := range ms {
		for _, u := range m.objs {
			if u.GetAPIVersion() == "networking.k8s.io/v1" && u.GetKind() == "NetworkPolicy" {
				var p networkingv1.NetworkPolicy
				require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p), "%s: %s", m.file, describe(u))
				policies = append(policies, p)
			}
		}
	}
	direct := directServices(t)
	for _, part := range function.AllParts {
		ns := part.Namespace()
		var pods []ourPod
		tlsTargets := map[string]bool{}
		for _, m := range ms {
			if filepath.Dir(m.file) != string(part) {
				continue
			}
			for _, u := range m.objs {
				switch {
				case isKnativeService(u):
					l, _, _ := unstructured.NestedStringMap(u.Object, "spec", "template", "metadata", "labels")
					l = labels.Merge(l, labels.Set{knativeServiceLabel: u.GetName()})
					pods = append(pods, ourPod{"Knative Service " + u.GetName(), u.GetNamespace(), l})
				case u.GetAPIVersion() == "sources.knative.dev/v1" && u.GetKind() == "ContainerSource":
					// Knative Eventing's ContainerSource controller labels the Deployment's pods so.
					pods = append(pods, ourPod{"ContainerSource " + u.GetName(), u.GetNamespace(), labels.Set{
						"sources.knative.dev/source": "container-source-controller", "sources.knative.dev/containerSource": u.GetName(),
					}})
				case u.GetAPIVersion() == "v1" && u.GetKind() == "Service":
					if target, ok := direct[u.GetName()]; ok {
						tlsTargets[target] = true
					}
				}
			}
		}
		require.NotEmpty(t, pods, "config/%s runs no pod", part)
		for _, pod := range pods {
			require.Equal(t, ns, pod.namespace, pod.what)
			selecting := selectingIngress(policies, pod)
			assert.NotEmpty(t, selecting, "config/%s: no NetworkPolicy isolates the pods of %s", part, pod.what)
			for _, p := range selecting {
				for _, rule := range p.Spec.Ingress {
					assert.NotEmpty(t, rule.From, "%s/%s opens %s to every peer", p.Namespace, p.Name, pod.what)
					for _, peer := range rule.From {
						assert.Nil(t, peer.IPBlock, "%s/%s opens %s to an address range", p.Namespace, p.Name, pod.what)
					}
				}
			}
			if _, ok := pod.labels[knativeServiceLabel]; ok {
				assert.True(t, allows(selecting, 8012, "knative-serving", labels.Set{"app": "activator"}),
					"%s: Knative's activator may not reach queue-proxy (8012)", pod.what)
				assert.False(t, allows(selecting, 8080, "knative-serving", labels.Set{"app": "activator"}),
					"%s: its user port (8080) is opened; only queue-proxy, in the pod, reaches it", pod.what)
			}
			if tlsTargets[pod.labels[knativeServiceLabel]] {
				apiserver := labels.Set{"app": "kubernetes", "role": "apiserver"}
				assert.True(t, allows(selecting, 8443, "shoot--a--b", apiserver) || allows(selecting, 8443, "garden", apiserver),
					"%s: no kube-apiserver may reach its own TLS port (8443)", pod.what)
				assert.False(t, allows(selecting, 8443, "shoot--a--b", labels.Set{"app": "other"}),
					"%s: its own TLS port (8443) is open to other pods of a shoot namespace", pod.what)
			}
		}
		// The Broker: Knative's shared ingress takes the part's sources' events.
		brokerIngress := ourPod{"the Broker's ingress", "knative-eventing", labels.Set{"eventing.knative.dev/brokerRole": "ingress"}}
		selecting := selectingIngress(policies, brokerIngress)
		require.NotEmpty(t, selecting, "no NetworkPolicy isolates the Broker's ingress")
		for _, pod := range pods {
			if _, ok := pod.labels["sources.knative.dev/containerSource"]; ok {
				assert.True(t, allows(selecting, 8080, ns, pod.labels), "%s may not send to the Broker", pod.what)
			}
		}
		assert.True(t, allows(selecting, 8080, "knative-eventing", labels.Set{"sources.knative.dev/role": "adapter", "eventing.knative.dev/source": "ping-source-controller"}),
			"the PingSource adapter may not send to the Broker")
		assert.False(t, allows(selecting, 8080, "default", labels.Set{}), "any pod may send to the Broker")
	}
}

// namespaceLabels are the labels of a namespace in these checks: its name, and the role
// Gardener gives a shoot namespace.
func namespaceLabels(name string) labels.Set {
	l := labels.Set{corev1.LabelMetadataName: name}
	if len(name) > 7 && name[:7] == "shoot--" {
		l["gardener.cloud/role"] = "shoot"
	}
	return l
}

// selectingIngress returns the policies that select the pod for ingress.
func selectingIngress(policies []networkingv1.NetworkPolicy, pod ourPod) []networkingv1.NetworkPolicy {
	var out []networkingv1.NetworkPolicy
	for _, p := range policies {
		if p.Namespace != pod.namespace || !matches(&p.Spec.PodSelector, pod.labels) {
			continue
		}
		ingress := len(p.Spec.PolicyTypes) == 0
		for _, t := range p.Spec.PolicyTypes {
			ingress = ingress || t == networkingv1.PolicyTypeIngress
		}
		if ingress {
			out = append(out, p)
		}
	}
	return out
}

// allows says whether one of the policies lets a pod of namespace with podLabels reach port.
func allows(policies []networkingv1.NetworkPolicy, port int, namespace string, podLabels labels.Set) bool {
	for _, p := range policies {
		for _, rule := range p.Spec.Ingress {
			portOK := len(rule.Ports) == 0
			for _, rp := range rule.Ports {
				portOK = portOK || rp.Port == nil || *rp.Port == intstr.FromInt32(int32(port))
			}
			if !portOK {
				continue
			}
			if len(rule.From) == 0 {
				return true
			}
			for _, peer := range rule.From {
				if peer.IPBlock != nil {
					continue
				}
				nsOK := peer.NamespaceSelector == nil && namespace == p.Namespace ||
					peer.NamespaceSelector != nil && matches(peer.NamespaceSelector, namespaceLabels(namespace))
				if nsOK && (peer.PodSelector == nil || matches(peer.PodSelector, podLabels)) {
					return true
				}
			}
		}
	}
	return false
}

func matches(selector *metav1.LabelSelector, l labels.Set) bool {
	s, err := metav1.LabelSelectorAsSelector(selector)
	return err == nil && s.Matches(l)
}
