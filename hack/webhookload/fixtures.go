package main

import (
	"context"

	rmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/webhook/crddeletionprotection"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/endpointslicehints"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/extensionregistration"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/extensionvalidation"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/highavailabilityconfig"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/kubernetesservicehost"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/podkubeapiserverloadbalancing"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/podschedulername"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/podtopologyspreadconstraints"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/projectedtokenmount"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/seccompprofile"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/systemcomponentsconfig"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/tokeninvalidator"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/vpainplaceupdates"
)

// The fixtures: what a seed (or a shoot) holds that the webhooks read. One cluster plays
// both the source and the target.
const (
	apiServerHost         = "api.load.example.com"
	binPackingScheduler   = "bin-packing-scheduler"
	poolLabel             = "worker.gardener.cloud/pool"
	systemPool            = "system"
	systemComponentsLabel = "worker.gardener.cloud/system-components"

	haNamespace          = "load-high-availability"
	podNamespace         = "load-pods"
	shootNamespace       = "load-shoot"
	istioNamespace       = "load-istio-ingress"
	machineNamespace     = "shoot--load--bench"
	machineName          = "machine-a"
	nodeName             = "node-a"
	oscSecretName        = "gardener-node-agent-pool-a"
	noAutomountAccount   = "no-automount"
	serverDeploymentName = "server"
)

// createFixtures creates the objects each webhook reads: Nodes (high-availability-config
// counts them, system-components-config reads their taints, the authorizer its agent's),
// a zoned namespace with an HPA, a ServiceAccount that does not automount its token, a shoot
// namespace with its load-balancing ConfigMap and the internal istio gateway, and a node
// agent's Machine and OSC secret.
func createFixtures(ctx context.Context, c client.Client) error {
	osc := []byte("apiVersion: extensions.gardener.cloud/v1alpha1\nkind: OperatingSystemConfig\nspec:\n  files:\n  - path: /etc/a\n    content: {secretRef: {name: gardener-node-agent-ref-a, dataKey: a}}\n")
	machine := &unstructured.Unstructured{}
	machine.SetAPIVersion("machine.sapcloud.io/v1alpha1")
	machine.SetKind("Machine")
	machine.SetNamespace(machineNamespace)
	machine.SetName(machineName)
	machine.SetLabels(map[string]string{"node": nodeName})
	if err := unstructured.SetNestedField(machine.Object, oscSecretName, "spec", "nodeTemplate", "metadata", "labels", v1beta1constants.LabelWorkerPoolGardenerNodeAgentSecretName); err != nil {
		return err
	}
	objects := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			Name: haNamespace,
			Labels: map[string]string{
				v1beta1constants.GardenRole:                      "load",
				resourcesv1alpha1.HighAvailabilityConfigConsider: "true",
			},
			Annotations: map[string]string{
				resourcesv1alpha1.HighAvailabilityConfigFailureToleranceType: "zone",
				resourcesv1alpha1.HighAvailabilityConfigZones:                "a,b,c",
			},
		}},
		&autoscalingv2.HorizontalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Namespace: haNamespace, Name: serverDeploymentName},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: serverDeploymentName},
				MinReplicas:    ptrTo[int32](2), MaxReplicas: 6,
			},
		},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: podNamespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: podNamespace, Name: noAutomountAccount}, AutomountServiceAccountToken: ptrTo(false)},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: istioNamespace}},
		&corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: istioNamespace, Name: v1beta1constants.InternalSNIIngressServiceName},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "tls-tunnel", Port: 9443}}},
		},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: shootNamespace, Labels: map[string]string{v1beta1constants.GardenRole: v1beta1constants.GardenRoleShoot}}},
		&corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: shootNamespace, Name: rmv1alpha1.IstioInternalLoadBalancingConfigMapName},
			Data:       map[string]string{"hosts": "api.shoot.example.com,api.shoot.internal.example.com", "istio-namespace": istioNamespace},
		},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: machineNamespace}},
		machine,
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: oscSecretName, Labels: map[string]string{poolLabel: "a"}},
			Data:       map[string][]byte{"osc.yaml": osc},
		},
	}
	for _, name := range []string{nodeName, "node-b", "node-c"} {
		objects = append(objects, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			corev1.LabelHostname: name,
			poolLabel:            systemPool,
			v1beta1constants.LabelWorkerPoolGardenerNodeAgentSecretName: oscSecretName,
		}}})
	}
	for _, o := range objects {
		if err := c.Create(ctx, o); err != nil {
			return err
		}
	}
	return nil
}

// scenarios are the requests each webhook is measured with: the everyday request of its
// registration, answered on its mutating (or allowing) path.
func scenarios() []scenario {
	const create = admissionv1.Create
	return []scenario{
		admissionScenario(highavailabilityconfig.Name, highavailabilityconfig.Path, create, serverDeployment(), nil, true),
		admissionScenario(kubernetesservicehost.Name, kubernetesservicehost.Path, create, pod(podNamespace), nil, true),
		admissionScenario(projectedtokenmount.Name, projectedtokenmount.Path, create, withServiceAccount(pod(podNamespace), noAutomountAccount), nil, true),
		admissionScenario(tokeninvalidator.Name, tokeninvalidator.Path, admissionv1.Update, consideredTokenSecret(), consideredTokenSecret(), true),
		admissionScenario(podtopologyspreadconstraints.Name, podtopologyspreadconstraints.Path, create, spreadPod(), nil, true),
		admissionScenario(systemcomponentsconfig.Name, systemcomponentsconfig.Path, create, pod(metav1.NamespaceSystem), nil, true),
		admissionScenario(endpointslicehints.Name, endpointslicehints.Path, create, zonedEndpointSlice(), nil, true),
		admissionScenario(crddeletionprotection.Name, crddeletionprotection.Path, admissionv1.Delete, nil, confirmedProtectedCRD(), false),
		admissionScenario(extensionvalidation.Name, workerPath, admissionv1.Update, worker("m5.xlarge"), worker("m5.large"), false),
		authorizationScenario(),
		admissionScenario(podschedulername.Name, podschedulername.Path, create, withScheduler(pod(podNamespace), corev1.DefaultSchedulerName), nil, true),
		admissionScenario(seccompprofile.Name, seccompprofile.Path, create, pod(podNamespace), nil, true),
		admissionScenario(podkubeapiserverloadbalancing.Name, podkubeapiserverloadbalancing.Path, create, kubeconfigPod(), nil, true),
		admissionScenario(vpainplaceupdates.Name, vpainplaceupdates.Path, create, autoVPA(), nil, true),
		admissionScenario(extensionregistration.Name, extensionregistration.ControllerRegistrationPath, create, controllerRegistration(), nil, false),
	}
}

func typeMeta(gvk schema.GroupVersionKind) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind}
}

// consideredTokenSecret is a static token Secret the tokeninvalidator function labelled, as
// kube-controller-manager writes it when it regenerates the token.
func consideredTokenSecret() *corev1.Secret {
	return &corev1.Secret{
		TypeMeta: typeMeta(corev1.SchemeGroupVersion.WithKind("Secret")),
		ObjectMeta: metav1.ObjectMeta{Namespace: podNamespace, Name: "app-token-x7k2p",
			Labels: map[string]string{
				resourcesv1alpha1.ResourceManagerPurpose: tokeninvalidator.PurposeTokenInvalidation,
				tokeninvalidator.LabelConsider:           "true",
			},
			Annotations: map[string]string{corev1.ServiceAccountNameKey: "app", corev1.ServiceAccountUIDKey: "86e98645-2e05-11e9-863a-b2d4d086dd5a"},
		},
		Type: corev1.SecretTypeServiceAccountToken,
		Data: map[string][]byte{"ca.crt": []byte("cluster-ca"), "namespace": []byte(podNamespace), corev1.ServiceAccountTokenKey: []byte("eyJhbGciOiJSUzI1NiJ9.static")},
	}
}

// serverDeployment is a server's Deployment in the zoned namespace, scaled by its HPA.
func serverDeployment() *appsv1.Deployment {
	labels := map[string]string{"app": "server"}
	return &appsv1.Deployment{
		TypeMeta: typeMeta(appsv1.SchemeGroupVersion.WithKind("Deployment")),
		ObjectMeta: metav1.ObjectMeta{Namespace: haNamespace, Name: serverDeploymentName, Labels: map[string]string{
			"app": "server", resourcesv1alpha1.HighAvailabilityConfigType: resourcesv1alpha1.HighAvailabilityConfigTypeServer,
		}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptrTo[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.example.com/server:v1"}}},
			},
		},
	}
}

// pod is a plain Pod of a ReplicaSet, as the kube-apiserver sends it on creation (named by
// generateName, so without a name).
func pod(namespace string) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta: typeMeta(corev1.SchemeGroupVersion.WithKind("Pod")),
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, GenerateName: "web-5d8f7c9b4-", Labels: map[string]string{
			"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: "5d8f7c9b4",
		}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "main", Image: "registry.example.com/web:v1",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{}},
		}}},
	}
}

func withServiceAccount(p *corev1.Pod, name string) *corev1.Pod {
	p.Spec.ServiceAccountName = name
	return p
}

func withScheduler(p *corev1.Pod, name string) *corev1.Pod {
	p.Spec.SchedulerName = name
	return p
}

// spreadPod is a Deployment's Pod spread over zones by its app.
func spreadPod() *corev1.Pod {
	p := pod(podNamespace)
	p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
		TopologyKey: corev1.LabelTopologyZone, MaxSkew: 1, WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
	}}
	return p
}

// kubeconfigPod is a shoot control-plane Pod that mounts the generic token kubeconfig.
func kubeconfigPod() *corev1.Pod {
	p := pod(shootNamespace)
	p.Spec.Volumes = []corev1.Volume{{Name: "kubeconfig", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
		{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "generic-token-kubeconfig-92e9ae14"}}},
	}}}}}
	return p
}

// zonedEndpointSlice is a Service's EndpointSlice with endpoints in three zones.
func zonedEndpointSlice() *discoveryv1.EndpointSlice {
	slice := &discoveryv1.EndpointSlice{
		TypeMeta:    typeMeta(discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice")),
		ObjectMeta:  metav1.ObjectMeta{Namespace: podNamespace, GenerateName: "web-", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptrTo("http"), Port: ptrTo[int32](8080)}},
	}
	for i, zone := range []string{"a", "b", "c"} {
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{"10.0.0." + string(rune('1'+i))},
			Conditions: discoveryv1.EndpointConditions{Ready: ptrTo(true)},
			Zone:       ptrTo(zone),
		})
	}
	return slice
}

// confirmedProtectedCRD is a protected CRD whose deletion is confirmed.
func confirmedProtectedCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		TypeMeta: typeMeta(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition")),
		ObjectMeta: metav1.ObjectMeta{
			Name:        "infrastructures.extensions.gardener.cloud",
			Labels:      map[string]string{crddeletionprotection.ProtectedLabel: "true"},
			Annotations: map[string]string{crddeletionprotection.ConfirmationAnnotation: "true"},
		},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "extensions.gardener.cloud", Scope: apiextensionsv1.NamespaceScoped,
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: "infrastructures", Singular: "infrastructure", Kind: "Infrastructure", ListKind: "InfrastructureList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1alpha1", Served: true, Storage: true}},
		},
	}
}

// worker is a shoot's Worker with one pool of machineType.
func worker(machineType string) *extensionsv1alpha1.Worker {
	return &extensionsv1alpha1.Worker{
		TypeMeta:   typeMeta(extensionsv1alpha1.SchemeGroupVersion.WithKind("Worker")),
		ObjectMeta: metav1.ObjectMeta{Namespace: machineNamespace, Name: "load", ResourceVersion: "1"},
		Spec: extensionsv1alpha1.WorkerSpec{
			DefaultSpec: extensionsv1alpha1.DefaultSpec{Type: "aws"}, Region: "eu-west-1",
			SecretRef: corev1.SecretReference{Namespace: machineNamespace, Name: "cloudprovider"},
			Pools: []extensionsv1alpha1.WorkerPool{{
				Name: "pool-a", MachineType: machineType, Minimum: 1, Maximum: 3,
				MachineImage: extensionsv1alpha1.MachineImage{Name: "gardenlinux", Version: "1877.0"},
				Zones:        []string{"a", "b", "c"},
			}},
		},
	}
}

// autoVPA is a VerticalPodAutoscaler in the Auto mode.
func autoVPA() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "autoscaling.k8s.io/v1",
		"kind":       "VerticalPodAutoscaler",
		"metadata":   map[string]any{"name": "web", "namespace": podNamespace},
		"spec": map[string]any{
			"targetRef":    map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
			"updatePolicy": map[string]any{"updateMode": "Auto"},
		},
	}}
}

// controllerRegistration is a new registration of a kind/type no other controls primarily: the
// webhook validates it and lists the registrations.
func controllerRegistration() *gardencorev1beta1.ControllerRegistration {
	return &gardencorev1beta1.ControllerRegistration{
		TypeMeta:   typeMeta(gardencorev1beta1.SchemeGroupVersion.WithKind("ControllerRegistration")),
		ObjectMeta: metav1.ObjectMeta{Name: "provider-local"},
		Spec: gardencorev1beta1.ControllerRegistrationSpec{Resources: []gardencorev1beta1.ControllerResource{
			{Kind: extensionsv1alpha1.InfrastructureResource, Type: "local"},
		}},
	}
}
