package webhooks_test

import (
	"context"
	"testing"

	rmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	"github.com/gardener-knative/gardener-knative/pkg/webhook/nodeagentauthorizer"
)

// The shoot's Machines live in its control-plane namespace of the seed: the source cluster.
const machineNamespace = "shoot--dev--local"

func init() {
	register(nodeagentauthorizer.Webhook, func(c *rmv1alpha1.ResourceManagerConfiguration) {
		c.Webhooks.NodeAgentAuthorizer.Enabled = true
		c.Webhooks.NodeAgentAuthorizer.MachineNamespace = ptr.To(machineNamespace)
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

func TestNodeAgentAuthorizer(t *testing.T) {
	ctx := context.Background()
	// Source: the Machine of node-a, with its worker pool's node-agent secret.
	require.NoError(t, client.IgnoreAlreadyExists(source.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: machineNamespace}})))
	m := &unstructured.Unstructured{}
	m.SetAPIVersion("machine.sapcloud.io/v1alpha1")
	m.SetKind("Machine")
	m.SetNamespace(machineNamespace)
	m.SetName("machine-a")
	m.SetLabels(map[string]string{"node": "node-a"})
	require.NoError(t, unstructured.SetNestedField(m.Object, "gardener-node-agent-pool-a", "spec", "nodeTemplate", "metadata", "labels", "worker.gardener.cloud/gardener-node-agent-secret-name"))
	require.NoError(t, source.Client.Create(ctx, m))
	// Target: the shoot's Nodes, Secrets and a Lease.
	for _, n := range []string{"node-a", "node-b"} {
		require.NoError(t, target.Client.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}))
	}
	for _, s := range []string{"gardener-valitail", "gardener-node-agent-pool-a", "gardener-node-agent-pool-b"} {
		require.NoError(t, target.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: s, Namespace: "kube-system"}}))
	}

	agent := clientAs(t, "gardener.cloud:node-agent:machine:machine-a", "gardener.cloud:node-agents")
	allowed := func(err error) { t.Helper(); assert.False(t, apierrors.IsForbidden(err), "want allowed, got %v", err) }
	forbidden := func(err error) { t.Helper(); assert.True(t, apierrors.IsForbidden(err), "want forbidden, got %v", err) }

	// Nodes: list all, read and update its own, nothing of others.
	allowed(agent.List(ctx, &corev1.NodeList{}))
	node := &corev1.Node{}
	allowed(agent.Get(ctx, client.ObjectKey{Name: "node-a"}, node))
	node.Labels = map[string]string{"checked": "true"}
	allowed(agent.Update(ctx, node))
	forbidden(agent.Get(ctx, client.ObjectKey{Name: "node-b"}, &corev1.Node{}))
	forbidden(agent.Delete(ctx, node))

	// Leases: its own in kube-system.
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "gardener-node-agent-node-a", Namespace: "kube-system"}}
	allowed(agent.Create(ctx, lease))
	allowed(agent.Get(ctx, client.ObjectKeyFromObject(lease), lease))
	allowed(agent.Update(ctx, lease))
	forbidden(agent.Get(ctx, client.ObjectKey{Name: "gardener-node-agent-node-b", Namespace: "kube-system"}, &coordinationv1.Lease{}))

	// Secrets: valitail and its pool's secret in kube-system.
	allowed(agent.Get(ctx, client.ObjectKey{Name: "gardener-valitail", Namespace: "kube-system"}, &corev1.Secret{}))
	allowed(agent.Get(ctx, client.ObjectKey{Name: "gardener-node-agent-pool-a", Namespace: "kube-system"}, &corev1.Secret{}))
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

	// A node agent whose Machine does not exist gets nothing node-scoped.
	stranger := clientAs(t, "gardener.cloud:node-agent:machine:machine-unknown", "gardener.cloud:node-agents")
	forbidden(stranger.Get(ctx, client.ObjectKey{Name: "node-a"}, &corev1.Node{}))

	// Everybody else: no opinion, so RBAC alone decides (and grants this user nothing).
	other := clientAs(t, "gardener.cloud:node-agent:machine:machine-a-impostor")
	forbidden(other.Get(ctx, client.ObjectKey{Name: "node-a"}, &corev1.Node{}))
}
