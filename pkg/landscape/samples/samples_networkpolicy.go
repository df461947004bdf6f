package samples

import (
	"context"
	"fmt"
	"time"

	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The NetworkPolicy sample (in the seed, where Gardener runs the controller): a Service that
// lets the pods of a second namespace in, on its one port.
const (
	networkPolicyNamespace       = "networkpolicy-demo"
	networkPolicyClientNamespace = "networkpolicy-demo-clients"
	networkPolicyService         = "web"
)

// networkpolicySamples creates the Service, annotated with a namespace selector that selects
// the clients' namespace. Both namespaces are extensions' (gardener.cloud/role=extension), which
// the seed's resource manager serves (its namespace selectors).
func networkpolicySamples(ctx context.Context, c client.Client) error {
	extension := map[string]string{v1beta1constants.GardenRole: v1beta1constants.GardenRoleExtension}
	for _, ns := range []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: networkPolicyNamespace, Labels: extension}},
		{ObjectMeta: metav1.ObjectMeta{Name: networkPolicyClientNamespace, Labels: map[string]string{"role": "web-clients", v1beta1constants.GardenRole: v1beta1constants.GardenRoleExtension}}},
	} {
		if err := client.IgnoreAlreadyExists(c.Create(ctx, ns)); err != nil {
			return err
		}
	}
	return client.IgnoreAlreadyExists(c.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: networkPolicyNamespace, Name: networkPolicyService, Annotations: map[string]string{
			resourcesv1alpha1.NetworkingNamespaceSelectors: `[{"matchLabels":{"role":"web-clients"}}]`,
		}},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)}},
		},
	}))
}

// NetworkPolicyLine follows the policies the controller made for the Service.
func NetworkPolicyLine(c client.Client) func() string {
	return func() string {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		list := &networkingv1.NetworkPolicyList{}
		if err := c.List(ctx, list, client.MatchingLabels{
			resourcesv1alpha1.NetworkingServiceName: networkPolicyService, resourcesv1alpha1.NetworkingServiceNamespace: networkPolicyNamespace,
		}); err != nil || len(list.Items) == 0 {
			return "NetworkPolicy: Service " + networkPolicyNamespace + "/" + networkPolicyService + " …"
		}
		namespaces := map[string]int{}
		for _, p := range list.Items {
			namespaces[p.Namespace]++
		}
		return fmt.Sprintf("NetworkPolicy: Service %s/%s → %d policies (%d in its namespace, %d in %s, whose label its namespace selector matches) ✓",
			networkPolicyNamespace, networkPolicyService, len(list.Items), namespaces[networkPolicyNamespace], namespaces[networkPolicyClientNamespace], networkPolicyClientNamespace)
	}
}
