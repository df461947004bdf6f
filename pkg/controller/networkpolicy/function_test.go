package networkpolicy

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func TestFunctionValid(t *testing.T) {
	require.NoError(t, Function.Validate())
	assert.Empty(t, Function.DeploymentMode(), "seed mode: source and target are the seed")
}

// The controller's keys come from the ResourceManagerConfiguration; it is off by default, and
// the environment switches it on.
func TestConfig(t *testing.T) {
	cfg, err := function.LoadConfig(Function, function.ComponentConfigs{})
	require.NoError(t, err)
	assert.False(t, cfg.(*Config).Enabled)
	assert.Nil(t, cfg.(*Config).IngressControllerSelector)

	file := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`apiVersion: resourcemanager.config.gardener.cloud/v1alpha1
kind: ResourceManagerConfiguration
controllers:
  networkPolicy:
    enabled: true
    namespaceSelectors:
    - matchLabels:
        gardener.cloud/role: shoot
    ingressControllerSelector:
      namespace: garden
      podSelector:
        matchLabels:
          app: nginx-ingress
`), 0o600))
	cfg, err = function.LoadConfig(Function, function.ComponentConfigs{ResourceManager: file})
	require.NoError(t, err)
	c := cfg.(*Config)
	assert.True(t, c.Enabled)
	assert.Equal(t, []metav1.LabelSelector{{MatchLabels: map[string]string{"gardener.cloud/role": "shoot"}}}, c.NamespaceSelectors)
	assert.Equal(t, "garden", c.IngressControllerSelector.Namespace)

	t.Setenv("NETWORK_POLICY_ENABLED", "false")
	cfg, err = function.LoadConfig(Function, function.ComponentConfigs{ResourceManager: file})
	require.NoError(t, err)
	assert.False(t, cfg.(*Config).Enabled)

	_, err = newServiceReconciler(function.Deps{Config: &Config{NamespaceSelectors: []metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Bad"}}}}}})
	assert.Error(t, err, "an invalid namespace selector is refused at start-up, as Gardener does")
}

func event(t *testing.T, obj runtime.Object, created bool) function.Event {
	t.Helper()
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	require.NoError(t, err)
	o := &unstructured.Unstructured{Object: u}
	return function.Event{Created: created, Object: o, Key: function.Key{Namespace: o.GetNamespace(), Name: o.GetName()}}
}

func TestPredicates(t *testing.T) {
	withSelector := &corev1.Service{Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "x"}}}
	assert.True(t, ServicePredicate(event(t, withSelector, true)))
	assert.False(t, ServicePredicate(event(t, &corev1.Service{}, true)), "a new Service without selector has nothing to get")
	assert.True(t, ServicePredicate(event(t, &corev1.Service{}, false)), "an update may have removed the selector")

	owned := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Labels: ownerLabels(function.Key{Namespace: "a", Name: "s"})}}
	assert.False(t, PolicyPredicate(event(t, owned, true)), "creations are the function's own")
	assert.True(t, PolicyPredicate(event(t, owned, false)))
	assert.False(t, PolicyPredicate(event(t, &networkingv1.NetworkPolicy{}, false)))

	routed := &networkingv1.Ingress{Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
		Paths: []networkingv1.HTTPIngressPath{{Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "s"}}}},
	}}}}}}
	assert.True(t, IngressPredicate(event(t, routed, true)))
	assert.False(t, IngressPredicate(event(t, &networkingv1.Ingress{}, true)))
	assert.True(t, IngressPredicate(event(t, &networkingv1.Ingress{}, false)), "an update may have removed a backend")
}

func TestMapPolicyToService(t *testing.T) {
	owned := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "p", Labels: ownerLabels(function.Key{Namespace: "a", Name: "s"})}}
	keys, err := MapPolicyToService(t.Context(), nil, event(t, owned, false))
	require.NoError(t, err)
	assert.Equal(t, []function.Key{{Namespace: "a", Name: "s"}}, keys)
}
