// Package podkubeapiserverloadbalancing lets control-plane Pods reach their kube-apiserver
// through the seed's internal istio ingress gateway instead of through the kube-apiserver's
// Service alone (GRM's pod-kube-apiserver-load-balancing webhook): a new Pod that mounts a
// generic token kubeconfig, in a namespace with the istio-internal-load-balancing ConfigMap,
// gets host aliases that resolve the kube-apiserver's host names to the internal gateway's
// cluster IPs, and the label that lets its network policies reach the gateway. Istio then
// balances the connections over all kube-apiserver replicas (HTTP/2 keeps one connection to
// one replica otherwise).
package podkubeapiserverloadbalancing

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"
	"time"

	rmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubernetesscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gardener-knative/gardener-knative/pkg/cache"
	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/webhook"
)

const (
	// Name is the webhook's name (Gardener's handler name).
	Name = "pod-kube-apiserver-load-balancing"
	// Path is where Gardener serves it.
	Path = "/webhooks/pod-kube-apiserver-load-balancing"

	// gatewayPort is the internal istio ingress gateway's port for kube-apiserver traffic,
	// the port of the network policy label.
	gatewayPort = 9443
)

// Config is the webhook's configuration from the environment.
type Config struct {
	// CacheTTL bounds how long what was read of a namespace's istio-internal-load-balancing
	// ConfigMap and of an internal gateway Service is reused (0 reads every time). Gardener
	// reads both from an informer cache.
	CacheTTL time.Duration `envconfig:"POD_KUBE_APISERVER_LOAD_BALANCING_CACHE_TTL" default:"5s"`
	// CacheSize bounds how many ConfigMaps and how many Services are remembered.
	CacheSize int `envconfig:"POD_KUBE_APISERVER_LOAD_BALANCING_CACHE_SIZE" default:"10000"`
}

// Webhook is the constructor the server registers.
var Webhook = webhook.Configured[Config]{
	Name: Name,
	// gardenlet turns it off for workerless shoots.
	AppliesTo: (*tenant.Settings).HasWorkers,
	Enabled: func(c *componentconfig.ResourceManagerFile) bool {
		return c.Webhooks.PodKubeAPIServerLoadBalancing.Enabled
	},
	Build: func(deps webhook.Deps, cfg Config) (webhook.Webhook, error) {
		h, err := NewHandler(deps.Target, deps.Clock, cfg, deps.Log.With("webhook", Name))
		if err != nil {
			return webhook.Webhook{}, err
		}
		return webhook.Admission(Name, Path, h, deps.Log), nil
	},
}.Constructor()

// Handler adds the host aliases and the network policy label to Pods that use a generic token
// kubeconfig, reading the ConfigMap and the gateway's Service with target on every request.
func Handler(target client.Reader, log *slog.Logger) admission.Handler {
	h, err := NewHandler(target, nil, Config{CacheSize: 1}, log)
	if err != nil {
		panic(err) // unreachable: a zero TTL and size 1 are valid
	}
	return h
}

// NewHandler is Handler with the reads cached as cfg says.
func NewHandler(target client.Reader, clk clock.PassiveClock, cfg Config, log *slog.Logger) (admission.Handler, error) {
	r, err := newReader(target, clk, cfg)
	if err != nil {
		return nil, err
	}
	decoder := admission.NewDecoder(kubernetesscheme.Scheme)
	return webhook.Defaulter(decoder, func() *corev1.Pod { return &corev1.Pod{} }, func(ctx context.Context, req admission.Request, pod *corev1.Pod) error {
		return balance(ctx, r, pod, log)
	}), nil
}

// loadBalancing is what the webhook uses of a namespace's istio-internal-load-balancing
// ConfigMap.
type loadBalancing struct {
	hosts, istioNamespace string
}

// reader reads the ConfigMaps and gateway Services through short-lived caches. A missing
// object is remembered as missing (nil) like any other answer: a namespace without the
// ConfigMap is the common case, and must not cost a read per Pod.
type reader struct {
	target     client.Reader
	configMaps *cache.Cache[*loadBalancing]
	gateways   *cache.Cache[*[]string]
}

func newReader(target client.Reader, clk clock.PassiveClock, cfg Config) (*reader, error) {
	configMaps, err := cache.New(cache.Options[*loadBalancing]{TTL: cfg.CacheTTL, Size: cfg.CacheSize, Clock: clk})
	if err != nil {
		return nil, fmt.Errorf("ConfigMap cache: %w", err)
	}
	gateways, err := cache.New(cache.Options[*[]string]{TTL: cfg.CacheTTL, Size: cfg.CacheSize, Clock: clk})
	if err != nil {
		return nil, fmt.Errorf("Service cache: %w", err)
	}
	return &reader{target: target, configMaps: configMaps, gateways: gateways}, nil
}

// loadBalancing returns the namespace's ConfigMap's data, nil when there is none.
func (r *reader) loadBalancing(ctx context.Context, key client.ObjectKey) (*loadBalancing, error) {
	return r.configMaps.Get(ctx, key.String(), func(ctx context.Context) (*loadBalancing, error) {
		configMap := &corev1.ConfigMap{}
		if err := r.target.Get(ctx, key, configMap); apierrors.IsNotFound(err) {
			return nil, nil
		} else if err != nil {
			return nil, err
		}
		return &loadBalancing{
			hosts:          configMap.Data[rmv1alpha1.HostsConfigMapKey],
			istioNamespace: configMap.Data[rmv1alpha1.IstioNamespaceConfigMapKey],
		}, nil
	})
}

// gatewayIPs returns the cluster IPs of the internal istio ingress gateway's Service in
// namespace, nil when there is none.
func (r *reader) gatewayIPs(ctx context.Context, namespace string) (*[]string, error) {
	if namespace == "" {
		return nil, nil // the API server has no Service without a namespace
	}
	return r.gateways.Get(ctx, namespace, func(ctx context.Context) (*[]string, error) {
		service := &corev1.Service{}
		if err := r.target.Get(ctx, client.ObjectKey{Namespace: namespace, Name: v1beta1constants.InternalSNIIngressServiceName}, service); apierrors.IsNotFound(err) {
			return nil, nil
		} else if err != nil {
			return nil, err
		}
		return &service.Spec.ClusterIPs, nil
	})
}

func balance(ctx context.Context, r *reader, pod *corev1.Pod, log *slog.Logger) error {
	secret, ok := genericKubeconfigSecret(pod)
	if !ok {
		return nil
	}
	key := pod.Namespace + "/" + pod.Name
	log.DebugContext(ctx, "pod uses a generic token kubeconfig", "pod", key, "secretName", secret)

	// The ConfigMap is looked up in the namespace the Pod's object names, as Gardener does: a
	// Pod object without one (kubernetes/kubernetes#88282) finds no ConfigMap, so it is left
	// alone rather than read in a namespace guessed from the request.
	if pod.Namespace == "" {
		return nil
	}
	configMapKey := client.ObjectKey{Namespace: pod.Namespace, Name: rmv1alpha1.IstioInternalLoadBalancingConfigMapName}
	config, err := r.loadBalancing(ctx, configMapKey)
	if err != nil {
		return fmt.Errorf("failed to get istio-internal-load-balancing configmap %q: %w", configMapKey, err)
	}
	if config == nil {
		return nil
	}
	if config.hosts == "" {
		return fmt.Errorf("%q key in configmap %q provides an empty value", rmv1alpha1.HostsConfigMapKey, configMapKey)
	}
	hosts := strings.Split(config.hosts, ",")

	gatewayKey := client.ObjectKey{Namespace: config.istioNamespace, Name: v1beta1constants.InternalSNIIngressServiceName}
	ips, err := r.gatewayIPs(ctx, config.istioNamespace)
	if err == nil && ips == nil {
		// Gardener reads the Service from its informer cache, whose NotFound names the kind
		// ("Service ... not found") where the API server names the resource ("services ...
		// not found"). The webhook answers with that status, so it is Gardener's.
		err = apierrors.NewNotFound(schema.GroupResource{Resource: "Service"}, gatewayKey.Name)
	}
	if err != nil {
		return fmt.Errorf("failed to get internal istio-ingressgateway service %q: %w", gatewayKey, err)
	}
	for _, ip := range *ips {
		pod.Spec.HostAliases = append(pod.Spec.HostAliases, corev1.HostAlias{IP: ip, Hostnames: hosts})
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[NetworkPolicyLabel(config.istioNamespace+"-"+v1beta1constants.InternalSNIIngressServiceName, gatewayPort)] = v1beta1constants.LabelNetworkPolicyAllowed
	log.DebugContext(ctx, "added host aliases and the network policy label", "pod", key, "ips", *ips, "hostnames", hosts)
	return nil
}

// genericKubeconfigSecret returns the name of the first generic token kubeconfig Secret the Pod
// mounts, as a volume or as a source of a projected volume (the name is a prefix: Gardener
// appends a hash).
func genericKubeconfigSecret(pod *corev1.Pod) (string, bool) {
	for _, volume := range pod.Spec.Volumes {
		if volume.Secret != nil && strings.HasPrefix(volume.Secret.SecretName, v1beta1constants.SecretNameGenericTokenKubeconfig) {
			return volume.Secret.SecretName, true
		}
		if volume.Projected != nil {
			for _, source := range volume.Projected.Sources {
				if source.Secret != nil && strings.HasPrefix(source.Secret.Name, v1beta1constants.SecretNameGenericTokenKubeconfig) {
					return source.Secret.Name, true
				}
			}
		}
	}
	return "", false
}

// NetworkPolicyLabel is the label that lets a Pod reach a Service's port through the network
// policies GRM generates: networking.resources.gardener.cloud/to-<service>-tcp-<port>, with the
// part after the prefix cut to 63 characters (a label name's limit) and ended by a hash of the
// whole when it is longer.
func NetworkPolicyLabel(service string, port int) string {
	name := fmt.Sprintf("to-%s-tcp-%d", service, port)
	const maxNameLength = 63
	if len(name) > maxNameLength {
		sum := sha256.Sum256([]byte(name))
		name = name[:maxNameLength-6] + "-" + hex.EncodeToString(sum[:])[:5]
	}
	return resourcesv1alpha1.NetworkPolicyLabelKeyPrefix + name
}
