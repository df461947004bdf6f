package nodeagentauthorizer

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"

	rmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gardener-knative/gardener-knative/pkg/scheme"
	"github.com/gardener-knative/gardener-knative/pkg/webhook"
)

const (
	agentPrefix = "gardener.cloud:node-agent:machine:"
	user        = agentPrefix + "machine-1"
	machineNS   = "shoot--project--shoot"
	secretLabel = "worker.gardener.cloud/gardener-node-agent-secret-name"
)

var agents = []string{"gardener.cloud:node-agents", "system:authenticated"}

func machine(name, node, oscSecret string) *unstructured.Unstructured {
	m := &unstructured.Unstructured{}
	m.SetGroupVersionKind(machineGVK)
	m.SetNamespace(machineNS)
	m.SetName(name)
	if node != "" {
		m.SetLabels(map[string]string{"node": node})
	}
	_ = unstructured.SetNestedField(m.Object, oscSecret, "spec", "nodeTemplate", "metadata", "labels", secretLabel)
	return m
}

// oscPoolA's OperatingSystemConfig references ref-all (every host), ref-host-1 and ref-host-2
// (one host each) and, from an extension, ref-ext.
const oscPoolA = `apiVersion: extensions.gardener.cloud/v1alpha1
kind: OperatingSystemConfig
spec:
  type: ubuntu
  files:
  - path: /a
    content: {secretRef: {name: ref-all, dataKey: x}}
  - path: /b
    hostName: host-1
    content: {secretRef: {name: ref-host-1, dataKey: x}}
  - path: /b
    hostName: host-2
    content: {secretRef: {name: ref-host-2, dataKey: x}}
  - path: /c
    content: {inline: {data: abc}}
status:
  extensionFiles:
  - path: /d
    content: {secretRef: {name: ref-ext, dataKey: x}}
`

// oscPoolB's has no apiVersion and kind, as node agents accept.
const oscPoolB = `spec:
  files:
  - path: /a
    content: {secretRef: {name: ref-b, dataKey: x}}
`

func oscSecret(name, pool, osc string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system", Labels: map[string]string{"worker.gardener.cloud/pool": pool}},
		Data:       map[string][]byte{"osc.yaml": []byte(osc)},
	}
}

func node(name, hostname, oscSecret string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": hostname}}}
	if oscSecret != "" {
		n.Labels[secretLabel] = oscSecret
	}
	return n
}

func pod(namespace, name, nodeName string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: corev1.PodSpec{NodeName: nodeName}}
}

type fixture struct {
	source, target client.WithWatch
	machineReads   int
	clock          *testclock.FakeClock
}

// newFixture holds, in the source, the Machines machine-1 (node-1, pool a), machine-ghost
// (a Node that does not exist), machine-unjoined (no Node yet, pool a), machine-nopool (no
// OSC secret), machine-unjoined-oscgone (no Node yet, an OSC secret that does not exist),
// machine-unjoined-nopool (neither) and, in the target, Nodes, OSC secrets, Pods and CSRs.
func newFixture() *fixture {
	f := &fixture{clock: testclock.NewFakeClock(time.Now())}
	f.source = fake.NewClientBuilder().WithScheme(scheme.Gardener).
		WithObjects(machine("machine-1", "node-1", "osc-pool-a"), machine("machine-ghost", "node-gone", "osc-pool-a"),
			machine("machine-unjoined", "", "osc-pool-a"), machine("machine-nopool", "node-1", ""),
			machine("machine-unjoined-oscgone", "", "osc-pool-gone"), machine("machine-unjoined-nopool", "", "")).
		WithInterceptorFuncs(interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			f.machineReads++
			return c.Get(ctx, key, obj, opts...)
		}}).Build()
	f.target = fake.NewClientBuilder().WithScheme(scheme.Gardener).WithObjects(
		node("node-1", "host-1", "osc-pool-a"),
		node("node-2", "host-2", "osc-pool-a"),
		node("gardenadm-node", "host-2", "osc-pool-b"),
		// Its agent patched its secret-name label to a Secret that is no OSC secret.
		node("patched-node", "host-1", "not-osc"),
		oscSecret("osc-pool-a", "a", oscPoolA),
		oscSecret("osc-pool-b", "b", oscPoolB),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "not-osc", Namespace: "kube-system"}},
		// An OSC-labelled Secret outside kube-system named like a kube-system Secret that is
		// none: it must not make that one readable.
		func() *corev1.Secret { s := oscSecret("not-osc", "c", oscPoolB); s.Namespace = "default"; return s }(),
		pod("default", "on-node-1", "node-1"),
		pod("default", "on-node-2", "node-2"),
		&certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "own"}, Spec: certificatesv1.CertificateSigningRequestSpec{Username: user}},
		&certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "foreign"}, Spec: certificatesv1.CertificateSigningRequestSpec{Username: "someone"}},
	).Build()
	return f
}

func (f *fixture) authorizer(t testing.TB, machineNamespace *string, withSelectors bool) *Authorizer {
	t.Helper()
	return f.authorizerReading(t, f.target, machineNamespace, withSelectors)
}

func (f *fixture) authorizerReading(t testing.TB, target client.Reader, machineNamespace *string, withSelectors bool) *Authorizer {
	t.Helper()
	a, err := New(f.source, target, machineNamespace, f.clock, Config{MachineCacheTTL: time.Minute, MachineCacheSize: 10, AuthorizeWithSelectors: withSelectors})
	require.NoError(t, err)
	return a
}

func review(user, verb, group, resource, subresource, namespace, name string) authorizationv1.SubjectAccessReviewSpec {
	return authorizationv1.SubjectAccessReviewSpec{User: user, Groups: agents, ResourceAttributes: &authorizationv1.ResourceAttributes{
		Verb: verb, Group: group, Resource: resource, Subresource: subresource, Namespace: namespace, Name: name,
	}}
}

func withFieldSelector(spec authorizationv1.SubjectAccessReviewSpec, s authorizationv1.FieldSelectorAttributes) authorizationv1.SubjectAccessReviewSpec {
	attrs := *spec.ResourceAttributes
	attrs.FieldSelector = &s
	spec.ResourceAttributes = &attrs
	return spec
}

// outcome is an expected answer: a decision with its exact reason, or an evaluation error
// containing errContains (which the kube-apiserver treats as no opinion).
type outcome struct {
	decision    webhook.Decision
	reason      string
	errContains string
}

var (
	allow = outcome{decision: webhook.Allow}
	// denyAny is a denial whose reason the case does not pin.
	denyAny = outcome{decision: webhook.Deny, reason: "*"}
)

// noOSCSecretError is Gardener's failure to read the OSC secret of a Machine that names none.
const noOSCSecretError = `error getting OSC secret "": resource name may not be empty`

func deny(reason string) outcome { return outcome{decision: webhook.Deny, reason: reason} }
func evalError(s string) outcome { return outcome{errContains: s} }
func (o outcome) isError() bool  { return o.errContains != "" }
func noOpinion() outcome         { return outcome{decision: webhook.NoOpinion} }
func verbs(list string) outcome {
	return deny("only the following verbs are allowed for this resource type: " + list)
}
func subresources(l string) outcome {
	return deny("only the following subresources are allowed for this resource type: " + l)
}

type rule struct {
	name string
	spec authorizationv1.SubjectAccessReviewSpec
	want outcome
}

func run(t *testing.T, a *Authorizer, rules []rule) {
	t.Helper()
	for _, tc := range rules {
		t.Run(tc.name, func(t *testing.T) {
			got, reason, err := a.Authorize(context.Background(), tc.spec)
			if tc.want.isError() {
				require.Error(t, err, "want an evaluation error, got %s %q", got, reason)
				assert.Contains(t, err.Error(), tc.want.errContains)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want.decision.String(), got.String(), reason)
			if tc.want.reason != "*" {
				assert.Equal(t, tc.want.reason, reason)
			}
		})
	}
}

const (
	csrs   = "certificatesigningrequests"
	certs  = "certificates.k8s.io"
	coord  = "coordination.k8s.io"
	leases = "leases"
)

// TestRules covers every rule of Gardener v1.150's node-agent authorizer with a machine
// namespace (a shoot's Machines in the seed), each with Gardener's reason.
func TestRules(t *testing.T) {
	f := newFixture()
	a := f.authorizer(t, ptr.To(machineNS), false)
	ghost := agentPrefix + "machine-ghost"
	unknown := agentPrefix + "machine-unknown"
	secretsReason := `gardener-node-agent can only access secrets [gardener-valitail gardener-opentelemetry-collector shoot-access-kube-controller-manager shoot-access-kube-scheduler shoot-access-cluster-admin osc-pool-a ref-all ref-host-1 ref-ext] in "kube-system" namespace`
	run(t, a, []rule{
		// Who is a node agent.
		{"other users: no opinion", review("alice", "get", "", "nodes", "", "", "node-1"), noOpinion()},
		{"node-agent name without the group: no opinion", authorizationv1.SubjectAccessReviewSpec{User: user, Groups: []string{"system:authenticated"}, ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "nodes", Name: "node-1"}}, noOpinion()},
		{"node-agent without machine name", review(agentPrefix, "get", "", "nodes", "", "", "node-1"), deny("")},
		{"non-resource request", authorizationv1.SubjectAccessReviewSpec{User: user, Groups: agents, NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/healthz", Verb: "get"}}, deny("")},
		{"other resources", review(user, "get", "", "configmaps", "", "kube-system", "x"), deny("")},
		{"events of another group", review(user, "create", "example.com", "events", "", "default", ""), deny("")},

		// CertificateSigningRequests: create any; get its own.
		{"create any CSR", review(user, "create", certs, csrs, "", "", ""), allow},
		{"get own CSR", review(user, "get", certs, csrs, "", "", "own"), allow},
		{"get foreign CSR", review(user, "get", certs, csrs, "", "", "foreign"), deny(`gardener-node-agent is only allowed to read or request CSRs for its own user "` + user + `"`)},
		{"get missing CSR: evaluation error", review(user, "get", certs, csrs, "", "", "missing"), evalError(`"missing" not found`)},
		{"list CSRs", review(user, "list", certs, csrs, "", "", ""), verbs("[get create]")},
		{"CSR approval subresource", review(user, "update", certs, csrs, "approval", "", "own"), subresources("[]")},

		// Events: create and patch, core and events.k8s.io.
		{"create core event", review(user, "create", "", "events", "", "default", ""), allow},
		{"patch events.k8s.io event", review(user, "patch", "events.k8s.io", "events", "", "kube-system", "e"), allow},
		{"delete event", review(user, "delete", "", "events", "", "default", "e"), verbs("[create patch]")},
		{"event subresource", review(user, "patch", "", "events", "status", "default", "e"), subresources("[]")},

		// Leases: in kube-system, named after its Node or its OSC secret; create any.
		{"get own lease", review(user, "get", coord, leases, "", "kube-system", "gardener-node-agent-node-1"), allow},
		{"update own lease", review(user, "update", coord, leases, "", "kube-system", "gardener-node-agent-node-1"), allow},
		{"watch own lease", review(user, "watch", coord, leases, "", "kube-system", "gardener-node-agent-node-1"), allow},
		{"list own lease by name", review(user, "list", coord, leases, "", "kube-system", "gardener-node-agent-node-1"), allow},
		{"lease named after the OSC secret", review(user, "update", coord, leases, "", "kube-system", "osc-pool-a"), allow},
		{"create a lease in kube-system", review(user, "create", coord, leases, "", "kube-system", ""), allow},
		{"create a lease elsewhere", review(user, "create", coord, leases, "", "default", ""), deny(`this gardener-node-agent can only access leases [gardener-node-agent-node-1 osc-pool-a] in "kube-system" namespace`)},
		// Security: an agent may not list or watch every Lease of kube-system.
		{"list all leases in kube-system", review(user, "list", coord, leases, "", "kube-system", ""), deny(`this gardener-node-agent can only access leases [gardener-node-agent-node-1 osc-pool-a] in "kube-system" namespace`)},
		{"watch all leases in kube-system", review(user, "watch", coord, leases, "", "kube-system", ""), deny(`this gardener-node-agent can only access leases [gardener-node-agent-node-1 osc-pool-a] in "kube-system" namespace`)},
		{"another node's lease", review(user, "update", coord, leases, "", "kube-system", "gardener-node-agent-node-2"), denyAny},
		{"own lease name elsewhere", review(user, "get", coord, leases, "", "default", "gardener-node-agent-node-1"), denyAny},
		{"delete own lease", review(user, "delete", coord, leases, "", "kube-system", "gardener-node-agent-node-1"), verbs("[get list watch create update]")},
		{"lease subresource", review(user, "get", coord, leases, "status", "kube-system", "gardener-node-agent-node-1"), subresources("[]")},
		{"lease of a machine whose Node is gone", review(ghost, "get", coord, leases, "", "kube-system", "gardener-node-agent-node-gone"), deny(`no node for "machine-ghost" found`)},

		// Nodes: list and watch all; get, patch, update its own and its status.
		{"list nodes", review(user, "list", "", "nodes", "", "", ""), allow},
		{"watch another node", review(user, "watch", "", "nodes", "", "", "node-2"), allow},
		{"list nodes of an unknown machine", review(unknown, "list", "", "nodes", "", "", ""), allow},
		{"get own node", review(user, "get", "", "nodes", "", "", "node-1"), allow},
		{"patch own node status", review(user, "patch", "", "nodes", "status", "", "node-1"), allow},
		{"update own node", review(user, "update", "", "nodes", "", "", "node-1"), allow},
		{"get another node", review(user, "get", "", "nodes", "", "", "node-2"), deny(`this gardener-node-agent can only access node "node-1"`)},
		{"delete own node", review(user, "delete", "", "nodes", "", "", "node-1"), verbs("[get list watch patch update]")},
		{"own node proxy subresource", review(user, "get", "", "nodes", "proxy", "", "node-1"), subresources("[status]")},
		{"node of a machine whose Node is gone", review(ghost, "get", "", "nodes", "", "", "node-gone"), deny(`no node for "machine-ghost" found`)},
		{"node of an unknown machine: evaluation error", review(unknown, "get", "", "nodes", "", "", "node-1"), evalError(`error getting machine "machine-unknown": `)},

		// Pods: those on its own Node; list and watch unconditionally without authorizeWithSelectors.
		{"get a pod on its node", review(user, "get", "", "pods", "", "default", "on-node-1"), allow},
		{"delete a pod on its node", review(user, "delete", "", "pods", "", "default", "on-node-1"), allow},
		{"get a pod on another node", review(user, "get", "", "pods", "", "default", "on-node-2"), deny(`pod "default/on-node-2" does not belong to node "node-1"`)},
		{"get a missing pod: evaluation error", review(user, "get", "", "pods", "", "default", "missing"), evalError(`error getting pod "default/missing": `)},
		{"list pods", review(user, "list", "", "pods", "", "", ""), allow},
		{"watch pods", review(user, "watch", "", "pods", "", "default", ""), allow},
		{"create pods", review(user, "create", "", "pods", "", "default", ""), verbs("[get list watch delete]")},
		{"pod logs", review(user, "get", "", "pods", "log", "default", "on-node-1"), subresources("[]")},
		{"pods of a machine whose Node is gone", review(ghost, "list", "", "pods", "", "", ""), deny(`no node for "machine-ghost" found`)},

		// Secrets: always the five tokens and kubeconfigs, its OSC secret and the Secrets that
		// the OSC's files reference for its host name.
		{"get valitail secret", review(user, "get", "", "secrets", "", "kube-system", "gardener-valitail"), allow},
		{"get opentelemetry secret", review(user, "get", "", "secrets", "", "kube-system", "gardener-opentelemetry-collector"), allow},
		{"get kube-controller-manager access", review(user, "get", "", "secrets", "", "kube-system", "shoot-access-kube-controller-manager"), allow},
		{"get kube-scheduler access", review(user, "watch", "", "secrets", "", "kube-system", "shoot-access-kube-scheduler"), allow},
		{"get cluster-admin access", review(user, "list", "", "secrets", "", "kube-system", "shoot-access-cluster-admin"), allow},
		{"watch own OSC secret", review(user, "watch", "", "secrets", "", "kube-system", "osc-pool-a"), allow},
		{"a file's secret for every host", review(user, "get", "", "secrets", "", "kube-system", "ref-all"), allow},
		{"a file's secret for its host", review(user, "get", "", "secrets", "", "kube-system", "ref-host-1"), allow},
		{"an extension file's secret", review(user, "get", "", "secrets", "", "kube-system", "ref-ext"), allow},
		{"a file's secret for another host", review(user, "get", "", "secrets", "", "kube-system", "ref-host-2"), deny(secretsReason)},
		{"another pool's OSC secret", review(user, "get", "", "secrets", "", "kube-system", "osc-pool-b"), deny(secretsReason)},
		{"list all secrets", review(user, "list", "", "secrets", "", "kube-system", ""), deny(secretsReason)},
		{"valitail secret elsewhere", review(user, "get", "", "secrets", "", "default", "gardener-valitail"), deny(secretsReason)},
		{"update valitail secret", review(user, "update", "", "secrets", "", "kube-system", "gardener-valitail"), verbs("[get list watch]")},
		{"secret subresource", review(user, "get", "", "secrets", "status", "kube-system", "gardener-valitail"), subresources("[]")},
		{"secrets of an unknown machine: evaluation error", review(unknown, "get", "", "secrets", "", "kube-system", "gardener-valitail"), evalError(`error getting machine "machine-unknown": `)},
		// Its Node is gone: no host name, so every host's files count.
		{"secrets of a machine whose Node is gone", review(ghost, "get", "", "secrets", "", "kube-system", "ref-host-2"), allow},
		// Its worker pool names no OSC secret: Gardener's read of the Secret named "" fails, so
		// no Secret at all is decided (not even the always readable ones): the next authorizer does.
		{"secrets of a machine without OSC secret", review(agentPrefix+"machine-nopool", "get", "", "secrets", "", "kube-system", "gardener-valitail"), evalError(noOSCSecretError)},
		{"no OSC secret grants none", review(agentPrefix+"machine-nopool", "get", "", "secrets", "", "kube-system", "osc-pool-a"), evalError(noOSCSecretError)},
		// A Machine names its Node only once it joined; until then every Node-scoped answer and
		// the Secrets are evaluation errors (TestBootstrap has them all).
		{"secrets of a machine without Node yet", review(agentPrefix+"machine-unjoined", "get", "", "secrets", "", "kube-system", "ref-host-2"), evalError(bootstrapSecretsError)},
		{"node of a machine without Node yet", review(agentPrefix+"machine-unjoined", "get", "", "nodes", "", "", "node-1"), evalError(bootstrapNodeError)},
		{"lease of a machine without Node yet", review(agentPrefix+"machine-unjoined", "get", coord, leases, "", "kube-system", "gardener-node-agent-"), evalError(bootstrapNodeError)},
	})
}

// The evaluation errors of a bootstrapping agent: Gardener reads the Node its Machine names,
// none, and that read fails (the Node-scoped rules; the Secrets once the OSC secret is read).
const (
	bootstrapNodeError    = `error getting node "/": resource name may not be empty`
	bootstrapSecretsError = `error getting node "": resource name may not be empty`
)

// TestBootstrap: a node agent whose Machine names no Node yet (its Node has not registered)
// gets, for every resource and verb the authorizer handles, Gardener's answer by Gardener's code
// path: what needs no Node is decided as for everybody (CSRs, Events, listing and watching
// Nodes, refused verbs and subresources); what is scoped to its Node is an evaluation error
// (no opinion: RBAC decides; a denial would be final); Secrets are an evaluation error once
// Gardener reads the OSC secret and then the Node, so not even the always readable ones are
// allowed. Only when the OSC secret does not exist (or is not named) does Gardener skip the
// Node and decide on the always readable Secrets and the OSC secret's name.
func TestBootstrap(t *testing.T) {
	f := newFixture()
	unjoined := agentPrefix + "machine-unjoined"
	ownCSR := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "unjoined-own"}, Spec: certificatesv1.CertificateSigningRequestSpec{Username: unjoined}}
	require.NoError(t, f.target.Create(context.Background(), ownCSR))
	nodeErr, secretsErr := evalError(bootstrapNodeError), evalError(bootstrapSecretsError)
	var cases []rule
	add := func(name string, spec authorizationv1.SubjectAccessReviewSpec, want outcome) {
		cases = append(cases, rule{name, spec, want})
	}

	// CertificateSigningRequests: no Node involved.
	add("create a CSR", review(unjoined, "create", certs, csrs, "", "", ""), allow)
	add("get own CSR", review(unjoined, "get", certs, csrs, "", "", "unjoined-own"), allow)
	add("get foreign CSR", review(unjoined, "get", certs, csrs, "", "", "foreign"), deny(`gardener-node-agent is only allowed to read or request CSRs for its own user "`+unjoined+`"`))
	add("get missing CSR", review(unjoined, "get", certs, csrs, "", "", "missing"), evalError(`"missing" not found`))
	for _, verb := range []string{"list", "watch", "update", "patch", "delete", "deletecollection"} {
		add(verb+" CSRs", review(unjoined, verb, certs, csrs, "", "", "unjoined-own"), verbs("[get create]"))
	}
	add("CSR approval", review(unjoined, "update", certs, csrs, "approval", "", "unjoined-own"), subresources("[]"))

	// Events: no Node involved.
	for _, group := range []string{"", "events.k8s.io"} {
		add("create event "+group, review(unjoined, "create", group, "events", "", "default", ""), allow)
		add("patch event "+group, review(unjoined, "patch", group, "events", "", "kube-system", "e"), allow)
		for _, verb := range []string{"get", "list", "watch", "update", "delete"} {
			add(verb+" event "+group, review(unjoined, verb, group, "events", "", "default", "e"), verbs("[create patch]"))
		}
		add("event subresource "+group, review(unjoined, "patch", group, "events", "status", "default", "e"), subresources("[]"))
	}

	// Leases: the verb and subresource are checked first, then the Node is read.
	for _, verb := range []string{"get", "list", "watch", "create", "update"} {
		for _, name := range []string{"", "gardener-node-agent-node-1", "osc-pool-a"} {
			add(verb+" lease "+name, review(unjoined, verb, coord, leases, "", "kube-system", name), nodeErr)
		}
		add(verb+" lease elsewhere", review(unjoined, verb, coord, leases, "", "default", "x"), nodeErr)
	}
	for _, verb := range []string{"patch", "delete", "deletecollection"} {
		add(verb+" lease", review(unjoined, verb, coord, leases, "", "kube-system", "gardener-node-agent-node-1"), verbs("[get list watch create update]"))
	}
	add("lease subresource", review(unjoined, "get", coord, leases, "status", "kube-system", "x"), subresources("[]"))

	// Nodes: listing and watching need no Node; the rest reads it.
	for _, name := range []string{"", "node-1"} {
		add("list nodes "+name, review(unjoined, "list", "", "nodes", "", "", name), allow)
		add("watch nodes "+name, review(unjoined, "watch", "", "nodes", "", "", name), allow)
	}
	for _, verb := range []string{"get", "patch", "update"} {
		for _, sub := range []string{"", "status"} {
			add(verb+" node "+sub, review(unjoined, verb, "", "nodes", sub, "", "node-1"), nodeErr)
			add(verb+" unnamed node "+sub, review(unjoined, verb, "", "nodes", sub, "", ""), nodeErr)
		}
	}
	for _, verb := range []string{"create", "delete", "deletecollection"} {
		add(verb+" node", review(unjoined, verb, "", "nodes", "", "", "node-1"), verbs("[get list watch patch update]"))
	}
	add("node proxy", review(unjoined, "get", "", "nodes", "proxy", "", "node-1"), subresources("[status]"))

	// Pods: the Node is read before the verb matters.
	for _, verb := range []string{"get", "list", "watch", "delete"} {
		add(verb+" pod", review(unjoined, verb, "", "pods", "", "default", "on-node-1"), nodeErr)
		add(verb+" pods", review(unjoined, verb, "", "pods", "", "", ""), nodeErr)
	}
	for _, verb := range []string{"create", "update", "patch", "deletecollection"} {
		add(verb+" pod", review(unjoined, verb, "", "pods", "", "default", "on-node-1"), verbs("[get list watch delete]"))
	}
	add("pod logs", review(unjoined, "get", "", "pods", "log", "default", "on-node-1"), subresources("[]"))
	add("pod eviction", review(unjoined, "create", "", "pods", "eviction", "default", "on-node-1"), subresources("[]"))

	// Secrets: its OSC secret exists, so the Node is read: nothing is allowed, not even the
	// always readable Secrets (control-plane credentials among them).
	readable := []string{"gardener-valitail", "gardener-opentelemetry-collector", "shoot-access-kube-controller-manager", "shoot-access-kube-scheduler", "shoot-access-cluster-admin", "osc-pool-a", "ref-all", "ref-host-2", "ref-ext"}
	for _, verb := range []string{"get", "list", "watch"} {
		for _, name := range append(readable, "", "not-osc") {
			add(verb+" secret "+name, review(unjoined, verb, "", "secrets", "", "kube-system", name), secretsErr)
		}
		add(verb+" secret elsewhere", review(unjoined, verb, "", "secrets", "", "default", "gardener-valitail"), secretsErr)
	}
	for _, verb := range []string{"create", "update", "patch", "delete", "deletecollection"} {
		add(verb+" secret", review(unjoined, verb, "", "secrets", "", "kube-system", "gardener-valitail"), verbs("[get list watch]"))
	}
	add("secret subresource", review(unjoined, "get", "", "secrets", "status", "kube-system", "gardener-valitail"), subresources("[]"))

	// Other resources and non-resource requests are denied as for everybody.
	add("configmaps", review(unjoined, "get", "", "configmaps", "", "kube-system", "x"), deny(""))
	add("non-resource", authorizationv1.SubjectAccessReviewSpec{User: unjoined, Groups: agents, NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/healthz", Verb: "get"}}, deny(""))

	// Its OSC secret does not exist: Gardener does not read the Node and decides on the always
	// readable Secrets and the OSC secret's name. The Node-scoped rules still read the Node.
	gone := agentPrefix + "machine-unjoined-oscgone"
	goneReason := `gardener-node-agent can only access secrets [gardener-valitail gardener-opentelemetry-collector shoot-access-kube-controller-manager shoot-access-kube-scheduler shoot-access-cluster-admin osc-pool-gone] in "kube-system" namespace`
	add("OSC secret gone: always readable", review(gone, "get", "", "secrets", "", "kube-system", "shoot-access-kube-scheduler"), allow)
	add("OSC secret gone: its name", review(gone, "watch", "", "secrets", "", "kube-system", "osc-pool-gone"), allow)
	add("OSC secret gone: others", review(gone, "get", "", "secrets", "", "kube-system", "osc-pool-a"), deny(goneReason))
	add("OSC secret gone: lease", review(gone, "update", coord, leases, "", "kube-system", "gardener-node-agent-node-1"), nodeErr)
	add("OSC secret gone: node", review(gone, "get", "", "nodes", "", "", "node-1"), nodeErr)
	add("OSC secret gone: pods", review(gone, "list", "", "pods", "", "", ""), nodeErr)

	// No OSC secret named: its read fails before the Node's, as Gardener's does.
	nopool := agentPrefix + "machine-unjoined-nopool"
	add("no OSC secret: always readable", review(nopool, "get", "", "secrets", "", "kube-system", "gardener-valitail"), evalError(noOSCSecretError))
	add("no OSC secret: others", review(nopool, "get", "", "secrets", "", "kube-system", "osc-pool-a"), evalError(noOSCSecretError))
	add("no OSC secret: node", review(nopool, "patch", "", "nodes", "status", "", "node-1"), nodeErr)

	run(t, f.authorizer(t, ptr.To(machineNS), false), cases)

	t.Run("authorizeWithSelectors", func(t *testing.T) {
		list := review(unjoined, "list", "", "pods", "", "", "")
		run(t, f.authorizer(t, ptr.To(machineNS), true), []rule{
			{"list with its node's selector", withFieldSelector(list, authorizationv1.FieldSelectorAttributes{RawSelector: "spec.nodeName=node-1"}), nodeErr},
			{"list with an empty node name", withFieldSelector(list, authorizationv1.FieldSelectorAttributes{RawSelector: "spec.nodeName="}), nodeErr},
			{"list with an invalid selector", withFieldSelector(list, authorizationv1.FieldSelectorAttributes{RawSelector: "a=b=c"}), nodeErr},
			{"watch a named pod", review(unjoined, "watch", "", "pods", "", "default", "on-node-1"), nodeErr},
		})
	})

	// On the wire: no opinion with the evaluation error, never denied.
	t.Run("answer", func(t *testing.T) {
		wh := webhook.Authorization(Name, Path, f.authorizer(t, ptr.To(machineNS), false), slog.New(slog.NewTextHandler(io.Discard, nil)))
		body := `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"` + unjoined + `","groups":["gardener.cloud:node-agents"],"resourceAttributes":{"verb":"get","resource":"secrets","namespace":"kube-system","name":"shoot-access-kube-scheduler"}}}`
		rec := httptest.NewRecorder()
		wh.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, Path, bytes.NewReader([]byte(body))))
		require.Equal(t, http.StatusOK, rec.Code)
		assert.JSONEq(t, `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","status":{"allowed":false,
			"evaluationError":"500 error getting node \"\": resource name may not be empty"}}`, rec.Body.String())
	})

	// The Machine is read again on every request until it names its Node: when the Node has
	// registered, the agent's requests are decided at once.
	t.Run("joins", func(t *testing.T) {
		g := newFixture()
		a := g.authorizer(t, ptr.To(machineNS), false)
		spec := review(unjoined, "get", "", "nodes", "", "", "node-2")
		_, _, err := a.Authorize(context.Background(), spec)
		require.Error(t, err)
		m := machine("machine-unjoined", "node-2", "osc-pool-a")
		current := &unstructured.Unstructured{}
		current.SetGroupVersionKind(machineGVK)
		require.NoError(t, g.source.Get(context.Background(), client.ObjectKey{Namespace: machineNS, Name: "machine-unjoined"}, current))
		m.SetResourceVersion(current.GetResourceVersion())
		require.NoError(t, g.source.Update(context.Background(), m))
		d, _, err := a.Authorize(context.Background(), spec)
		require.NoError(t, err)
		assert.Equal(t, webhook.Allow.String(), d.String())
	})
}

// TestAuthorizeWithSelectors: with webhooks.nodeAgentAuthorizer.authorizeWithSelectors, Pods
// are listed and watched only with the field selector spec.nodeName=<its Node>.
func TestAuthorizeWithSelectors(t *testing.T) {
	a := newFixture().authorizer(t, ptr.To(machineNS), true)
	list := review(user, "list", "", "pods", "", "", "")
	ownNode := "can only list/watch pods with spec.nodeName=node-1 field selector"
	run(t, a, []rule{
		{"no selector", list, deny(ownNode)},
		{"raw selector of its node", withFieldSelector(list, authorizationv1.FieldSelectorAttributes{RawSelector: "spec.nodeName=node-1"}), allow},
		{"raw selector of its node among others", withFieldSelector(list, authorizationv1.FieldSelectorAttributes{RawSelector: "metadata.namespace=default,spec.nodeName==node-1"}), allow},
		{"raw selector of another node", withFieldSelector(list, authorizationv1.FieldSelectorAttributes{RawSelector: "spec.nodeName=node-2"}), deny(ownNode)},
		{"raw selector excluding its node", withFieldSelector(list, authorizationv1.FieldSelectorAttributes{RawSelector: "spec.nodeName!=node-1"}), deny(ownNode)},
		{"unparsable raw selector: evaluation error", withFieldSelector(list, authorizationv1.FieldSelectorAttributes{RawSelector: "spec.nodeName"}), evalError("error parsing field selector: ")},
		{"structured In its node", withFieldSelector(list, authorizationv1.FieldSelectorAttributes{Requirements: []metav1.FieldSelectorRequirement{{Key: "spec.nodeName", Operator: metav1.FieldSelectorOpIn, Values: []string{"node-1"}}}}), allow},
		{"structured requirements win over the raw selector", withFieldSelector(list, authorizationv1.FieldSelectorAttributes{RawSelector: "spec.nodeName=node-1", Requirements: []metav1.FieldSelectorRequirement{{Key: "spec.nodeName", Operator: metav1.FieldSelectorOpIn, Values: []string{"node-2"}}}}), deny(ownNode)},
		{"structured NotIn its node", withFieldSelector(list, authorizationv1.FieldSelectorAttributes{Requirements: []metav1.FieldSelectorRequirement{{Key: "spec.nodeName", Operator: metav1.FieldSelectorOpNotIn, Values: []string{"node-1"}}}}), deny(ownNode)},
		{"structured Exists: evaluation error", withFieldSelector(list, authorizationv1.FieldSelectorAttributes{Requirements: []metav1.FieldSelectorRequirement{{Key: "spec.nodeName", Operator: metav1.FieldSelectorOpExists}}}), evalError("error parsing field selector: fieldSelectors do not yet support Exists")},
		{"structured multiple values: evaluation error", withFieldSelector(list, authorizationv1.FieldSelectorAttributes{Requirements: []metav1.FieldSelectorRequirement{{Key: "spec.nodeName", Operator: metav1.FieldSelectorOpIn, Values: []string{"node-1", "node-2"}}}}), evalError("fieldSelectors do not yet support multiple values")},
		{"structured In without values: evaluation error", withFieldSelector(list, authorizationv1.FieldSelectorAttributes{Requirements: []metav1.FieldSelectorRequirement{{Key: "spec.nodeName", Operator: metav1.FieldSelectorOpIn}}}), evalError("fieldSelectors in must have one value")},
		{"watch naming a pod on its node", review(user, "watch", "", "pods", "", "default", "on-node-1"), allow},
		{"watch naming a pod on another node", review(user, "watch", "", "pods", "", "default", "on-node-2"), deny(`pod "default/on-node-2" does not belong to node "node-1"`)},
	})
}

// TestGardenadm: without a machine namespace a node agent's machine name is its Node's name.
func TestGardenadm(t *testing.T) {
	a := newFixture().authorizer(t, nil, false)
	agent := agentPrefix + "gardenadm-node"
	patched := agentPrefix + "patched-node"
	bootstrapping := agentPrefix + "not-joined-yet"
	run(t, a, []rule{
		{"get own node", review(agent, "get", "", "nodes", "", "", "gardenadm-node"), allow},
		{"get another node", review(agent, "get", "", "nodes", "", "", "node-1"), denyAny},
		{"own lease", review(agent, "update", coord, leases, "", "kube-system", "gardener-node-agent-gardenadm-node"), allow},
		{"the OSC secret its Node names", review(agent, "get", "", "secrets", "", "kube-system", "osc-pool-b"), allow},
		{"a Secret that OSC references", review(agent, "get", "", "secrets", "", "kube-system", "ref-b"), allow},
		{"another pool's OSC secret", review(agent, "get", "", "secrets", "", "kube-system", "osc-pool-a"), denyAny},
		{"shoot-access-cluster-admin", review(agent, "get", "", "secrets", "", "kube-system", "shoot-access-cluster-admin"), allow},
		// Security: the secret-name label is patchable by the agent; a name that is no OSC
		// secret grants nothing.
		{"a non-OSC Secret its patched Node names", review(patched, "get", "", "secrets", "", "kube-system", "not-osc"), deny(`gardener-node-agent can only access secrets [gardener-valitail gardener-opentelemetry-collector shoot-access-kube-controller-manager shoot-access-kube-scheduler shoot-access-cluster-admin] in "kube-system" namespace`)},
		// Bootstrap: before its Node exists, every OSC secret and all their references.
		{"bootstrap: pool a's OSC secret", review(bootstrapping, "get", "", "secrets", "", "kube-system", "osc-pool-a"), allow},
		{"bootstrap: pool b's OSC secret", review(bootstrapping, "get", "", "secrets", "", "kube-system", "osc-pool-b"), allow},
		{"bootstrap: every host's references", review(bootstrapping, "get", "", "secrets", "", "kube-system", "ref-host-2"), allow},
		{"bootstrap: no other Secret", review(bootstrapping, "get", "", "secrets", "", "kube-system", "not-osc"), deny(`gardener-node-agent can only access secrets [gardener-valitail gardener-opentelemetry-collector shoot-access-kube-controller-manager shoot-access-kube-scheduler shoot-access-cluster-admin osc-pool-a ref-all ref-host-1 ref-host-2 ref-ext osc-pool-b ref-b] in "kube-system" namespace`)},
		{"bootstrap: node-scoped requests", review(bootstrapping, "get", "", "nodes", "", "", "not-joined-yet"), deny(`no node for "not-joined-yet" found`)},
	})
}

// Reads that fail are evaluation errors (no opinion; the kube-apiserver asks its next
// authorizer), never denials.
func TestUnreadableObjectsAreEvaluationErrors(t *testing.T) {
	f := newFixture()
	broken := errors.New("etcd is down")
	failing := func(kind string) client.WithWatch {
		return interceptor.NewClient(f.target, interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if _, ok := obj.(*corev1.Node); ok && kind == "node" {
					return broken
				}
				if _, ok := obj.(*corev1.Secret); ok && kind == "secret" {
					return broken
				}
				return c.Get(ctx, key, obj, opts...)
			},
			List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				if kind == "secret" {
					return broken
				}
				return c.List(ctx, list, opts...)
			},
		})
	}
	for _, tc := range []struct {
		name             string
		machineNamespace *string
		failing          string
		spec             authorizationv1.SubjectAccessReviewSpec
		want             string
	}{
		{"node read for a node", ptr.To(machineNS), "node", review(user, "get", "", "nodes", "", "", "node-1"), `error getting node "/node-1": etcd is down`},
		{"node read for a lease", ptr.To(machineNS), "node", review(user, "get", coord, leases, "", "kube-system", "x"), `error getting node "/node-1": etcd is down`},
		{"node read for a secret", ptr.To(machineNS), "node", review(user, "get", "", "secrets", "", "kube-system", "x"), `error getting node "node-1": etcd is down`},
		{"OSC secret read", ptr.To(machineNS), "secret", review(user, "get", "", "secrets", "", "kube-system", "x"), `error getting OSC secret "osc-pool-a": etcd is down`},
		{"gardenadm node read", nil, "node", review(agentPrefix+"gardenadm-node", "get", "", "secrets", "", "kube-system", "x"), `error getting node "gardenadm-node": etcd is down`},
		{"gardenadm OSC secret list", nil, "secret", review(agentPrefix+"gardenadm-node", "get", "", "secrets", "", "kube-system", "x"), `error listing operating system config secrets: etcd is down`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := f.authorizerReading(t, failing(tc.failing), tc.machineNamespace, false)
			_, _, err := a.Authorize(context.Background(), tc.spec)
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
		})
	}

	t.Run("undecodable OSC", func(t *testing.T) {
		g := newFixture()
		s := &corev1.Secret{}
		require.NoError(t, g.target.Get(context.Background(), client.ObjectKey{Namespace: "kube-system", Name: "osc-pool-a"}, s))
		s.Data["osc.yaml"] = []byte("spec: [")
		require.NoError(t, g.target.Update(context.Background(), s))
		_, _, err := g.authorizer(t, ptr.To(machineNS), false).Authorize(context.Background(), review(user, "get", "", "secrets", "", "kube-system", "x"))
		require.Error(t, err)
		assert.Contains(t, err.Error(), `error reading secretRef names from OSC secret "osc-pool-a": unable to decode OSC from secret "osc-pool-a": `)
	})
}

// Through the HTTP handler an evaluation error is answered as Gardener's handler does.
func TestEvaluationErrorAnswer(t *testing.T) {
	a := newFixture().authorizer(t, ptr.To(machineNS), false)
	wh := webhook.Authorization(Name, Path, a, slog.New(slog.NewTextHandler(io.Discard, nil)))
	body := `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"` + agentPrefix + `machine-unknown","groups":["gardener.cloud:node-agents"],"resourceAttributes":{"verb":"get","resource":"nodes","name":"node-1"}}}`
	rec := httptest.NewRecorder()
	wh.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, Path, bytes.NewReader([]byte(body))))
	require.Equal(t, http.StatusOK, rec.Code)
	assert.JSONEq(t, `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","status":{"allowed":false,
		"evaluationError":"500 error getting machine \"machine-unknown\": machines.machine.sapcloud.io \"machine-unknown\" not found"}}`, rec.Body.String())
}

func TestMachinesAreCachedBriefly(t *testing.T) {
	f := newFixture()
	a := f.authorizer(t, ptr.To(machineNS), false)
	spec := review(user, "get", "", "nodes", "", "", "node-1")
	for range 5 {
		d, _, err := a.Authorize(context.Background(), spec)
		require.NoError(t, err)
		require.Equal(t, webhook.Allow, d)
	}
	assert.Equal(t, 1, f.machineReads, "one Machine read serves the TTL")
	f.clock.Step(time.Minute + time.Second)
	_, _, err := a.Authorize(context.Background(), spec)
	require.NoError(t, err)
	assert.Equal(t, 2, f.machineReads, "expired entries are read again")

}

// In the multi-tenant mode a request's Machines are read in its tenant's control-plane
// namespace, and cached per tenant: a machine of the same name in another shoot is another
// Machine.
func TestMachinesOfTheRequestsTenant(t *testing.T) {
	f := newFixture()
	other := machine("machine-1", "node-2", "osc-pool-a")
	other.SetNamespace("shoot--other--x")
	require.NoError(t, f.source.Create(context.Background(), other))
	a := f.authorizer(t, ptr.To(machineNS), false)
	ownNode := review(user, "get", "", "nodes", "", "", "node-1")
	otherTenant := tenant.With(context.Background(), "shoot--other--x")

	d, _, err := a.Authorize(context.Background(), ownNode)
	require.NoError(t, err)
	assert.Equal(t, webhook.Allow.String(), d.String(), "single-tenant: the configured namespace")

	d, reason, err := a.Authorize(otherTenant, ownNode)
	require.NoError(t, err)
	assert.Equal(t, webhook.Deny.String(), d.String(), "the other tenant's machine-1 runs node-2")
	assert.Equal(t, `this gardener-node-agent can only access node "node-2"`, reason)
	assert.Equal(t, 2, f.machineReads, "one read per tenant")

	_, _, err = a.Authorize(tenant.With(context.Background(), "shoot--third--y"), ownNode)
	require.Error(t, err, "a tenant without that Machine: evaluation error")
}

// BenchmarkNodeAgentAuthorizer measures a node agent's lease update, the most frequent
// request, through the HTTP handler with the Machine cached (reads from a fake client).
func BenchmarkNodeAgentAuthorizer(b *testing.B) {
	a := newFixture().authorizer(b, ptr.To(machineNS), false)
	wh := webhook.Authorization(Name, Path, a, slog.New(slog.NewTextHandler(io.Discard, nil)))
	body := []byte(`{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"` + user + `","groups":["gardener.cloud:node-agents"],"resourceAttributes":{"verb":"update","group":"coordination.k8s.io","resource":"leases","namespace":"kube-system","name":"gardener-node-agent-node-1"}}}`)
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		wh.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(body)))
		if rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte(`"allowed":true`)) {
			b.Fatalf("HTTP %d: %s", rec.Code, rec.Body.String())
		}
	}
}

// The constructor takes the machine namespace and authorizeWithSelectors from GRM's component
// configuration.
func TestConstructorReadsConfiguration(t *testing.T) {
	f := newFixture()
	cfg := &rmv1alpha1.ResourceManagerConfiguration{}
	cfg.Webhooks.NodeAgentAuthorizer = rmv1alpha1.NodeAgentAuthorizerWebhookConfig{Enabled: true, MachineNamespace: ptr.To(machineNS), AuthorizeWithSelectors: ptr.To(true)}
	require.True(t, Webhook.Enabled(&componentconfig.ResourceManagerFile{ResourceManagerConfiguration: cfg}))
	wh, err := Webhook.New(webhook.Deps{Source: f.source, Target: f.target, Config: cfg, Clock: f.clock, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	assert.Equal(t, Path, wh.Path)
	body := `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"` + user + `","groups":["gardener.cloud:node-agents"],"resourceAttributes":{"verb":"list","resource":"pods"}}}`
	rec := httptest.NewRecorder()
	wh.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, Path, bytes.NewReader([]byte(body))))
	assert.JSONEq(t, `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","status":{"allowed":false,"denied":true,
		"reason":"can only list/watch pods with spec.nodeName=node-1 field selector"}}`, rec.Body.String())
}

// FuzzNodeAgentAuthorizer sends arbitrary bodies (seeded with reviews that reach every rule,
// field selectors included) through the HTTP handler: every answer is a SubjectAccessReview
// or a 400, never a panic or a hang.
func FuzzNodeAgentAuthorizer(f *testing.F) {
	for _, attrs := range []string{
		`{"verb":"get","resource":"nodes","name":"node-1"}`,
		`{"verb":"list","resource":"pods","fieldSelector":{"rawSelector":"spec.nodeName=node-1"}}`,
		`{"verb":"list","resource":"pods","fieldSelector":{"requirements":[{"key":"spec.nodeName","operator":"In","values":["node-1"]}]}}`,
		`{"verb":"get","resource":"secrets","namespace":"kube-system","name":"osc-pool-a"}`,
		`{"verb":"update","group":"coordination.k8s.io","resource":"leases","namespace":"kube-system","name":"gardener-node-agent-node-1"}`,
		`{"verb":"get","group":"certificates.k8s.io","resource":"certificatesigningrequests","name":"own"}`,
		`{"verb":"delete","resource":"pods","namespace":"default","name":"on-node-2"}`,
	} {
		f.Add([]byte(`{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"` + user + `","groups":["gardener.cloud:node-agents"],"resourceAttributes":` + attrs + `}}`))
	}
	fx := newFixture()
	var handlers []http.Handler
	for _, machineNamespace := range []*string{ptr.To(machineNS), nil} {
		a := fx.authorizer(f, machineNamespace, true)
		handlers = append(handlers, webhook.Authorization(Name, Path, a, slog.New(slog.NewTextHandler(io.Discard, nil))).Handler)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, h := range handlers {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(body)))
			if rec.Code != http.StatusOK && rec.Code != http.StatusBadRequest {
				t.Fatalf("HTTP %d: %s", rec.Code, rec.Body.String())
			}
		}
	})
}

// The Secrets an agent may read are computed once per SecretsCacheTTL: within it a change of
// the OSC secret is not seen yet, after it the next request decides on the new state.
func TestReadableSecretsAreCachedBriefly(t *testing.T) {
	ctx := context.Background()
	f := newFixture()
	a, err := New(f.source, f.target, ptr.To(machineNS), f.clock, Config{MachineCacheTTL: time.Minute, MachineCacheSize: 10, SecretsCacheTTL: 2 * time.Second})
	require.NoError(t, err)
	referenced := review(user, "get", "", "secrets", "", "kube-system", "ref-all")
	d, _, err := a.Authorize(ctx, referenced)
	require.NoError(t, err)
	require.Equal(t, webhook.Allow, d, "the OSC's files reference it")

	// The worker pool's OSC secret goes, and with it what its files reference.
	osc := &corev1.Secret{}
	require.NoError(t, f.target.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "osc-pool-a"}, osc))
	require.NoError(t, f.target.Delete(ctx, osc))
	d, _, err = a.Authorize(ctx, referenced)
	require.NoError(t, err)
	assert.Equal(t, webhook.Allow, d, "within the TTL the computed Secrets are reused")

	f.clock.Step(3 * time.Second)
	d, _, err = a.Authorize(ctx, referenced)
	require.NoError(t, err)
	assert.Equal(t, webhook.Deny, d, "after the TTL the Secrets are computed again, without the OSC secret's references")
}

// Generated reviews: 1,000 requests of the fixture's machines (those whose worker pool names no
// OSC secret among them) for every resource, verb and a few names. However a machine's Node and
// OSC secret stand, a Secret is decided only where Gardener's reads succeed: a machine whose pool
// names no OSC secret gets no decision about any Secret; an allowed Secret is always in
// kube-system; and the caches never change an answer (each request is also asked of a fresh
// authorizer).
func TestGeneratedReviews(t *testing.T) {
	f := newFixture()
	cached := f.authorizer(t, ptr.To(machineNS), true)
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(from ...string) string { return from[rng.IntN(len(from))] }
	noOSCSecret := map[string]bool{"machine-nopool": true, "machine-unjoined-nopool": true}
	type key struct{ resource, verb string }
	seen := map[key]int{}
	for range 1000 {
		m := pick("machine-1", "machine-ghost", "machine-unjoined", "machine-nopool", "machine-unjoined-oscgone", "machine-unjoined-nopool", "machine-unknown")
		resource := pick("secrets", "secrets", "secrets", "leases", "nodes", "pods", "events", csrs)
		group := map[string]string{"leases": coord, csrs: certs}[resource]
		spec := review(agentPrefix+m, pick("get", "list", "watch", "create", "update", "patch", "delete"), group, resource, pick("", "", "", "status"),
			pick("kube-system", "kube-system", "default"), pick("", "gardener-valitail", "osc-pool-a", "ref-all", "ref-host-1", "node-1", "on-node-1", "gardener-node-agent-node-1", "foreign"))
		got, reason, err := cached.Authorize(context.Background(), spec)
		fresh, freshReason, freshErr := f.authorizer(t, ptr.To(machineNS), true).Authorize(context.Background(), spec)
		assert.Equal(t, []any{fresh, freshReason, freshErr != nil}, []any{got, reason, err != nil}, "cached and fresh answers of %+v", spec.ResourceAttributes)
		attrs := spec.ResourceAttributes
		if resource == "secrets" && attrs.Subresource == "" && slices.Contains([]string{"get", "list", "watch"}, attrs.Verb) && noOSCSecret[m] {
			assert.ErrorContains(t, err, noOSCSecretError, "%s: %+v", m, attrs)
		}
		if resource == "secrets" && err == nil && got == webhook.Allow {
			assert.Equal(t, "kube-system", attrs.Namespace, "%s: %+v", m, attrs)
		}
		seen[key{resource, attrs.Verb}]++
	}
	assert.Len(t, seen, 6*7, "every resource with every verb")
}
