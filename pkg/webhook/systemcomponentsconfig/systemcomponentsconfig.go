// Package systemcomponentsconfig schedules system-component Pods onto the Nodes meant for them
// (GRM's system-components-config webhook): it adds the configured node selector and
// tolerations, and tolerations for the taints that the matching Nodes carry right now, so that
// Pods can be scheduled and keep running while a shoot's worker taints are being changed.
package systemcomponentsconfig

import (
	"context"
	"fmt"
	"strings"
	"time"

	rmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gardener-knative/gardener-knative/pkg/cache"
	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/kube"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/webhook"
)

const (
	// Name is the webhook's name.
	Name = "system-components-config"
	// Path is where Gardener serves it.
	Path = "/webhooks/system-components-config"

	// DefaultNodeCacheTTL is how long the Nodes' taints are reused: a Pod may miss a taint
	// added (or keep one removed) at most this long ago.
	DefaultNodeCacheTTL = 5 * time.Second
	// ToBeDeletedByClusterAutoscaler is the cluster-autoscaler's taint on a Node it drains;
	// tolerating it would keep Pods on a Node that is about to go.
	ToBeDeletedByClusterAutoscaler = "ToBeDeletedByClusterAutoscaler"

	// nodePageSize keeps each LIST response small in large clusters.
	nodePageSize = 500
	// nodeCacheSize bounds the cached toleration lists: one per tenant (control plane) served.
	nodeCacheSize = 1024
)

// Config is the webhook's configuration besides the component configuration.
type Config struct {
	// NodeCacheTTL is how long the Nodes' taints are cached; 0 lists the Nodes for every Pod.
	NodeCacheTTL time.Duration `envconfig:"SYSTEM_COMPONENTS_CONFIG_NODE_CACHE_TTL" default:"5s"`
}

// configured is the webhook with its settings (SYSTEM_COMPONENTS_CONFIG_NODE_CACHE_TTL).
var configured = webhook.Configured[Config]{
	Name: Name,
	// gardenlet turns it off for workerless shoots.
	AppliesTo: (*tenant.Settings).HasWorkers,
	Enabled: func(c *componentconfig.ResourceManagerFile) bool {
		return c.Webhooks.SystemComponentsConfig.Enabled
	},
	Build: func(deps webhook.Deps, cfg Config) (webhook.Webhook, error) {
		h, err := Handler(deps.Target, deps.Config.Webhooks.SystemComponentsConfig, deps.Clock, cfg.NodeCacheTTL)
		if err != nil {
			return webhook.Webhook{}, err
		}
		return webhook.Admission(Name, Path, h, deps.Log), nil
	},
}

// Webhook is the constructor the server registers; the node cache TTL comes from
// SYSTEM_COMPONENTS_CONFIG_NODE_CACHE_TTL.
var Webhook = configured.Constructor()

// WithNodeCacheTTL is Webhook with a fixed node cache TTL instead of the environment's.
func WithNodeCacheTTL(ttl time.Duration) webhook.Constructor {
	return configured.With(Config{NodeCacheTTL: ttl})
}

// Handler adds cfg's node selector and tolerations, and tolerations for the taints of the
// Nodes matching cfg.NodeSelector, to Pods not managed by a DaemonSet. It lists the Nodes with
// target at most once per nodeCacheTTL (as told by clk) and tenant: every Pod creation needs
// the taints of the system-component Nodes, and a LIST per Pod would cost the API server more
// than the webhook saves. A negative TTL is an error.
func Handler(target client.Reader, cfg rmv1alpha1.SystemComponentsConfigWebhookConfig, clk clock.PassiveClock, nodeCacheTTL time.Duration) (admission.Handler, error) {
	nodes, err := cache.New(cache.Options[[]corev1.Toleration]{TTL: nodeCacheTTL, Size: nodeCacheSize, Clock: clk})
	if err != nil {
		return nil, fmt.Errorf("node cache: %w", err)
	}
	listTolerations := func(ctx context.Context) ([]corev1.Toleration, error) {
		return nodeTolerations(ctx, target, cfg.NodeSelector)
	}
	return webhook.Mutator(func() *corev1.Pod { return &corev1.Pod{} }, func(ctx context.Context, _ admission.Request, pod *corev1.Pod) error {
		// The registration's object selector excludes the skip label already; this keeps the
		// opt-out when the webhook is registered otherwise.
		if pod.Labels[resourcesv1alpha1.SystemComponentsConfigSkip] == "true" || managedByDaemonSet(pod) {
			return nil
		}
		// One entry per tenant: the Nodes are those of the request's cluster.
		fromNodes, err := nodes.Get(ctx, "", listTolerations)
		if err != nil {
			return fmt.Errorf("reading the taints of system component Nodes: %w", err)
		}
		for k, v := range cfg.PodNodeSelector {
			if pod.Spec.NodeSelector == nil {
				pod.Spec.NodeSelector = make(map[string]string, len(cfg.PodNodeSelector))
			}
			pod.Spec.NodeSelector[k] = v
		}
		pod.Spec.Tolerations = mergeTolerations(pod.Spec.Tolerations, podTolerations(ctx, cfg), fromNodes)
		return nil
	}), nil
}

// podTolerations are the configured tolerations: a tenant's are those gardenlet derives from its
// shoot's worker pools (tenant.Settings), the seed's those of the configuration.
func podTolerations(ctx context.Context, cfg rmv1alpha1.SystemComponentsConfigWebhookConfig) []corev1.Toleration {
	if s, ok := tenant.SettingsFrom(ctx); ok {
		return s.SystemComponentTolerations
	}
	return cfg.PodTolerations
}

// managedByDaemonSet: a DaemonSet places its Pods on every Node itself, whatever the Node's
// purpose.
func managedByDaemonSet(pod *corev1.Pod) bool {
	for _, ref := range pod.OwnerReferences {
		if ref.APIVersion == appsv1.SchemeGroupVersion.String() && ref.Kind == "DaemonSet" && ptr.Deref(ref.Controller, false) {
			return true
		}
	}
	return false
}

// nodeTolerations lists the Nodes matching selector (all Nodes for an empty one) and returns
// a toleration for each distinct taint that is not ignored.
func nodeTolerations(ctx context.Context, target client.Reader, selector map[string]string) ([]corev1.Toleration, error) {
	nodes, err := kube.ListAll(ctx, target, &corev1.NodeList{}, nodePageSize, client.MatchingLabels(selector))
	if err != nil {
		return nil, err
	}
	var tolerations []corev1.Toleration
	for _, obj := range nodes {
		for _, taint := range obj.(*corev1.Node).Spec.Taints {
			if !ignoredTaint(taint) {
				tolerations = kube.AppendToleration(tolerations, kube.TolerationForTaint(taint))
			}
		}
	}
	return tolerations, nil
}

// ignoredTaint: Kubernetes' own taints (node.kubernetes.io/not-ready, .../unreachable, ...)
// drive taint-based evictions and must keep doing so, and the cluster-autoscaler's must keep
// draining Nodes it scales down.
func ignoredTaint(taint corev1.Taint) bool {
	return strings.Contains(taint.Key, "kubernetes.io/") || taint.Key == ToBeDeletedByClusterAutoscaler
}

// mergeTolerations returns the distinct tolerations of all lists in order of first
// appearance, in a new slice (lists may be shared with the cache).
func mergeTolerations(lists ...[]corev1.Toleration) []corev1.Toleration {
	var out []corev1.Toleration
	for _, list := range lists {
		for _, t := range list {
			out = kube.AppendToleration(out, t)
		}
	}
	return out
}
