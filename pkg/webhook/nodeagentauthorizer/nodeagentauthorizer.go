// Package nodeagentauthorizer is GRM's node-agent-authorizer: an authorization webhook for a
// shoot's kube-apiserver that decides the requests of gardener-node-agents
// (users gardener.cloud:node-agent:machine:<machine> in group gardener.cloud:node-agents) by the
// rules table of the specification, scoped to the Node their Machine runs, and has no opinion
// about everybody else.
package nodeagentauthorizer

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	rmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	"github.com/kelseyhightower/envconfig"
	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/webhook"
)

const (
	// Name is the webhook's name.
	Name = "node-agent-authorizer"
	// Path is where Gardener serves it.
	Path = "/webhooks/auth/nodeagent"

	// ValitailSecret is the Secret every node agent may read.
	ValitailSecret = "gardener-valitail"
	// machineNodeLabel names the Node of a Machine.
	machineNodeLabel = "node"
)

// machineGVK is machine-controller-manager's Machine, read as unstructured: only a label and
// a node-template label of it matter here.
var machineGVK = schema.GroupVersionKind{Group: "machine.sapcloud.io", Version: "v1alpha1", Kind: "Machine"}

// Config is the webhook's configuration.
type Config struct {
	// MachineCacheTTL bounds how long a Machine's node and secret names are reused: Machines
	// change them only when their Node joins, so a short TTL saves a GET per request.
	MachineCacheTTL time.Duration `envconfig:"NODE_AGENT_AUTHORIZER_MACHINE_CACHE_TTL" default:"30s"`
	// MachineCacheSize bounds how many Machines are remembered.
	MachineCacheSize int `envconfig:"NODE_AGENT_AUTHORIZER_MACHINE_CACHE_SIZE" default:"10000"`
}

// Webhook is the constructor the server registers.
var Webhook = webhook.Constructor{
	Name:    Name,
	Enabled: func(c *rmv1alpha1.ResourceManagerConfiguration) bool { return c.Webhooks.NodeAgentAuthorizer.Enabled },
	New: func(deps webhook.Deps) (webhook.Webhook, error) {
		var cfg Config
		if err := envconfig.Process("", &cfg); err != nil {
			return webhook.Webhook{}, err
		}
		a := New(deps.Source, deps.Target, deps.Config.Webhooks.NodeAgentAuthorizer.MachineNamespace, deps.Clock, cfg)
		return webhook.Authorization(Name, Path, a, deps.Log), nil
	},
}

// Authorizer decides the node agents' requests.
type Authorizer struct {
	source, target client.Reader
	// machineNamespace holds the shoot's Machines in the source cluster; nil means the
	// Machine's name is its Node's name (gardenadm).
	machineNamespace *string
	machines         *ttlCache[machineInfo]
}

// machineInfo is what a Machine tells: its Node and the node-agent secret of its worker pool.
type machineInfo struct {
	node, secret string
}

// New returns an authorizer reading Machines from source and everything else from target.
func New(source, target client.Reader, machineNamespace *string, clk clock.PassiveClock, cfg Config) *Authorizer {
	return &Authorizer{source: source, target: target, machineNamespace: machineNamespace, machines: newTTLCache[machineInfo](clk, cfg.MachineCacheTTL, cfg.MachineCacheSize)}
}

var _ webhook.Authorizer = &Authorizer{}

// Authorize implements the rules table of the specification.
func (a *Authorizer) Authorize(ctx context.Context, spec authorizationv1.SubjectAccessReviewSpec) (webhook.Decision, string, error) {
	machine, ok := nodeAgentMachine(spec)
	if !ok {
		return webhook.NoOpinion, "", nil
	}
	if machine == "" {
		return webhook.Deny, "node-agent user names no machine", nil
	}
	attrs := spec.ResourceAttributes
	if attrs == nil {
		return webhook.Deny, "gardener-node-agent may not access non-resource URLs", nil
	}
	switch groupResource(attrs) {
	case "certificatesigningrequests.certificates.k8s.io":
		return a.certificateSigningRequest(ctx, spec.User, attrs)
	case "events", "events.events.k8s.io":
		return allowVerbs(attrs, nil, "create", "patch")
	case "leases.coordination.k8s.io":
		return a.lease(ctx, machine, attrs)
	case "nodes":
		return a.node(ctx, machine, attrs)
	case "secrets":
		return a.secret(ctx, machine, attrs)
	}
	return webhook.Deny, fmt.Sprintf("gardener-node-agent may not access %s", groupResource(attrs)), nil
}

// nodeAgentMachine returns the machine of a node-agent user; ok is false for everyone else.
func nodeAgentMachine(spec authorizationv1.SubjectAccessReviewSpec) (machine string, ok bool) {
	if !strings.HasPrefix(spec.User, v1beta1constants.NodeAgentUserNamePrefix) || !slices.Contains(spec.Groups, v1beta1constants.NodeAgentsGroup) {
		return "", false
	}
	return strings.TrimPrefix(spec.User, v1beta1constants.NodeAgentUserNamePrefix), true
}

// allowVerbs allows the verbs (and subresources) listed, and denies the rest with a reason.
func allowVerbs(attrs *authorizationv1.ResourceAttributes, subresources []string, verbs ...string) (webhook.Decision, string, error) {
	if attrs.Subresource != "" && !slices.Contains(subresources, attrs.Subresource) {
		return webhook.Deny, fmt.Sprintf("gardener-node-agent may access no subresource %q of %s", attrs.Subresource, groupResource(attrs)), nil
	}
	if !slices.Contains(verbs, attrs.Verb) {
		return webhook.Deny, fmt.Sprintf("gardener-node-agent may only %s %s", strings.Join(verbs, ", "), groupResource(attrs)), nil
	}
	return webhook.Allow, "", nil
}

// certificateSigningRequest: create any; get only those requested by the same user.
func (a *Authorizer) certificateSigningRequest(ctx context.Context, user string, attrs *authorizationv1.ResourceAttributes) (webhook.Decision, string, error) {
	if d, reason, _ := allowVerbs(attrs, nil, "get", "create"); d != webhook.Allow || attrs.Verb == "create" {
		return d, reason, nil
	}
	csr := &certificatesv1.CertificateSigningRequest{}
	if err := a.target.Get(ctx, client.ObjectKey{Name: attrs.Name}, csr); err != nil {
		if apierrors.IsNotFound(err) {
			return webhook.Deny, fmt.Sprintf("CertificateSigningRequest %q does not exist", attrs.Name), nil
		}
		return webhook.Deny, "", err
	}
	if csr.Spec.Username != user {
		return webhook.Deny, fmt.Sprintf("gardener-node-agent may only read its own CertificateSigningRequests (of user %q)", user), nil
	}
	return webhook.Allow, "", nil
}

// lease: the node agent's own Lease gardener-node-agent-<node> in kube-system.
func (a *Authorizer) lease(ctx context.Context, machine string, attrs *authorizationv1.ResourceAttributes) (webhook.Decision, string, error) {
	if d, reason, _ := allowVerbs(attrs, nil, "get", "list", "watch", "create", "update"); d != webhook.Allow {
		return d, reason, nil
	}
	info, reason, err := a.machine(ctx, machine)
	if err != nil || reason != "" {
		return webhook.Deny, reason, err
	}
	own := "gardener-node-agent-" + info.node
	// A create names no object yet; list and watch may name none.
	nameOK := attrs.Name == own || (attrs.Name == "" && attrs.Verb != "get" && attrs.Verb != "update")
	if attrs.Namespace != metav1.NamespaceSystem || !nameOK {
		return webhook.Deny, fmt.Sprintf("this gardener-node-agent may only access Lease %s/%s", metav1.NamespaceSystem, own), nil
	}
	return webhook.Allow, "", nil
}

// node: list (and watch) all Nodes; get, watch, patch and update its own Node and its status.
func (a *Authorizer) node(ctx context.Context, machine string, attrs *authorizationv1.ResourceAttributes) (webhook.Decision, string, error) {
	if d, reason, _ := allowVerbs(attrs, []string{"status"}, "get", "list", "watch", "patch", "update"); d != webhook.Allow {
		return d, reason, nil
	}
	// A node agent knows its hostname, not its Node's name, until kubelet registered it.
	if attrs.Verb == "list" || (attrs.Verb == "watch" && attrs.Name == "") {
		return webhook.Allow, "", nil
	}
	info, reason, err := a.machine(ctx, machine)
	if err != nil || reason != "" {
		return webhook.Deny, reason, err
	}
	if attrs.Name != info.node {
		return webhook.Deny, fmt.Sprintf("this gardener-node-agent may only access Node %q", info.node), nil
	}
	return webhook.Allow, "", nil
}

// secret: get, list and watch gardener-valitail and the node-agent secret of its worker pool,
// in kube-system.
func (a *Authorizer) secret(ctx context.Context, machine string, attrs *authorizationv1.ResourceAttributes) (webhook.Decision, string, error) {
	if d, reason, _ := allowVerbs(attrs, nil, "get", "list", "watch"); d != webhook.Allow {
		return d, reason, nil
	}
	info, reason, err := a.machine(ctx, machine)
	if err != nil || reason != "" {
		return webhook.Deny, reason, err
	}
	allowed := []string{ValitailSecret}
	if info.secret != "" {
		allowed = append(allowed, info.secret)
	}
	if attrs.Namespace != metav1.NamespaceSystem || !slices.Contains(allowed, attrs.Name) {
		return webhook.Deny, fmt.Sprintf("this gardener-node-agent may only read Secrets %v in %q", allowed, metav1.NamespaceSystem), nil
	}
	return webhook.Allow, "", nil
}

// machine resolves a node agent's Machine to its Node and worker-pool secret: from the Machine
// in the source cluster, or, without a machine namespace, from the Node of the same name in
// the target. A reason is returned when there is no such Machine or Node yet.
func (a *Authorizer) machine(ctx context.Context, name string) (machineInfo, string, error) {
	if info, ok := a.machines.get(name); ok {
		return info, "", nil
	}
	var info machineInfo
	if a.machineNamespace == nil {
		node := &corev1.Node{}
		if err := a.target.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
			if apierrors.IsNotFound(err) {
				return machineInfo{}, fmt.Sprintf("no Node %q", name), nil
			}
			return machineInfo{}, "", err
		}
		info = machineInfo{node: node.Name, secret: node.Labels[v1beta1constants.LabelWorkerPoolGardenerNodeAgentSecretName]}
	} else {
		m := &unstructured.Unstructured{}
		m.SetGroupVersionKind(machineGVK)
		if err := a.source.Get(ctx, client.ObjectKey{Namespace: *a.machineNamespace, Name: name}, m); err != nil {
			if apierrors.IsNotFound(err) {
				return machineInfo{}, fmt.Sprintf("no Machine %s/%s", *a.machineNamespace, name), nil
			}
			return machineInfo{}, "", err
		}
		info.node = m.GetLabels()[machineNodeLabel]
		info.secret, _, _ = unstructured.NestedString(m.Object, "spec", "nodeTemplate", "metadata", "labels", v1beta1constants.LabelWorkerPoolGardenerNodeAgentSecretName)
		if info.node == "" {
			return machineInfo{}, fmt.Sprintf("Machine %s/%s has no Node yet", *a.machineNamespace, name), nil
		}
	}
	a.machines.put(name, info)
	return info, "", nil
}

func groupResource(attrs *authorizationv1.ResourceAttributes) string {
	return schema.GroupResource{Group: attrs.Group, Resource: attrs.Resource}.String()
}
