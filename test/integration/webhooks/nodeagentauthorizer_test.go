package webhooks_test

import (
	"context"
	"testing"
	"time"

	rmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/gardener-knative/gardener-knative/pkg/kube"
	"github.com/gardener-knative/gardener-knative/pkg/scheme"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
	"github.com/gardener-knative/gardener-knative/pkg/webhook"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/nodeagentauthorizer"
)

// The shoot's Machines live in its control-plane namespace of the seed: the source cluster.
const machineNamespace = "shoot--dev--local"

func init() {
	register(nodeagentauthorizer.Webhook, func(c *rmv1alpha1.ResourceManagerConfiguration) {
		c.Webhooks.NodeAgentAuthorizer.Enabled = true
		c.Webhooks.NodeAgentAuthorizer.MachineNamespace = ptr.To(machineNamespace)
		// The target's kube-apiserver (≥ 1.34) sends field selectors in its reviews.
		c.Webhooks.NodeAgentAuthorizer.AuthorizeWithSelectors = ptr.To(true)
	})
}

// clientAs returns a client of the target that authenticates with a client certificate as
// the given user, as a node agent does.
func clientAs(t *testing.T, name string, groups ...string) client.Client {
	t.Helper()
	u, err := target.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	require.NoError(t, err)
	c, err := kube.NewClient(u.Config(), scheme.Gardener)
	require.NoError(t, err)
	return c
}

// createMachine creates a Machine in the source's machine namespace whose node template names the
// node agent's secret; node is its Node ("": none registered yet).
func createMachine(t *testing.T, name, node, agentSecret string) *unstructured.Unstructured {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, client.IgnoreAlreadyExists(source.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: machineNamespace}})))
	m := &unstructured.Unstructured{}
	m.SetAPIVersion("machine.sapcloud.io/v1alpha1")
	m.SetKind("Machine")
	m.SetNamespace(machineNamespace)
	m.SetName(name)
	if node != "" {
		m.SetLabels(map[string]string{"node": node})
	}
	require.NoError(t, unstructured.SetNestedField(m.Object, agentSecret, "spec", "nodeTemplate", "metadata", "labels", "worker.gardener.cloud/gardener-node-agent-secret-name"))
	require.NoError(t, source.Client.Create(ctx, m))
	return m
}

func TestNodeAgentAuthorizer(t *testing.T) {
	ctx := context.Background()
	// Source: the Machine of node-a, with its worker pool's node-agent secret.
	createMachine(t, "machine-a", "node-a", "gardener-node-agent-pool-a")
	// Target: the shoot's Nodes (node-a of pool a), pool a's OSC secret whose files reference
	// gardener-node-agent-ref-a, other Secrets and a Pod on each Node.
	for _, n := range []string{"node-a", "node-b"} {
		require.NoError(t, target.Client.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{
			"kubernetes.io/hostname": n, "worker.gardener.cloud/gardener-node-agent-secret-name": "gardener-node-agent-pool-a",
		}}}))
	}
	osc := []byte("apiVersion: extensions.gardener.cloud/v1alpha1\nkind: OperatingSystemConfig\nspec:\n  files:\n  - path: /etc/a\n    content: {secretRef: {name: gardener-node-agent-ref-a, dataKey: a}}\n")
	require.NoError(t, target.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "gardener-node-agent-pool-a", Namespace: "kube-system", Labels: map[string]string{"worker.gardener.cloud/pool": "a"}},
		Data:       map[string][]byte{"osc.yaml": osc},
	}))
	for _, s := range []string{"gardener-valitail", "gardener-opentelemetry-collector", "shoot-access-cluster-admin", "gardener-node-agent-ref-a", "gardener-node-agent-pool-b"} {
		require.NoError(t, target.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: s, Namespace: "kube-system"}}))
	}
	for _, n := range []string{"node-a", "node-b"} {
		require.NoError(t, target.Client.Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "on-" + n, Namespace: "default"},
			Spec:       corev1.PodSpec{NodeName: n, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}))
	}

	agent := clientAs(t, "gardener.cloud:node-agent:machine:machine-a", "gardener.cloud:node-agents")
	allowed := func(err error) { t.Helper(); assert.False(t, apierrors.IsForbidden(err), "want allowed, got %v", err) }
	forbidden := func(err error) { t.Helper(); assert.True(t, apierrors.IsForbidden(err), "want forbidden, got %v", err) }

	// Nodes: list all, read and update its own, nothing of others.
	allowed(agent.List(ctx, &corev1.NodeList{}))
	node := &corev1.Node{}
	allowed(agent.Get(ctx, client.ObjectKey{Name: "node-a"}, node))
	node.Labels["checked"] = "true"
	allowed(agent.Update(ctx, node))
	forbidden(agent.Get(ctx, client.ObjectKey{Name: "node-b"}, &corev1.Node{}))
	forbidden(agent.Delete(ctx, node))

	// Leases: in kube-system, named after its Node or its worker pool's OSC secret.
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "gardener-node-agent-node-a", Namespace: "kube-system"}}
	allowed(agent.Create(ctx, lease))
	allowed(agent.Get(ctx, client.ObjectKeyFromObject(lease), lease))
	allowed(agent.Update(ctx, lease))
	allowed(agent.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "gardener-node-agent-pool-a", Namespace: "kube-system"}}))
	allowed(agent.Get(ctx, client.ObjectKey{Name: "gardener-node-agent-pool-a", Namespace: "kube-system"}, &coordinationv1.Lease{}))
	forbidden(agent.Get(ctx, client.ObjectKey{Name: "gardener-node-agent-node-b", Namespace: "kube-system"}, &coordinationv1.Lease{}))
	// Not every Lease of kube-system: listing or watching them all is forbidden, a single one
	// of its own (a field selector on its name) is not.
	forbidden(agent.List(ctx, &coordinationv1.LeaseList{}, client.InNamespace("kube-system")))
	allowed(agent.List(ctx, &coordinationv1.LeaseList{}, client.InNamespace("kube-system"), client.MatchingFields{"metadata.name": "gardener-node-agent-node-a"}))

	// Pods: those on its Node, listed with the field selector of its Node.
	allowed(agent.Get(ctx, client.ObjectKey{Name: "on-node-a", Namespace: "default"}, &corev1.Pod{}))
	forbidden(agent.Get(ctx, client.ObjectKey{Name: "on-node-b", Namespace: "default"}, &corev1.Pod{}))
	allowed(agent.List(ctx, &corev1.PodList{}, client.MatchingFields{"spec.nodeName": "node-a"}))
	forbidden(agent.List(ctx, &corev1.PodList{}, client.MatchingFields{"spec.nodeName": "node-b"}))
	forbidden(agent.List(ctx, &corev1.PodList{}))
	allowed(agent.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "on-node-a", Namespace: "default"}}))

	// Secrets: the always readable ones, its pool's OSC secret and what its files reference.
	for _, s := range []string{"gardener-valitail", "gardener-opentelemetry-collector", "shoot-access-cluster-admin", "gardener-node-agent-pool-a", "gardener-node-agent-ref-a"} {
		allowed(agent.Get(ctx, client.ObjectKey{Name: s, Namespace: "kube-system"}, &corev1.Secret{}))
	}
	forbidden(agent.Get(ctx, client.ObjectKey{Name: "gardener-node-agent-pool-b", Namespace: "kube-system"}, &corev1.Secret{}))
	forbidden(agent.List(ctx, &corev1.SecretList{}, client.InNamespace("kube-system")))

	// Events: create.
	allowed(agent.Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{GenerateName: "node-a-", Namespace: "default"},
		InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "node-a"}, Reason: "Test", Message: "from the node agent",
	}))

	// CertificateSigningRequests: create any, read only its own.
	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "node-agent-csr"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    testCSR(t),
			SignerName: "kubernetes.io/kube-apiserver-client",
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth},
		},
	}
	allowed(agent.Create(ctx, csr))
	allowed(agent.Get(ctx, client.ObjectKeyFromObject(csr), &certificatesv1.CertificateSigningRequest{}))
	foreign := csr.DeepCopy()
	foreign.Name, foreign.ResourceVersion = "admin-csr", ""
	require.NoError(t, target.Client.Create(ctx, foreign))
	forbidden(agent.Get(ctx, client.ObjectKeyFromObject(foreign), &certificatesv1.CertificateSigningRequest{}))

	// Anything else is denied.
	forbidden(agent.List(ctx, &corev1.ConfigMapList{}, client.InNamespace("kube-system")))

	// A node agent whose Machine does not exist gets nothing node-scoped: the authorizer
	// cannot evaluate its requests (no opinion), and RBAC grants it nothing.
	stranger := clientAs(t, "gardener.cloud:node-agent:machine:machine-unknown", "gardener.cloud:node-agents")
	forbidden(stranger.Get(ctx, client.ObjectKey{Name: "node-a"}, &corev1.Node{}))

	// Everybody else: no opinion, so RBAC alone decides (and grants this user nothing).
	other := clientAs(t, "gardener.cloud:node-agent:machine:machine-a-impostor")
	forbidden(other.Get(ctx, client.ObjectKey{Name: "node-a"}, &corev1.Node{}))
}

// A node agent whose Machine names no Node yet (its Node has not registered) is bootstrapping:
// the authorizer has no opinion about what is scoped to its Node, nor about Secrets (it would
// read the Node first), so the authorizers before it (RBAC) decide alone; it denies nothing
// finally and allows none of the always readable Secrets (control-plane credentials among
// them). Once the Machine names its Node, the same agent is decided at once.
func TestNodeAgentAuthorizerBootstrap(t *testing.T) {
	ctx := context.Background()
	m := createMachine(t, "machine-boot", "", "gardener-node-agent-pool-boot")
	require.NoError(t, target.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "gardener-node-agent-pool-boot", Namespace: "kube-system", Labels: map[string]string{"worker.gardener.cloud/pool": "boot"}},
		Data:       map[string][]byte{"osc.yaml": []byte("spec:\n  files:\n  - path: /etc/boot\n    content: {secretRef: {name: gardener-node-agent-ref-boot, dataKey: a}}\n")},
	}))
	for _, s := range []string{"shoot-access-kube-scheduler", "gardener-node-agent-ref-boot"} {
		require.NoError(t, client.IgnoreAlreadyExists(target.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: s, Namespace: "kube-system"}})))
	}

	agent := clientAs(t, "gardener.cloud:node-agent:machine:machine-boot", "gardener.cloud:node-agents")
	allowed := func(err error) { t.Helper(); assert.False(t, apierrors.IsForbidden(err), "want allowed, got %v", err) }
	// noOpinion: forbidden because nobody allows it (RBAC grants this agent nothing), not
	// because the webhook denied it (its denials carry reasons; it gives none here).
	noOpinion := func(err error) {
		t.Helper()
		require.True(t, apierrors.IsForbidden(err), "want forbidden, got %v", err)
		for _, denial := range []string{"no node for", "can only access", "does not belong"} {
			assert.NotContains(t, err.Error(), denial)
		}
	}

	noOpinion(agent.Get(ctx, client.ObjectKey{Name: "shoot-access-kube-scheduler", Namespace: "kube-system"}, &corev1.Secret{}))
	noOpinion(agent.Get(ctx, client.ObjectKey{Name: "gardener-node-agent-pool-boot", Namespace: "kube-system"}, &corev1.Secret{}))
	noOpinion(agent.Get(ctx, client.ObjectKey{Name: "gardener-node-agent-ref-boot", Namespace: "kube-system"}, &corev1.Secret{}))
	noOpinion(agent.Get(ctx, client.ObjectKey{Name: "node-boot"}, &corev1.Node{}))
	noOpinion(agent.Get(ctx, client.ObjectKey{Name: "gardener-node-agent-node-boot", Namespace: "kube-system"}, &coordinationv1.Lease{}))
	noOpinion(agent.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "gardener-node-agent-node-boot", Namespace: "kube-system"}}))
	noOpinion(agent.List(ctx, &corev1.PodList{}, client.MatchingFields{"spec.nodeName": "node-boot"}))
	// What needs no Node is decided as for any agent: it finds its Node among all of them.
	allowed(agent.List(ctx, &corev1.NodeList{}))

	// The kubelet registers the Node, machine-controller-manager labels the Machine.
	require.NoError(t, target.Client.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-boot", Labels: map[string]string{
		"kubernetes.io/hostname": "node-boot", "worker.gardener.cloud/gardener-node-agent-secret-name": "gardener-node-agent-pool-boot",
	}}}))
	m.SetLabels(map[string]string{"node": "node-boot"})
	require.NoError(t, source.Client.Update(ctx, m))
	allowed(agent.Get(ctx, client.ObjectKey{Name: "node-boot"}, &corev1.Node{}))
	allowed(agent.Get(ctx, client.ObjectKey{Name: "shoot-access-kube-scheduler", Namespace: "kube-system"}, &corev1.Secret{}))
	allowed(agent.Get(ctx, client.ObjectKey{Name: "gardener-node-agent-ref-boot", Namespace: "kube-system"}, &corev1.Secret{}))
	allowed(agent.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "gardener-node-agent-node-boot", Namespace: "kube-system"}}))
}

// In gardenadm's mode (no machine namespace: a Machine's name is its Node's) the authorizer
// lists kube-system's OSC secrets to know a node agent's, as the webhook server's
// ServiceAccount with exactly config/'s RBAC.
func TestNodeAgentAuthorizerGardenadm(t *testing.T) {
	ctx := context.Background()
	manifests, err := testenv.WebhookManifests("../../../config")
	require.NoError(t, err)
	asServer, err := target.ManifestClient(ctx, manifests[nodeagentauthorizer.Name])
	require.NoError(t, err)
	authorizer, err := nodeagentauthorizer.New(asServer, asServer, nil, clock, nodeagentauthorizer.Config{MachineCacheTTL: time.Minute, MachineCacheSize: 10})
	require.NoError(t, err)

	require.NoError(t, target.Client.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gardenadm-node", Labels: map[string]string{
		"kubernetes.io/hostname": "gardenadm-node", "worker.gardener.cloud/gardener-node-agent-secret-name": "gardener-node-agent-pool-g",
	}}}))
	require.NoError(t, target.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "gardener-node-agent-pool-g", Namespace: "kube-system", Labels: map[string]string{"worker.gardener.cloud/pool": "g"}},
		Data:       map[string][]byte{"osc.yaml": []byte("apiVersion: extensions.gardener.cloud/v1alpha1\nkind: OperatingSystemConfig\nspec: {}\n")},
	}))
	read := func(secret string) webhook.Decision {
		decision, reason, err := authorizer.Authorize(ctx, authorizationv1.SubjectAccessReviewSpec{
			User: "gardener.cloud:node-agent:machine:gardenadm-node", Groups: []string{"gardener.cloud:node-agents"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "secrets", Namespace: "kube-system", Name: secret},
		})
		require.NoError(t, err, reason)
		return decision
	}
	assert.Equal(t, webhook.Allow, read("gardener-node-agent-pool-g"), "its Node's OSC secret")
	assert.Equal(t, webhook.Deny, read("gardener-node-agent-pool-other"), "another pool's")
}
