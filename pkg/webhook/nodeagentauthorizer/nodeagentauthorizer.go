// Package nodeagentauthorizer is GRM's node-agent-authorizer: an authorization webhook for a
// shoot's kube-apiserver that decides the requests of gardener-node-agents
// (users gardener.cloud:node-agent:machine:<machine> in group gardener.cloud:node-agents) by the
// rules of Gardener v1.150's authorizer, scoped to the Node their Machine runs, and has no
// opinion about everybody else. Its rules, error semantics and deviations are described in
// docs/webhooks/node-agent-authorizer.md.
package nodeagentauthorizer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	nodeagentv1alpha1 "github.com/gardener/gardener/pkg/apis/config/nodeagent/v1alpha1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/selection"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/cache"
	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/webhook"
)

const (
	// Name is the webhook's name.
	Name = "node-agent-authorizer"
	// Path is where Gardener serves it.
	Path = "/webhooks/auth/nodeagent"

	// machineNodeLabel names the Node of a Machine (machine-controller-manager sets it when the
	// Node joins).
	machineNodeLabel = "node"
	// shootAccessPrefix prefixes the names of the shoot access token Secrets.
	shootAccessPrefix = "shoot-access-"
)

// alwaysReadableSecrets are the kube-system Secrets every node agent may read: the tokens of
// the logging and telemetry agents and the kubeconfigs a gardenadm control-plane node needs.
var alwaysReadableSecrets = []string{
	"gardener-valitail",
	"gardener-opentelemetry-collector",
	shootAccessPrefix + v1beta1constants.DeploymentNameKubeControllerManager,
	shootAccessPrefix + v1beta1constants.DeploymentNameKubeScheduler,
	shootAccessPrefix + "cluster-admin",
}

// machineGVK is machine-controller-manager's Machine, read as unstructured: only a label and
// a node-template label of it matter here.
var machineGVK = schema.GroupVersionKind{Group: "machine.sapcloud.io", Version: "v1alpha1", Kind: "Machine"}

// oscDecoder decodes the OperatingSystemConfig in an OSC Secret leniently (YAML or JSON,
// unknown fields ignored, apiVersion and kind may be omitted), as gardener-node-agent does.
var oscDecoder = func() runtime.Decoder {
	s := runtime.NewScheme()
	if err := extensionsv1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	yaml := jsonserializer.NewSerializerWithOptions(jsonserializer.DefaultMetaFactory, s, s, jsonserializer.SerializerOptions{Yaml: true})
	return serializer.NewCodecFactory(s).CodecForVersions(nil, yaml, nil, schema.GroupVersions{extensionsv1alpha1.SchemeGroupVersion})
}()

// Config is the webhook's configuration.
type Config struct {
	// MachineCacheTTL bounds how long a Machine's node and secret names are reused: Machines
	// change them only when their Node joins, so a short TTL saves a GET per request.
	MachineCacheTTL time.Duration `envconfig:"NODE_AGENT_AUTHORIZER_MACHINE_CACHE_TTL" default:"30s"`
	// MachineCacheSize bounds how many Machines are remembered.
	MachineCacheSize int `envconfig:"NODE_AGENT_AUTHORIZER_MACHINE_CACHE_SIZE" default:"10000"`
	// SecretsCacheTTL bounds how long the Secrets a node agent may read (its OSC secret and
	// what its files reference, from the OSC secret and its Node) are reused: an agent reads
	// them in bursts, and each computation reads the OSC secret and the Node and decodes the
	// OperatingSystemConfig. 0 computes them on every request.
	SecretsCacheTTL time.Duration `envconfig:"NODE_AGENT_AUTHORIZER_SECRETS_CACHE_TTL" default:"2s"`
	// AuthorizeWithSelectors makes Pod list/watch require a spec.nodeName field selector for the
	// agent's own Node (webhooks.nodeAgentAuthorizer.authorizeWithSelectors).
	AuthorizeWithSelectors bool `ignored:"true"`
}

// Webhook is the constructor the server registers.
var Webhook = webhook.Configured[Config]{
	Name: Name,
	// gardenlet turns it off for workerless shoots.
	AppliesTo: (*tenant.Settings).HasWorkers,
	Enabled:   func(c *componentconfig.ResourceManagerFile) bool { return c.Webhooks.NodeAgentAuthorizer.Enabled },
	Defaults: func(deps webhook.Deps) Config {
		return Config{AuthorizeWithSelectors: ptr.Deref(deps.Config.Webhooks.NodeAgentAuthorizer.AuthorizeWithSelectors, false)}
	},
	Build: func(deps webhook.Deps, cfg Config) (webhook.Webhook, error) {
		a, err := New(deps.Source, deps.Target, deps.Config.Webhooks.NodeAgentAuthorizer.MachineNamespace, deps.Clock, cfg)
		if err != nil {
			return webhook.Webhook{}, err
		}
		return webhook.Authorization(Name, Path, a, deps.Log), nil
	},
}.Constructor()

// Authorizer decides the node agents' requests.
type Authorizer struct {
	source, target client.Reader
	// machineNamespace holds the shoot's Machines in the source cluster in single-tenant mode;
	// nil means the Machine's name is its Node's name (gardenadm). In the multi-tenant mode a
	// request's Machines are in its tenant's namespace, whatever is configured.
	machineNamespace       *string
	authorizeWithSelectors bool
	machines               *cache.Cache[machineInfo]
	// secrets are the Secrets each node agent may read besides the always readable ones.
	secrets *cache.Cache[[]string]
}

// machineInfo is what a Machine tells: its Node and the OSC secret of its worker pool.
type machineInfo struct {
	node, oscSecret string
}

// New returns an authorizer reading Machines from source and everything else from target.
func New(source, target client.Reader, machineNamespace *string, clk clock.PassiveClock, cfg Config) (*Authorizer, error) {
	machines, err := cache.New(cache.Options[machineInfo]{
		TTL: cfg.MachineCacheTTL, Size: cfg.MachineCacheSize, Clock: clk,
		// A Machine without Node gets one when it joins: read it again until then.
		TTLOf: func(m machineInfo) time.Duration {
			if m.node == "" {
				return 0
			}
			return cfg.MachineCacheTTL
		},
	})
	if err != nil {
		return nil, fmt.Errorf("machine cache: %w", err)
	}
	secrets, err := cache.New(cache.Options[[]string]{TTL: cfg.SecretsCacheTTL, Size: cfg.MachineCacheSize, Clock: clk})
	if err != nil {
		return nil, fmt.Errorf("secrets cache: %w", err)
	}
	return &Authorizer{
		source: source, target: target, machineNamespace: machineNamespace,
		authorizeWithSelectors: cfg.AuthorizeWithSelectors,
		machines:               machines,
		secrets:                secrets,
	}, nil
}

var _ webhook.Authorizer = &Authorizer{}

// Authorize decides a node agent's request. A returned error is an evaluation error: the
// kube-apiserver treats it as no opinion and asks its next authorizer, as Gardener's does.
// Denials without a reason are Gardener's: it gives none for them either.
func (a *Authorizer) Authorize(ctx context.Context, spec authorizationv1.SubjectAccessReviewSpec) (webhook.Decision, string, error) {
	machine, ok := nodeAgentMachine(spec)
	if !ok {
		return webhook.NoOpinion, "", nil
	}
	if machine == "" {
		return webhook.Deny, "", nil
	}
	attrs := spec.ResourceAttributes
	if attrs == nil {
		return webhook.Deny, "", nil
	}
	r := request{user: spec.User, machine: machine, attrs: attrs, machineNamespace: webhook.ControlPlaneNamespace(ctx, a.machineNamespace)}
	switch (schema.GroupResource{Group: attrs.Group, Resource: attrs.Resource}) {
	case schema.GroupResource{Group: certificatesv1.GroupName, Resource: "certificatesigningrequests"}:
		return a.certificateSigningRequest(ctx, r)
	case schema.GroupResource{Resource: "events"}, schema.GroupResource{Group: "events.k8s.io", Resource: "events"}:
		return check(r, nil, "create", "patch")
	case schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}:
		return a.lease(ctx, r)
	case schema.GroupResource{Resource: "nodes"}:
		return a.node(ctx, r)
	case schema.GroupResource{Resource: "pods"}:
		return a.pod(ctx, r)
	case schema.GroupResource{Resource: "secrets"}:
		return a.secret(ctx, r)
	}
	return webhook.Deny, "", nil
}

// request is one node agent's resource request.
type request struct {
	user, machine string
	attrs         *authorizationv1.ResourceAttributes
	// machineNamespace is where the agent's Machine is (nil: gardenadm, no Machines).
	machineNamespace *string
}

// nodeAgentMachine returns the machine of a node-agent user; ok is false for everyone else.
func nodeAgentMachine(spec authorizationv1.SubjectAccessReviewSpec) (machine string, ok bool) {
	if !strings.HasPrefix(spec.User, v1beta1constants.NodeAgentUserNamePrefix) || !slices.Contains(spec.Groups, v1beta1constants.NodeAgentsGroup) {
		return "", false
	}
	return strings.TrimPrefix(spec.User, v1beta1constants.NodeAgentUserNamePrefix), true
}

// check denies subresources other than those listed, then verbs other than those listed (in
// this order, with Gardener's reasons); it allows what remains.
func check(r request, subresources []string, verbs ...string) (webhook.Decision, string, error) {
	if r.attrs.Subresource != "" && !slices.Contains(subresources, r.attrs.Subresource) {
		return webhook.Deny, fmt.Sprintf("only the following subresources are allowed for this resource type: %+v", subresources), nil
	}
	if !slices.Contains(verbs, r.attrs.Verb) {
		return webhook.Deny, fmt.Sprintf("only the following verbs are allowed for this resource type: %+v", verbs), nil
	}
	return webhook.Allow, "", nil
}

// certificateSigningRequest: create any; get only those requested by the same user.
func (a *Authorizer) certificateSigningRequest(ctx context.Context, r request) (webhook.Decision, string, error) {
	if d, reason, _ := check(r, nil, "get", "create"); d != webhook.Allow || r.attrs.Verb == "create" {
		return d, reason, nil
	}
	csr := &certificatesv1.CertificateSigningRequest{}
	if err := a.target.Get(ctx, client.ObjectKey{Name: r.attrs.Name}, csr); err != nil {
		return webhook.Deny, "", err
	}
	if csr.Spec.Username != r.user {
		return webhook.Deny, fmt.Sprintf("gardener-node-agent is only allowed to read or request CSRs for its own user %q", r.user), nil
	}
	return webhook.Allow, "", nil
}

// lease: kube-system Leases named gardener-node-agent-<node> or after the Node's OSC secret
// (creating any). Listing and watching are limited to these names too: an unnamed list of
// kube-system's Leases is denied.
func (a *Authorizer) lease(ctx context.Context, r request) (webhook.Decision, string, error) {
	if d, reason, _ := check(r, nil, "get", "list", "watch", "create", "update"); d != webhook.Allow {
		return d, reason, nil
	}
	node, reason, err := a.agentNode(ctx, r)
	if err != nil || reason != "" {
		return webhook.Deny, reason, err
	}
	allowed := []string{"gardener-node-agent-" + node.Name}
	if s := node.Labels[v1beta1constants.LabelWorkerPoolGardenerNodeAgentSecretName]; s != "" {
		allowed = append(allowed, s)
	}
	if (r.attrs.Verb != "create" && !slices.Contains(allowed, r.attrs.Name)) || r.attrs.Namespace != metav1.NamespaceSystem {
		return webhook.Deny, fmt.Sprintf("this gardener-node-agent can only access leases %v in %q namespace", allowed, metav1.NamespaceSystem), nil
	}
	return webhook.Allow, "", nil
}

// node: list and watch all Nodes (an agent knows its host name, not its Node's name, before
// the kubelet registers it); get, patch and update its own Node and its status.
func (a *Authorizer) node(ctx context.Context, r request) (webhook.Decision, string, error) {
	if d, reason, _ := check(r, []string{"status"}, "get", "list", "watch", "patch", "update"); d != webhook.Allow {
		return d, reason, nil
	}
	if r.attrs.Verb == "list" || r.attrs.Verb == "watch" {
		return webhook.Allow, "", nil
	}
	node, reason, err := a.agentNode(ctx, r)
	if err != nil || reason != "" {
		return webhook.Deny, reason, err
	}
	if r.attrs.Name != node.Name {
		return webhook.Deny, fmt.Sprintf("this gardener-node-agent can only access node %q", node.Name), nil
	}
	return webhook.Allow, "", nil
}

// pod: get and delete the Pods on its own Node; list and watch them (with authorizeWithSelectors
// only with the field selector spec.nodeName=<its Node>, or naming one of its Pods).
func (a *Authorizer) pod(ctx context.Context, r request) (webhook.Decision, string, error) {
	if d, reason, _ := check(r, nil, "get", "list", "watch", "delete"); d != webhook.Allow {
		return d, reason, nil
	}
	node, reason, err := a.agentNode(ctx, r)
	if err != nil || reason != "" {
		return webhook.Deny, reason, err
	}
	if r.attrs.Verb == "get" || r.attrs.Verb == "delete" {
		return a.podOnNode(ctx, r, node.Name)
	}
	if !a.withSelectors(ctx) {
		return webhook.Allow, "", nil
	}
	requirements, err := fieldSelector(r.attrs.FieldSelector)
	if err != nil {
		return webhook.Deny, "", fmt.Errorf("error parsing field selector: %w", err)
	}
	for _, req := range requirements {
		if req.Field == "spec.nodeName" && req.Operator == selection.Equals && req.Value == node.Name {
			return webhook.Allow, "", nil
		}
	}
	if r.attrs.Name != "" {
		return a.podOnNode(ctx, r, node.Name)
	}
	return webhook.Deny, fmt.Sprintf("can only list/watch pods with spec.nodeName=%s field selector", node.Name), nil
}

// withSelectors is authorizeWithSelectors for the request: a tenant's as gardenlet derives it
// from its kube-apiserver's feature gates (tenant.Settings), the configured one otherwise.
func (a *Authorizer) withSelectors(ctx context.Context) bool {
	if s, ok := tenant.SettingsFrom(ctx); ok {
		return s.AuthorizeWithSelectors
	}
	return a.authorizeWithSelectors
}

// podOnNode allows the request for the Pod it names when the Pod runs on nodeName.
func (a *Authorizer) podOnNode(ctx context.Context, r request, nodeName string) (webhook.Decision, string, error) {
	key := client.ObjectKey{Namespace: r.attrs.Namespace, Name: r.attrs.Name}
	pod := &corev1.Pod{}
	if err := a.target.Get(ctx, key, pod); err != nil {
		return webhook.Deny, "", fmt.Errorf("error getting pod %q: %w", key, err)
	}
	if pod.Spec.NodeName != nodeName {
		return webhook.Deny, fmt.Sprintf("pod %q does not belong to node %q", key, nodeName), nil
	}
	return webhook.Allow, "", nil
}

// fieldSelector returns the requirements of a SubjectAccessReview's field selector as the
// kube-apiserver's authorizers see them: structured requirements win over the raw selector;
// requirements that cannot be expressed are dropped and reported in the error.
func fieldSelector(s *authorizationv1.FieldSelectorAttributes) (fields.Requirements, error) {
	if s == nil {
		return nil, nil
	}
	var reqs fields.Requirements
	var err error
	if s.RawSelector != "" {
		var sel fields.Selector
		if sel, err = fields.ParseSelector(s.RawSelector); err == nil {
			reqs = sel.Requirements()
		}
	}
	if len(s.Requirements) > 0 {
		reqs, err = structuredFieldRequirements(s.Requirements)
	}
	return reqs, err
}

func structuredFieldRequirements(in []metav1.FieldSelectorRequirement) (fields.Requirements, error) {
	var reqs fields.Requirements
	var errs []error
	for _, r := range in {
		if len(r.Values) > 1 {
			errs = append(errs, fmt.Errorf("fieldSelectors do not yet support multiple values"))
			continue
		}
		switch r.Operator {
		case metav1.FieldSelectorOpIn, metav1.FieldSelectorOpNotIn:
			op, word := selection.Equals, "in"
			if r.Operator == metav1.FieldSelectorOpNotIn {
				op, word = selection.NotEquals, "not in"
			}
			if len(r.Values) != 1 {
				errs = append(errs, fmt.Errorf("fieldSelectors %s must have one value", word))
				continue
			}
			reqs = append(reqs, fields.Requirement{Field: r.Key, Operator: op, Value: r.Values[0]})
		case metav1.FieldSelectorOpExists, metav1.FieldSelectorOpDoesNotExist:
			errs = append(errs, fmt.Errorf("fieldSelectors do not yet support %v", r.Operator))
		default:
			errs = append(errs, fmt.Errorf("%q is not a valid field selector operator", r.Operator))
		}
	}
	// Requirements are ANDed: dropping the invalid ones only widens what they select, and the
	// error makes the caller refuse anyway.
	return reqs, utilerrors.NewAggregate(errs)
}

// secret: get, list and watch in kube-system the always readable Secrets, its worker pool's
// OSC secret and the Secrets its OperatingSystemConfig's files reference for its host.
func (a *Authorizer) secret(ctx context.Context, r request) (webhook.Decision, string, error) {
	if d, reason, _ := check(r, nil, "get", "list", "watch"); d != webhook.Allow {
		return d, reason, nil
	}
	readable := slices.Clone(alwaysReadableSecrets)
	key := r.machine
	if r.machineNamespace != nil {
		key = *r.machineNamespace + "/" + r.machine
	}
	more, err := a.secrets.Get(ctx, key, func(ctx context.Context) ([]string, error) {
		if r.machineNamespace != nil {
			return a.machineSecrets(ctx, *r.machineNamespace, r.machine)
		}
		return a.gardenadmSecrets(ctx, r.machine)
	})
	if err != nil {
		return webhook.Deny, "", err
	}
	readable = append(readable, more...)
	if !slices.Contains(readable, r.attrs.Name) || r.attrs.Namespace != metav1.NamespaceSystem {
		return webhook.Deny, fmt.Sprintf("gardener-node-agent can only access secrets %v in %q namespace", readable, metav1.NamespaceSystem), nil
	}
	return webhook.Allow, "", nil
}

// machineSecrets are the Secrets of a Machine's worker pool: its OSC secret (named by the
// Machine's node template, which the agent cannot change) and, when that exists, the Secrets
// its files reference for the Node's host name.
func (a *Authorizer) machineSecrets(ctx context.Context, namespace, machine string) ([]string, error) {
	info, err := a.machine(ctx, namespace, machine)
	if err != nil {
		return nil, err
	}
	if info.oscSecret == "" {
		// Gardener reads the OSC secret the Machine names, which is none: that read fails, so
		// there is no opinion and the next authorizer decides, for every Secret.
		return nil, fmt.Errorf("error getting OSC secret %q: %w", info.oscSecret, errNoName)
	}
	names := []string{info.oscSecret}
	oscSecret := &corev1.Secret{}
	if err := a.target.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: info.oscSecret}, oscSecret); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("error getting OSC secret %q: %w", info.oscSecret, err)
		}
		return names, nil
	}
	var hostname string
	if info.node == "" {
		// Bootstrap: Gardener reads the Node its Machine names, which is none yet. That read
		// fails (a Node needs a name): no opinion, and RBAC decides. Never the Secrets of every
		// host, nor the always readable ones.
		return nil, fmt.Errorf("error getting node %q: %w", info.node, errNoName)
	}
	node := &corev1.Node{}
	if err := a.target.Get(ctx, client.ObjectKey{Name: info.node}, node); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("error getting node %q: %w", info.node, err)
		}
	} else {
		hostname = node.Labels[corev1.LabelHostname]
	}
	refs, err := secretRefs(oscSecret, hostname)
	if err != nil {
		return nil, fmt.Errorf("error reading secretRef names from OSC secret %q: %w", oscSecret.Name, err)
	}
	return append(names, refs...), nil
}

// gardenadmSecrets are, without Machines, the Secrets of the Node named like the machine. Its
// secret-name label is patchable by the agent itself, so only a name of an existing OSC secret
// (labelled worker.gardener.cloud/pool) counts. While the Node does not exist yet the agent is
// bootstrapping and does not know its worker pool: every OSC secret and their references.
func (a *Authorizer) gardenadmSecrets(ctx context.Context, machine string) ([]string, error) {
	node := &corev1.Node{}
	nodeMissing := false
	if err := a.target.Get(ctx, client.ObjectKey{Name: machine}, node); apierrors.IsNotFound(err) {
		nodeMissing = true
	} else if err != nil {
		return nil, fmt.Errorf("error getting node %q: %w", machine, err)
	}
	oscSecrets := &corev1.SecretList{}
	isOSCSecret, _ := labels.NewRequirement(v1beta1constants.LabelWorkerPool, selection.Exists, nil)
	// Only kube-system's: Gardener lists every namespace, so an OSC-labelled Secret elsewhere
	// would make the kube-system Secret of the same name readable.
	if err := a.target.List(ctx, oscSecrets, client.InNamespace(metav1.NamespaceSystem), client.MatchingLabelsSelector{Selector: labels.NewSelector().Add(*isOSCSecret)}); err != nil {
		return nil, fmt.Errorf("error listing operating system config secrets: %w", err)
	}
	var names []string
	for i := range oscSecrets.Items {
		s := &oscSecrets.Items[i]
		hostname := ""
		if !nodeMissing {
			if s.Name != node.Labels[v1beta1constants.LabelWorkerPoolGardenerNodeAgentSecretName] {
				continue
			}
			hostname = node.Labels[corev1.LabelHostname]
		}
		refs, err := secretRefs(s, hostname)
		if err != nil {
			return nil, fmt.Errorf("error reading secretRef names from OSC secret %q: %w", s.Name, err)
		}
		names = append(append(names, s.Name), refs...)
		if !nodeMissing {
			break
		}
	}
	return names, nil
}

// secretRefs are the Secrets referenced by the files (and the extensions' files) of the
// OperatingSystemConfig in an OSC secret, for hostname ("" means every host).
func secretRefs(secret *corev1.Secret, hostname string) ([]string, error) {
	raw, ok := secret.Data[nodeagentv1alpha1.DataKeyOperatingSystemConfig]
	if !ok {
		return nil, nil
	}
	osc := &extensionsv1alpha1.OperatingSystemConfig{}
	if err := runtime.DecodeInto(oscDecoder, raw, osc); err != nil {
		return nil, fmt.Errorf("unable to decode OSC from secret %q: %w", secret.Name, err)
	}
	var names []string
	for _, f := range append(slices.Clone(osc.Spec.Files), osc.Status.ExtensionFiles...) {
		if f.Content.SecretRef != nil && (hostname == "" || f.HostName == nil || *f.HostName == hostname) {
			names = append(names, f.Content.SecretRef.Name)
		}
	}
	return names, nil
}

// agentNode resolves a node agent's machine to its Node: through the Machine in the source cluster,
// or, without a machine namespace, the Node named like the machine. A missing Node is a denial
// with a reason; a Machine or Node that cannot be read, and a Machine that names no Node yet
// (its Node has not registered: the agent is bootstrapping), are evaluation errors.
func (a *Authorizer) agentNode(ctx context.Context, r request) (*corev1.Node, string, error) {
	machine, name := r.machine, r.machine
	if r.machineNamespace != nil {
		info, err := a.machine(ctx, *r.machineNamespace, machine)
		if err != nil {
			return nil, "", err
		}
		name = info.node
	}
	if name == "" {
		// Gardener reads the Node named "", which fails: no opinion, so that the next
		// authorizer (RBAC) decides what a bootstrapping agent may do. A denial would be final.
		return nil, "", fmt.Errorf("error getting node %q: %w", client.ObjectKey{Name: name}, errNoName)
	}
	node := &corev1.Node{}
	if err := a.target.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Sprintf("no node for %q found", machine), nil
		}
		return nil, "", fmt.Errorf("error getting node %q: %w", client.ObjectKey{Name: name}, err)
	}
	return node, "", nil
}

// machine reads a Machine's Node and OSC secret names. Machines that have a Node are cached
// briefly, per tenant (the shared webhook cache): they get their Node once, when it joins, and
// their node template never changes. Machines without a Node yet are read on every request.
func (a *Authorizer) machine(ctx context.Context, namespace, name string) (machineInfo, error) {
	return a.machines.Get(ctx, namespace+"/"+name, func(ctx context.Context) (machineInfo, error) {
		m := &unstructured.Unstructured{}
		m.SetGroupVersionKind(machineGVK)
		if err := a.source.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, m); err != nil {
			return machineInfo{}, fmt.Errorf("error getting machine %q: %w", name, err)
		}
		info := machineInfo{node: m.GetLabels()[machineNodeLabel]}
		info.oscSecret, _, _ = unstructured.NestedString(m.Object, "spec", "nodeTemplate", "metadata", "labels", v1beta1constants.LabelWorkerPoolGardenerNodeAgentSecretName)
		return info, nil
	})
}

// errNoName is the failure of reading an object a Machine names when it names none (a Node, or
// an OSC secret): the REST client of client-go refuses a read without a name with this message.
var errNoName = errors.New("resource name may not be empty")
