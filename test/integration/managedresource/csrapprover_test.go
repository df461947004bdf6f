package managedresource_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/certificatesigningrequest"
	"github.com/gardener-knative/gardener-knative/pkg/controller/csrapprover"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

const (
	nodeAgentPrefix = "gardener.cloud:node-agent:machine:"
	bootstrapUser   = "system:bootstrap:abcdef"
)

// as is a client of the shoot acting as user (in the given groups): the API server records
// that identity in the CSRs it creates. system:masters lets it create them without RBAC.
func as(t testing.TB, shoot *testenv.Env, user string, groups ...string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(shoot.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append(groups, "system:masters", "system:authenticated")}
	c, err := client.New(cfg, client.Options{Scheme: shoot.Client.Scheme()})
	require.NoError(t, err)
	return c
}

// csr creates a CertificateSigningRequest for signer in the shoot as user, with a real request.
func csr(t testing.TB, shoot *testenv.Env, user, signer string, request certificatesigningrequest.RequestTemplate) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	data, err := certificatesigningrequest.NewRequestPEM(request)
	require.NoError(t, err)
	usages := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	if signer == certificatesv1.KubeletServingSignerName {
		usages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
	}
	c := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "csr-" + rand.String(8)},
		Spec:       certificatesv1.CertificateSigningRequestSpec{SignerName: signer, Request: data, Usages: usages},
	}
	require.NoError(t, as(t, shoot, user, "system:nodes").Create(context.Background(), c))
	t.Cleanup(func() { _ = shoot.Client.Delete(context.Background(), c) })
	return c
}

// kubeletNode registers a Node in the shoot with a host name and an internal IP, as kubelet does.
func kubeletNode(t testing.TB, shoot *testenv.Env, name, ip string) *corev1.Node {
	t.Helper()
	ctx := context.Background()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	require.NoError(t, shoot.Client.Create(ctx, n))
	t.Cleanup(func() { _ = shoot.Client.Delete(context.Background(), n) })
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: name}, {Type: corev1.NodeInternalIP, Address: ip}}
	require.NoError(t, shoot.Client.Status().Update(ctx, n))
	return n
}

// kubeletServing is the serving certificate request of node's kubelet, with extra DNS names.
func kubeletServing(t testing.TB, shoot *testenv.Env, node *corev1.Node, extraDNS ...string) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	user := "system:node:" + node.Name
	return csr(t, shoot, user, certificatesv1.KubeletServingSignerName, certificatesigningrequest.RequestTemplate{
		CommonName: user, Organizations: []string{"system:nodes"},
		DNSNames: append([]string{node.Name}, extraDNS...), IPAddresses: []net.IP{net.ParseIP(node.Status.Addresses[1].Address)},
	})
}

// machine creates a Machine in the seed's namespace, labelled with its Node when it has one.
func machine(t testing.TB, namespace, name, node string) {
	t.Helper()
	m := &unstructured.Unstructured{}
	m.SetGroupVersionKind(kinds.Machine.GroupVersionKind)
	m.SetNamespace(namespace)
	m.SetName(name)
	if node != "" {
		m.SetLabels(map[string]string{csrapprover.MachineNodeLabel: node})
	}
	require.NoError(t, seed.Client.Create(context.Background(), m))
	t.Cleanup(func() { _ = seed.Client.Delete(context.Background(), m) })
}

// decision reads the CSR's Approved or Denied condition back ("" when it has none).
func decision(t testing.TB, shoot *testenv.Env, c *certificatesv1.CertificateSigningRequest) (certificatesv1.RequestConditionType, string, string) {
	t.Helper()
	require.NoError(t, shoot.Client.Get(context.Background(), client.ObjectKeyFromObject(c), c))
	for _, cond := range c.Status.Conditions {
		if cond.Type == certificatesv1.CertificateApproved || cond.Type == certificatesv1.CertificateDenied {
			return cond.Type, cond.Reason, cond.Message
		}
	}
	return "", "", ""
}

func assertDecision(t testing.TB, shoot *testenv.Env, c *certificatesv1.CertificateSigningRequest, want certificatesv1.RequestConditionType, message string) {
	t.Helper()
	typ, reason, msg := decision(t, shoot, c)
	assert.Equal(t, want, typ)
	assert.Equal(t, map[certificatesv1.RequestConditionType]string{certificatesv1.CertificateApproved: "RequestApproved", certificatesv1.CertificateDenied: "RequestDenied"}[want], reason)
	assert.Equal(t, message, msg)
}

const (
	kubeletApproved = "Approving kubelet server certificate CSR (all checks passed)"
	agentApproved   = "Approving gardener-node-agent certificate CSR (all checks passed)"
)

func csrApproverConfig(machineNamespace *string) *csrapprover.Config {
	return &csrapprover.Config{Enabled: true, MachineNamespace: machineNamespace}
}

// Single target: a kubelet's serving certificate is approved when its Node (in the shoot) and its
// one Machine (in the configured namespace of the seed) match, denied when it asks for a name the
// Node does not have; a node agent's bootstrap certificate is approved for a Machine that has not
// joined; another client's request is left alone, and a decided one costs nothing.
func TestCSRApproverSingleTarget(t *testing.T) {
	ns := seed.Namespace(t)
	h := functiontest.New(t, seed, csrapprover.Function, functiontest.AsFunction(), functiontest.WithTarget(shootA), functiontest.WithConfig(csrApproverConfig(&ns)))
	name := "csr-node-" + rand.String(6)
	node := kubeletNode(t, shootA, name, "10.1.0.1")
	machine(t, ns, "machine-"+name, name)

	approved := kubeletServing(t, shootA, node)
	h.SendTarget("add", approved, "")
	assertDecision(t, shootA, approved, certificatesv1.CertificateApproved, kubeletApproved)

	forged := kubeletServing(t, shootA, node, "evil.example")
	h.SendTarget("add", forged, "")
	assertDecision(t, shootA, forged, certificatesv1.CertificateDenied,
		"Denying kubelet server certificate CSR (DNS names in CSR do not match addresses of type 'Hostname' or 'InternalDNS' or 'ExternalDNS' in node object)")

	machine(t, ns, "joining", "")
	bootstrap := csr(t, shootA, bootstrapUser, certificatesv1.KubeAPIServerClientSignerName, certificatesigningrequest.RequestTemplate{CommonName: nodeAgentPrefix + "joining"})
	h.SendTarget("add", bootstrap, "")
	assertDecision(t, shootA, bootstrap, certificatesv1.CertificateApproved, agentApproved)

	other := csr(t, shootA, "alice", certificatesv1.KubeAPIServerClientSignerName, certificatesigningrequest.RequestTemplate{CommonName: "alice"})
	h.TargetCounter.Reset()
	h.SendTarget("add", other, "")
	typ, _, _ := decision(t, shootA, other)
	assert.Empty(t, typ, "another client's request is left alone")
	assert.Equal(t, 1, h.TargetCounter.Total(""), "one read of it")

	// The event of the approval itself shows it decided: no request.
	h.TargetCounter.Reset()
	h.SendTarget("update", approved, "")
	assert.Zero(t, h.TargetCounter.Total(""))
}

// A request whose event was lost is decided by the next sweep; a sweep with nothing pending costs
// one LIST of the shoot's requests and nothing in the seed.
func TestCSRApproverSweep(t *testing.T) {
	ns := seed.Namespace(t)
	h := functiontest.New(t, seed, csrapprover.Function, functiontest.AsFunction(), functiontest.WithTarget(shootA), functiontest.WithConfig(csrApproverConfig(&ns)))
	name := "csr-node-" + rand.String(6)
	node := kubeletNode(t, shootA, name, "10.1.0.2")
	machine(t, ns, "machine-"+name, name)

	lost := kubeletServing(t, shootA, node)
	h.Sweep("pending")
	assertDecision(t, shootA, lost, certificatesv1.CertificateApproved, kubeletApproved)

	h.TargetCounter.Reset()
	source := h.Measure(func() { h.Sweep("pending") })
	assert.Empty(t, source, "nothing pending: nothing read in the seed")
	assert.Equal(t, 1, h.TargetCounter.Total(""), "one LIST of the shoot's requests")
	assert.Equal(t, 1, h.TargetCounter.Total("list"))
}

// Per seed, a tenant's Machines are in its namespace of the seed: the same node agent is approved
// in tenant B, whose namespace holds its Machine, and denied in tenant A, whose does not; a sweep
// decides each tenant's pending requests in its own shoot.
func TestCSRApproverPerSeed(t *testing.T) {
	h := functiontest.New(t, seed, csrapprover.Function, functiontest.AsFunction(), functiontest.WithTenants(), functiontest.WithConfig(csrApproverConfig(nil)))
	m := "machine-" + rand.String(6)
	machine(t, string(tenantB), m, "")
	request := certificatesigningrequest.RequestTemplate{CommonName: nodeAgentPrefix + m}

	inB := csr(t, shootB, bootstrapUser, certificatesv1.KubeAPIServerClientSignerName, request)
	h.SendTarget("add", inB, tenantB)
	assertDecision(t, shootB, inB, certificatesv1.CertificateApproved, agentApproved)

	inA := csr(t, shootA, bootstrapUser, certificatesv1.KubeAPIServerClientSignerName, request)
	h.SendTarget("add", inA, tenantA)
	assertDecision(t, shootA, inA, certificatesv1.CertificateDenied, fmt.Sprintf("Denying gardener-node-agent certificate CSR (machine %q does not exist)", m))

	name := "csr-node-" + rand.String(6)
	node := kubeletNode(t, shootA, name, "10.1.0.3")
	machine(t, string(tenantA), "machine-"+name, name)
	lost := kubeletServing(t, shootA, node)
	h.Sweep("pending")
	assertDecision(t, shootA, lost, certificatesv1.CertificateApproved, kubeletApproved)
}

// BenchmarkCSRApproval measures how long a kubelet waits for its serving certificate's approval:
// from creating the CSR, through its event, to reading it approved, over 200 CSRs.
func BenchmarkCSRApproval(b *testing.B) {
	const n = 200
	ctx := context.Background()
	ns := seed.Namespace(b)
	h := functiontest.New(b, seed, csrapprover.Function, functiontest.WithTarget(shootA), functiontest.WithConfig(csrApproverConfig(&ns)))
	name := "csr-bench-" + rand.String(6)
	node := kubeletNode(b, shootA, name, "10.1.0.4")
	machine(b, ns, "machine-"+name, name)
	for b.Loop() {
		latencies := make([]time.Duration, 0, n)
		h.TargetCounter.Reset()
		h.ResetRequests()
		for range n {
			start := time.Now()
			c := kubeletServing(b, shootA, node)
			h.SendTarget("add", c, "")
			require.NoError(b, shootA.Client.Get(ctx, client.ObjectKeyFromObject(c), c))
			require.Len(b, c.Status.Conditions, 1)
			require.Equal(b, certificatesv1.CertificateApproved, c.Status.Conditions[0].Type)
			latencies = append(latencies, time.Since(start))
		}
		slices.Sort(latencies)
		b.ReportMetric(float64(latencies[n/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(latencies[n*99/100].Microseconds())/1000, "p99-ms")
		b.ReportMetric(float64(h.TargetCounter.Total(""))/n, "shoot-requests/csr")
		b.ReportMetric(float64(h.Requests(""))/n, "seed-requests/csr")
	}
}
