package csrapprover_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"net"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	. "github.com/gardener-knative/gardener-knative/pkg/controller/csrapprover"
)

var key = func() *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	return k
}()

// req is what a certificate request asks for.
type req struct {
	cn   string
	orgs []string
	dns  []string
	ips  []string
}

// pemOf is a real PKCS#10 request for r, signed.
func pemOf(t testing.TB, r req) []byte {
	t.Helper()
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: r.cn, Organization: r.orgs}, DNSNames: r.dns}
	for _, ip := range r.ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// world is what the clusters hold, and what a decision read of it.
type world struct {
	nodes    []*corev1.Node
	machines []metav1.PartialObjectMetadata
	reads    []string
}

func (w *world) Node(_ context.Context, name string) (*corev1.Node, error) {
	w.reads = append(w.reads, "node "+name)
	for _, n := range w.nodes {
		if n.Name == name {
			return n, nil
		}
	}
	return nil, nil
}

func (w *world) Machine(_ context.Context, namespace, name string) (*metav1.PartialObjectMetadata, error) {
	w.reads = append(w.reads, "machine "+namespace+"/"+name)
	for _, m := range w.machines {
		if m.Namespace == namespace && m.Name == name {
			return &m, nil
		}
	}
	return nil, nil
}

func (w *world) MachinesOfNode(_ context.Context, namespace, node string) ([]metav1.PartialObjectMetadata, error) {
	w.reads = append(w.reads, "machines of "+namespace+"/"+node)
	var out []metav1.PartialObjectMetadata
	for _, m := range w.machines {
		if m.Namespace == namespace && m.Labels[MachineNodeLabel] == node {
			out = append(out, m)
		}
	}
	return out, nil
}

const (
	shootNS   = "shoot--p--a"
	nodeName  = "node-1"
	nodeUser  = "system:node:" + nodeName
	agentCN   = "gardener.cloud:node-agent:machine:machine-1"
	bootstrap = "system:bootstrap:abcdef"
)

func machine(namespace, name, node string) metav1.PartialObjectMetadata {
	m := metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if node != "" {
		m.Labels = map[string]string{MachineNodeLabel: node}
	}
	return m
}

func node(name string, addresses ...corev1.NodeAddress) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Addresses: addresses}}
}

func addr(t corev1.NodeAddressType, a string) corev1.NodeAddress {
	return corev1.NodeAddress{Type: t, Address: a}
}

// A kubelet's Node as it registers: every address type Gardener compares, IPv6 written in full.
var kubeletNode = node(nodeName,
	addr(corev1.NodeHostName, "node-1.example"), addr(corev1.NodeInternalDNS, "node-1.internal"), addr(corev1.NodeExternalDNS, "node-1.public"),
	addr(corev1.NodeInternalIP, "10.0.0.1"), addr(corev1.NodeExternalIP, "2001:db8:0:0:0:0:0:1"),
)

// kubeletRequest is the serving certificate request its kubelet makes.
var kubeletRequest = req{cn: nodeUser, orgs: []string{"system:nodes"}, dns: []string{"node-1.example", "node-1.internal", "node-1.public"}, ips: []string{"10.0.0.1", "2001:db8::1"}}

type decideCase struct {
	name     string
	signer   string
	username string
	req      req
	// status of the request (for the final states)
	status certificatesv1.CertificateSigningRequestStatus
	// machineNamespace is nil for Gardener's default (no Machines checked).
	machineNamespace *string
	world            world
	want             Outcome
	// message is the condition's message; reason for Ignore.
	message string
	reads   []string
}

func (c decideCase) run(t *testing.T) {
	t.Helper()
	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "csr"},
		Spec:       certificatesv1.CertificateSigningRequestSpec{SignerName: c.signer, Username: c.username, Request: pemOf(t, c.req)},
		Status:     c.status,
	}
	parsed, err := ParseRequest(csr.Spec.Request)
	require.NoError(t, err)
	w := c.world
	d, err := Resolve(context.Background(), Input{CSR: csr, Request: parsed, MachineNamespace: c.machineNamespace}, &w)
	require.NoError(t, err)
	assert.Equal(t, c.want, d.Outcome, d.Reason)
	switch c.want {
	case Ignore:
		assert.Equal(t, c.message, d.Reason)
		assert.Zero(t, d.Condition)
	case Approve:
		assert.Equal(t, certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "RequestApproved", Message: c.message}, d.Condition)
	case Deny:
		assert.Equal(t, certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue, Reason: "RequestDenied", Message: c.message}, d.Condition)
	}
	switch {
	case c.reads == nil:
	case len(c.reads) == 0:
		assert.Empty(t, w.reads, "decided on the request alone")
	default:
		assert.Equal(t, c.reads, w.reads, "what the decision read")
	}
}

// The kubelet-serving rules of Gardener v1.150, each violated on its own, in Gardener's order:
// the first one violated is the reason.
func TestKubeletServing(t *testing.T) {
	ns := ptr.To(shootNS)
	full := world{nodes: []*corev1.Node{kubeletNode}, machines: []metav1.PartialObjectMetadata{machine(shootNS, "machine-1", nodeName)}}
	with := func(mutate func(*decideCase)) decideCase {
		c := decideCase{signer: certificatesv1.KubeletServingSignerName, username: nodeUser, req: kubeletRequest, machineNamespace: ns, world: full}
		r := c.req
		r.orgs, r.dns, r.ips = slices.Clone(r.orgs), slices.Clone(r.dns), slices.Clone(r.ips)
		c.req = r
		mutate(&c)
		return c
	}
	deny := func(reason string) string { return "Denying kubelet server certificate CSR (" + reason + ")" }
	cases := []decideCase{
		with(func(c *decideCase) {
			c.name, c.want, c.message = "all checks pass", Approve, "Approving kubelet server certificate CSR (all checks passed)"
			c.reads = []string{"node node-1", "machines of shoot--p--a/node-1"}
		}),
		with(func(c *decideCase) {
			c.name, c.machineNamespace, c.world.machines = "no machine namespace: Machines are not checked", nil, nil
			c.want, c.message, c.reads = Approve, "Approving kubelet server certificate CSR (all checks passed)", []string{"node node-1"}
		}),
		with(func(c *decideCase) {
			c.name, c.req.dns = "duplicate SANs compare as sets", append(c.req.dns, "node-1.example")
			c.want, c.message = Approve, "Approving kubelet server certificate CSR (all checks passed)"
		}),
		with(func(c *decideCase) {
			c.name, c.username = "username not a node's", "admin"
			c.want, c.message, c.reads = Deny, deny(`username "admin" is not prefixed with "system:node:"`), []string{}
		}),
		with(func(c *decideCase) {
			c.name, c.req.dns, c.req.ips = "no SANs", nil, nil
			c.want, c.message = Deny, deny("no DNS names or IP addresses in the SANs found")
		}),
		with(func(c *decideCase) {
			c.name, c.req.cn = "a certificate for another node", "system:node:node-2"
			c.want, c.message = Deny, deny("common name in CSR does not match username")
		}),
		with(func(c *decideCase) {
			c.name, c.req.orgs = "no organization", nil
			c.want, c.message = Deny, deny("organization in CSR does not match nodes group")
		}),
		with(func(c *decideCase) {
			c.name, c.req.orgs = "another organization", []string{"system:masters"}
			c.want, c.message = Deny, deny("organization in CSR does not match nodes group")
		}),
		with(func(c *decideCase) {
			c.name, c.req.orgs = "an organization besides the nodes group", []string{"system:nodes", "system:masters"}
			c.want, c.message = Deny, deny("organization in CSR does not match nodes group")
		}),
		with(func(c *decideCase) {
			c.name, c.world.nodes = "no Node", nil
			c.want, c.message, c.reads = Deny, deny(`could not find node object with name ""`), []string{"node node-1"}
		}),
		with(func(c *decideCase) {
			c.name, c.world.machines = "no Machine", nil
			c.want, c.message = Deny, deny(`Expected exactly one machine in namespace "shoot--p--a" for node "node-1" but found 0`)
		}),
		with(func(c *decideCase) {
			c.name, c.world.machines = "the Machine in another namespace", []metav1.PartialObjectMetadata{machine("shoot--p--b", "machine-1", nodeName)}
			c.want, c.message = Deny, deny(`Expected exactly one machine in namespace "shoot--p--a" for node "node-1" but found 0`)
		}),
		with(func(c *decideCase) {
			c.name = "two Machines"
			c.world.machines = append(slices.Clone(c.world.machines), machine(shootNS, "machine-2", nodeName))
			c.want, c.message = Deny, deny(`Expected exactly one machine in namespace "shoot--p--a" for node "node-1" but found 2`)
		}),
		with(func(c *decideCase) {
			c.name = "an invalid IP address on the Node"
			c.world.nodes = []*corev1.Node{node(nodeName, addr(corev1.NodeInternalIP, "10.0.0.1"), addr(corev1.NodeExternalIP, "not-an-ip"))}
			c.want, c.message = Deny, deny(`IP address "not-an-ip" in node.Status.Addresses is invalid: ParseAddr("not-an-ip"): unable to parse IP`)
		}),
		with(func(c *decideCase) {
			c.name, c.req.dns = "a DNS name the Node does not have", append(c.req.dns, "evil.example")
			c.want, c.message = Deny, deny("DNS names in CSR do not match addresses of type 'Hostname' or 'InternalDNS' or 'ExternalDNS' in node object")
		}),
		with(func(c *decideCase) {
			c.name, c.req.dns = "a DNS name of the Node missing", c.req.dns[:2]
			c.want, c.message = Deny, deny("DNS names in CSR do not match addresses of type 'Hostname' or 'InternalDNS' or 'ExternalDNS' in node object")
		}),
		with(func(c *decideCase) {
			c.name, c.req.ips = "an IP address the Node does not have", append(c.req.ips, "10.9.9.9")
			c.want, c.message = Deny, deny("IP addresses in CSR do not match addresses of type 'InternalIP' or 'ExternalIP' in node object")
		}),
		with(func(c *decideCase) {
			c.name, c.req.ips = "an IP address of the Node missing", c.req.ips[:1]
			c.want, c.message = Deny, deny("IP addresses in CSR do not match addresses of type 'InternalIP' or 'ExternalIP' in node object")
		}),
		with(func(c *decideCase) {
			c.name = "approved already"
			c.status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue}}
			c.want, c.message, c.reads = Ignore, "in final state", []string{}
		}),
		with(func(c *decideCase) {
			c.name = "denied already (whatever the status)"
			c.status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateDenied, Status: corev1.ConditionFalse}}
			c.want, c.message = Ignore, "in final state"
		}),
		with(func(c *decideCase) {
			c.name, c.status.Certificate = "issued already", []byte("cert")
			c.want, c.message = Ignore, "in final state"
		}),
		with(func(c *decideCase) {
			c.name = "failed is not final"
			c.status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateFailed, Status: corev1.ConditionTrue}}
			c.want, c.message = Approve, "Approving kubelet server certificate CSR (all checks passed)"
		}),
		with(func(c *decideCase) {
			c.name, c.signer = "another signer", certificatesv1.KubeAPIServerClientKubeletSignerName
			c.want, c.message, c.reads = Ignore, `unknown signerName "kubernetes.io/kube-apiserver-client-kubelet"`, []string{}
		}),
	}
	for _, c := range cases {
		t.Run(c.name, c.run)
	}
}

// The node agent's rules (bootstrap, renewal; v1.150 knows no migration) and gardenadm's.
func TestKubeAPIServerClient(t *testing.T) {
	ns := ptr.To(shootNS)
	approve := "Approving gardener-node-agent certificate CSR (all checks passed)"
	deny := func(reason string) string { return "Denying gardener-node-agent certificate CSR (" + reason + ")" }
	agent := func(name, username string, machineNamespace *string, w world, want Outcome, message string, reads ...string) decideCase {
		return decideCase{name: name, signer: certificatesv1.KubeAPIServerClientSignerName, username: username, req: req{cn: agentCN},
			machineNamespace: machineNamespace, world: w, want: want, message: message, reads: reads}
	}
	unjoined := world{machines: []metav1.PartialObjectMetadata{machine(shootNS, "machine-1", "")}}
	labelled := world{machines: []metav1.PartialObjectMetadata{machine(shootNS, "machine-1", nodeName)}}
	joined := world{machines: labelled.machines, nodes: []*corev1.Node{node(nodeName)}}
	cases := []decideCase{
		agent("bootstrap of a Machine without Node", bootstrap, ns, unjoined, Approve, approve, "machine shoot--p--a/machine-1"),
		agent("bootstrap of a Machine whose Node has not joined", bootstrap, ns, labelled, Approve, approve, "machine shoot--p--a/machine-1", "node node-1"),
		agent("bootstrap of a Machine whose Node joined", bootstrap, ns, joined, Deny,
			deny(`Cannot use bootstrap token since gardener-node-agent for machine "machine-1" is already bootstrapped`), "machine shoot--p--a/machine-1", "node node-1"),
		agent("bootstrap without Machine", bootstrap, ns, world{}, Deny, deny(`machine "machine-1" does not exist`), "machine shoot--p--a/machine-1"),
		agent("bootstrap of another namespace's Machine", bootstrap, ns, world{machines: []metav1.PartialObjectMetadata{machine("shoot--p--b", "machine-1", "")}}, Deny,
			deny(`machine "machine-1" does not exist`)),
		agent("bootstrap without machine namespace, no Node named like the Machine", bootstrap, nil, world{}, Approve, approve, "node machine-1"),
		agent("bootstrap without machine namespace, a Node named like the Machine", bootstrap, nil, world{nodes: []*corev1.Node{node("machine-1")}}, Deny,
			deny(`Cannot use bootstrap token since gardener-node-agent for machine "machine-1" is already bootstrapped`)),
		agent("renewal", agentCN, ns, joined, Approve, approve, "machine shoot--p--a/machine-1"),
		agent("renewal without Machine", agentCN, ns, world{}, Deny, deny(`machine "machine-1" does not exist`)),
		agent("renewal for another machine", "gardener.cloud:node-agent:machine:machine-2", ns, joined, Deny,
			deny(`username "gardener.cloud:node-agent:machine:machine-2" and commonName "gardener.cloud:node-agent:machine:machine-1" do not match`)),
		agent("migration from the node agent's ServiceAccount", "system:serviceaccount:kube-system:gardener-node-agent", ns, joined, Deny,
			deny(`username "system:serviceaccount:kube-system:gardener-node-agent" is not allowed to create CSRs for a gardener-node-agent`)),
		agent("a kubelet asking for a node agent's certificate", nodeUser, ns, joined, Deny,
			deny(`username "system:node:node-1" is not allowed to create CSRs for a gardener-node-agent`)),
		{name: "another client", signer: certificatesv1.KubeAPIServerClientSignerName, username: "alice", req: req{cn: "alice"}, world: joined, want: Ignore,
			message: `commonName "alice" is not prefixed with "gardener.cloud:node-agent:machine:" or "gardener.cloud:gardenadm:shoot:"`, reads: []string{}},
		{name: "gardenadm", signer: certificatesv1.KubeAPIServerClientSignerName, username: bootstrap,
			req: req{cn: "gardener.cloud:gardenadm:shoot:garden:self", orgs: []string{"gardener.cloud:system:shoots"}}, want: Approve, message: approve, reads: []string{}},
		{name: "gardenadm not with a bootstrap token", signer: certificatesv1.KubeAPIServerClientSignerName, username: "admin",
			req: req{cn: "gardener.cloud:gardenadm:shoot:garden:self", orgs: []string{"gardener.cloud:system:shoots"}}, want: Deny,
			message: deny(`username "admin" is not allowed to create CSRs for a gardenadm client`)},
		{name: "gardenadm of another organization", signer: certificatesv1.KubeAPIServerClientSignerName, username: bootstrap,
			req: req{cn: "gardener.cloud:gardenadm:shoot:garden:self", orgs: []string{"system:masters"}}, want: Deny,
			message: deny("organization in CSR does not match nodes group")},
	}
	for _, c := range cases {
		t.Run(c.name, c.run)
	}
}

// A request that is not a PEM certificate request, or whose signature does not verify (its
// subject changed after signing), is never decided on.
func TestParseRequest(t *testing.T) {
	good := pemOf(t, kubeletRequest)
	parsed, err := ParseRequest(good)
	require.NoError(t, err)
	assert.Equal(t, nodeUser, parsed.Subject.CommonName)

	_, err = ParseRequest([]byte("not pem"))
	assert.EqualError(t, err, "PEM block type must be CERTIFICATE REQUEST")
	_, err = ParseRequest(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1}}))
	assert.EqualError(t, err, "PEM block type must be CERTIFICATE REQUEST")

	block, _ := pem.Decode(good)
	forged := bytes.Replace(block.Bytes, []byte(nodeUser), []byte("system:node:node-2"), 1) // another node's certificate
	require.NotEqual(t, block.Bytes, forged)
	_, err = ParseRequest(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: forged}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "signature")
}

// Decide asks for one read at a time, exactly the objects Gardener reads, before it decides.
func TestDecideNeeds(t *testing.T) {
	csr := &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{
		SignerName: certificatesv1.KubeletServingSignerName, Username: nodeUser, Request: pemOf(t, kubeletRequest),
	}}
	parsed, err := ParseRequest(csr.Spec.Request)
	require.NoError(t, err)
	in := Input{CSR: csr, Request: parsed, MachineNamespace: ptr.To(shootNS)}
	d, need := Decide(in)
	assert.Zero(t, d)
	assert.Equal(t, &Need{Kind: NeedNode, Name: nodeName}, need)
	in.Node, in.NodeRead = kubeletNode, true
	_, need = Decide(in)
	assert.Equal(t, &Need{Kind: NeedMachinesOfNode, Namespace: shootNS, Name: nodeName}, need)
	in.Machines, in.MachinesRead = []metav1.PartialObjectMetadata{machine(shootNS, "m", nodeName)}, true
	d, need = Decide(in)
	assert.Nil(t, need)
	assert.Equal(t, Approve, d.Outcome, fmt.Sprint(d))
}
