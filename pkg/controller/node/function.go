// Package node is GRM's Node controller as a function: its reconcilers criticalcomponents
// (removes the taint node.gardener.cloud/critical-components-not-ready from a Node once its
// node-critical components are ready) and agentreconciliationdelay (spreads the node agents'
// reconciliation delays over the Nodes) act on the Nodes of the target, each off unless
// configured, as in Gardener.
package node

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/controller/node/agentreconciliationdelay"
	"github.com/gardener-knative/gardener-knative/pkg/controller/node/criticalcomponents"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/clients"
)

// Config is the Node controller's part of the ResourceManagerConfiguration
// (controllers.nodeCriticalComponents, controllers.nodeAgentReconciliationDelay), overridden by
// the environment.
type Config struct {
	// CriticalComponentsEnabled is controllers.nodeCriticalComponents.enabled.
	CriticalComponentsEnabled bool `envconfig:"NODE_CRITICAL_COMPONENTS_ENABLED"`
	// CriticalComponentsBackoff is controllers.nodeCriticalComponents.backoff: how soon a Node
	// whose components are not ready is checked again (the period of the sweep "recheck").
	CriticalComponentsBackoff time.Duration `envconfig:"NODE_CRITICAL_COMPONENTS_BACKOFF"`
	// AgentReconciliationDelayEnabled is controllers.nodeAgentReconciliationDelay.enabled.
	AgentReconciliationDelayEnabled bool `envconfig:"NODE_AGENT_RECONCILIATION_DELAY_ENABLED"`
	// MinDelay and MaxDelay are controllers.nodeAgentReconciliationDelay.minDelay and .maxDelay;
	// per seed, the maximum is each shoot's, as gardenlet configures it.
	MinDelay time.Duration `envconfig:"NODE_AGENT_RECONCILIATION_MIN_DELAY"`
	MaxDelay time.Duration `envconfig:"NODE_AGENT_RECONCILIATION_MAX_DELAY"`
}

// Gardener's defaults, which it applies only to an enabled controller: here also to one the
// environment enables over a file that does not.
const (
	defaultBackoff  = 10 * time.Second
	defaultMaxDelay = 5 * time.Minute
)

// FromResourceManager takes the settings from the file (Gardener's defaults applied).
func (c *Config) FromResourceManager(rm *componentconfig.ResourceManagerFile) {
	cc, delay := rm.Controllers.NodeCriticalComponents, rm.Controllers.NodeAgentReconciliationDelay
	c.CriticalComponentsEnabled = cc.Enabled
	c.CriticalComponentsBackoff = defaultBackoff
	if cc.Backoff != nil {
		c.CriticalComponentsBackoff = cc.Backoff.Duration
	}
	c.AgentReconciliationDelayEnabled = delay.Enabled
	c.MinDelay, c.MaxDelay = 0, defaultMaxDelay
	if delay.MinDelay != nil {
		c.MinDelay = delay.MinDelay.Duration
	}
	if delay.MaxDelay != nil {
		c.MaxDelay = delay.MaxDelay.Duration
	}
}

// Reconciler names.
const (
	CriticalComponents       = "criticalcomponents"
	AgentReconciliationDelay = "agentreconciliationdelay"
)

// kubeSystem selects the target's kube-system Namespace: the one key of the delay reconciler.
const kubeSystem = "kubernetes.io/metadata.name=" + metav1.NamespaceSystem

// Function is GRM's Node controller.
var Function = &function.Function{
	Name:       "node",
	Parts:      []function.Part{function.Seed},
	Config:     &Config{},
	Deployment: function.PerSeed,
	RBAC: []rbacv1.PolicyRule{
		// Per seed: the tenants (Discover, each tenant's Cluster, whose Shoot holds the maximum
		// delay, and access Secrets).
		{APIGroups: []string{clients.ClusterGroup}, Resources: []string{clients.ClusterResource}, Verbs: []string{"get", "list"}},
	},
	// Each tenant's access Secrets, in enrolled tenants' namespaces only.
	TenantRBAC: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}},
	Reconcilers: []function.Reconciler{
		// Gardener runs it only in the resource managers of shoots with workers.
		{Name: CriticalComponents, For: kinds.Node, Cluster: function.Target, New: newCriticalComponents, AppliesTo: (*tenant.Settings).HasWorkers},
		{Name: AgentReconciliationDelay, For: kinds.Namespace, Cluster: function.Target, New: newAgentReconciliationDelay},
	},
	Watches: []function.Watch{
		{Kind: kinds.Node, Cluster: function.Target, Reconciler: CriticalComponents, Predicate: TaintedNode},
		{Kind: kinds.Pod, Cluster: function.Target, Reconciler: CriticalComponents, LabelSelector: criticalcomponents.CriticalSelector, Predicate: CriticalPodMayUnblock, Map: MapPodToNode},
		{Kind: kinds.CSINode, Cluster: function.Target, Reconciler: CriticalComponents, Predicate: notDeleted, Map: MapCSINodeToNode},
		{Kind: kinds.Node, Cluster: function.Target, Reconciler: AgentReconciliationDelay, Predicate: NodeAddedOrRemoved, Map: MapToTarget},
	},
	Sweeps: []function.Sweep{
		{
			// Gardener requeues a Node that is not ready yet after the backoff; a stateless
			// function looks at every tainted Node that often instead. Only a tainted Node's
			// reconcile reads the critical Pods and DaemonSets, so they are listed on demand:
			// a shoot whose Nodes are all ready costs one LIST per tick. (Its CSINode, read by
			// name and only where a pod waits for a driver, is a GET.)
			Name: "recheck", Reconciler: CriticalComponents,
			Period:  func(config any) time.Duration { return config.(*Config).CriticalComponentsBackoff },
			Off:     func(config any) bool { return !config.(*Config).CriticalComponentsEnabled },
			Primary: function.List{Kind: kinds.Node, Cluster: function.Target},
			Related: []function.List{
				{Kind: kinds.Pod, Cluster: function.Target, Namespace: metav1.NamespaceSystem, LabelSelector: criticalcomponents.CriticalSelector, OnDemand: true,
					Indexes: map[string]function.IndexFunc{criticalcomponents.PodNodeName: criticalcomponents.IndexPodNodeName}, Project: criticalcomponents.ProjectPod},
				{Kind: kinds.DaemonSet, Cluster: function.Target, Namespace: metav1.NamespaceSystem, LabelSelector: criticalcomponents.CriticalSelector, OnDemand: true},
			},
		},
		{
			// Catches lost events, changed worker pools (a Node's node agent Secret, a Secret's
			// serial reconciliation) and annotations changed by others.
			Name: "delays", Schedule: "* * * * *", Reconciler: AgentReconciliationDelay,
			Off:     func(config any) bool { return !config.(*Config).AgentReconciliationDelayEnabled },
			Primary: function.List{Kind: kinds.Namespace, Cluster: function.Target, MetadataOnly: true, LabelSelector: kubeSystem},
			Related: []function.List{
				{Kind: kinds.Node, Cluster: function.Target, MetadataOnly: true},
				{Kind: kinds.Secret, Cluster: function.Target, MetadataOnly: true, Namespace: metav1.NamespaceSystem, LabelSelector: agentreconciliationdelay.SecretSelector},
			},
		},
	},
}

// disabled is the handler of a reconciler that is not configured: events and sweeps that reach
// it change nothing.
var disabled = function.HandlerFunc(func(context.Context, function.Request) error { return nil })

func newCriticalComponents(deps function.Deps) (function.Handler, error) {
	if !deps.Config.(*Config).CriticalComponentsEnabled {
		return disabled, nil
	}
	return &criticalcomponents.Reconciler{Target: deps.Target, Log: deps.Log}, nil
}

func newAgentReconciliationDelay(deps function.Deps) (function.Handler, error) {
	cfg := deps.Config.(*Config)
	if !cfg.AgentReconciliationDelayEnabled {
		return disabled, nil
	}
	// GRM validates its configuration at start-up.
	if err := agentreconciliationdelay.Validate(cfg.MinDelay, cfg.MaxDelay); err != nil {
		return nil, err
	}
	return &agentreconciliationdelay.Reconciler{MinDelay: cfg.MinDelay, MaxDelay: cfg.MaxDelay, Target: deps.Target, Log: deps.Log}, nil
}

// TaintedNode passes a Node's creations and updates while it carries the taint (Gardener's
// predicate): a Node without it has nothing to remove.
func TaintedNode(ev function.Event) bool {
	if ev.Deleted || ev.Object == nil {
		return false
	}
	taints, _, _ := unstructured.NestedSlice(ev.Object.Object, "spec", "taints")
	for _, t := range taints {
		if m, ok := t.(map[string]any); ok && m["key"] == criticalcomponents.Taint {
			return true
		}
	}
	return false
}

// CriticalPodMayUnblock passes the events of node-critical pods of kube-system on a Node that can
// make its components ready: a pod that is ready, or gone (one not ready no longer counts). A pod
// that is not ready blocks; its event cannot remove the taint.
func CriticalPodMayUnblock(ev function.Event) bool {
	if ev.Object == nil || ev.Key.Namespace != metav1.NamespaceSystem || nodeName(ev.Object) == "" {
		return false
	}
	return ev.Deleted || podReady(ev.Object)
}

func podReady(pod *unstructured.Unstructured) bool {
	conditions, _, _ := unstructured.NestedSlice(pod.Object, "status", "conditions")
	for _, c := range conditions {
		if m, ok := c.(map[string]any); ok && m["type"] == string(corev1.PodReady) {
			return m["status"] == string(corev1.ConditionTrue)
		}
	}
	return false
}

func nodeName(pod *unstructured.Unstructured) string {
	name, _, _ := unstructured.NestedString(pod.Object, "spec", "nodeName")
	return name
}

// MapPodToNode maps a pod to the Node it is on.
func MapPodToNode(_ context.Context, _ client.Reader, ev function.Event) ([]function.Key, error) {
	return []function.Key{{Name: nodeName(ev.Object)}}, nil
}

func notDeleted(ev function.Event) bool { return !ev.Deleted }

// MapCSINodeToNode maps a CSINode to its Node: they share the name.
func MapCSINodeToNode(_ context.Context, _ client.Reader, ev function.Event) ([]function.Key, error) {
	return []function.Key{{Name: ev.Key.Name}}, nil
}

// NodeAddedOrRemoved passes a Node's creation and deletion: only they change the list the delays
// are spread over (Gardener's predicate). Updates are dropped; the sweep catches a Node moving to
// a worker pool of another kind.
func NodeAddedOrRemoved(ev function.Event) bool { return ev.Created || ev.Deleted }

// MapToTarget maps a Node's event to the one key of its target.
func MapToTarget(context.Context, client.Reader, function.Event) ([]function.Key, error) {
	return []function.Key{agentreconciliationdelay.Key}, nil
}
