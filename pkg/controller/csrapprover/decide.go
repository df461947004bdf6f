package csrapprover

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Identities and labels Gardener's rules name (Kubernetes' and machine-controller-manager's
// constants, which this module does not depend on).
const (
	// nodeUserPrefix is the prefix of a kubelet's user name (and of its serving certificate's
	// common name).
	nodeUserPrefix = "system:node:"
	// nodesGroup is the organization of a kubelet's certificates.
	nodesGroup = "system:nodes"
	// bootstrapUserPrefix is the prefix of the users of bootstrap tokens.
	bootstrapUserPrefix = "system:bootstrap:"
	// MachineNodeLabel is the label machine-controller-manager puts on a Machine once its Node
	// joined: the Node's name.
	MachineNodeLabel = "node"
)

// Condition reasons and message prefixes of Gardener's approvals and denials.
const (
	ReasonApproved = "RequestApproved"
	ReasonDenied   = "RequestDenied"
	// ReasonAllChecksPassed is the reason of every approval.
	ReasonAllChecksPassed = "all checks passed"
	kubeletServing        = "kubelet server certificate CSR"
	nodeAgent             = "gardener-node-agent certificate CSR"
)

// Outcome is what Gardener does with a CertificateSigningRequest.
type Outcome string

const (
	// Ignore leaves it alone: not the approver's (another signer, another client), or decided.
	Ignore Outcome = "ignore"
	// Approve adds the Approved condition.
	Approve Outcome = "approve"
	// Deny adds the Denied condition.
	Deny Outcome = "deny"
)

// Decision is Gardener's answer for one CertificateSigningRequest.
type Decision struct {
	Outcome Outcome
	// Reason says why, as Gardener logs it: "all checks passed" or the rule the request violates.
	Reason string
	// Condition is the condition an approval or denial adds, with Gardener's type, reason and
	// message; zero for Ignore.
	Condition certificatesv1.CertificateSigningRequestCondition
}

// NeedKind is what a decision has to read.
type NeedKind string

const (
	// NeedNode is the Node Need.Name of the target.
	NeedNode NeedKind = "node"
	// NeedMachine is the Machine Need.Name in Need.Namespace of the source.
	NeedMachine NeedKind = "machine"
	// NeedMachinesOfNode are the Machines in Need.Namespace of the source labelled
	// node=<Need.Name>.
	NeedMachinesOfNode NeedKind = "machinesOfNode"
)

// Need names the object(s) a decision must read before it can go on: exactly what Gardener reads
// at that point, so that a request decided by its own fields costs no read.
type Need struct {
	Kind      NeedKind
	Namespace string
	Name      string
}

// Input is what a decision looks at: the request, and what it read so far.
type Input struct {
	CSR *certificatesv1.CertificateSigningRequest
	// Request is CSR's spec.request, parsed (ParseRequest).
	Request *x509.CertificateRequest
	// MachineNamespace holds the shoot's Machines in the source cluster; nil means none are
	// checked (Gardener's default: a self-hosted shoot has no Machines in a seed).
	MachineNamespace *string
	// Node is the Node a NeedNode asked for once read (NodeRead); nil when it does not exist.
	Node     *corev1.Node
	NodeRead bool
	// Machines are what a NeedMachine (none or the one) or NeedMachinesOfNode asked for, once
	// read (MachinesRead).
	Machines     []metav1.PartialObjectMetadata
	MachinesRead bool
}

// Final says whether Gardener considers csr decided: it has an Approved or Denied condition
// (whatever its status) or a certificate. The API server never takes either back.
func Final(csr *certificatesv1.CertificateSigningRequest) bool {
	if len(csr.Status.Certificate) != 0 {
		return true
	}
	for _, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateApproved || c.Type == certificatesv1.CertificateDenied {
			return true
		}
	}
	return false
}

// ParseRequest decodes a CSR's PEM request as Gardener does, and verifies its signature as the
// kube-apiserver does when the CSR is created: a request whose signature does not verify (a
// forgery no API server would have stored) is never decided on.
func ParseRequest(data []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("PEM block type must be CERTIFICATE REQUEST")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, err
	}
	if err := req.CheckSignature(); err != nil {
		return nil, fmt.Errorf("the request's signature does not verify: %w", err)
	}
	return req, nil
}

// Decide is Gardener's CSR approver (v1.150) on in: its decision, or else what it must read
// next (then the Decision is zero). Each rule is checked in Gardener's order, so that the first
// one violated gives the reason, and a read happens only where Gardener's would.
func Decide(in Input) (Decision, *Need) {
	if Final(in.CSR) {
		return Decision{Outcome: Ignore, Reason: "in final state"}, nil
	}
	switch in.CSR.Spec.SignerName {
	case certificatesv1.KubeletServingSignerName:
		return decideKubeletServing(in)
	case certificatesv1.KubeAPIServerClientSignerName:
		switch cn := in.Request.Subject.CommonName; {
		case strings.HasPrefix(cn, v1beta1constants.NodeAgentUserNamePrefix):
			return decideNodeAgent(in)
		case strings.HasPrefix(cn, v1beta1constants.GardenadmUserNamePrefix):
			return decideGardenadm(in), nil
		default:
			return Decision{Outcome: Ignore, Reason: fmt.Sprintf("commonName %q is not prefixed with %q or %q", cn, v1beta1constants.NodeAgentUserNamePrefix, v1beta1constants.GardenadmUserNamePrefix)}, nil
		}
	}
	return Decision{Outcome: Ignore, Reason: fmt.Sprintf("unknown signerName %q", in.CSR.Spec.SignerName)}, nil
}

func decideKubeletServing(in Input) (Decision, *Need) {
	csr, req := in.CSR, in.Request
	deny := func(reason string) (Decision, *Need) { return decided(Deny, kubeletServing, reason), nil }
	if !strings.HasPrefix(csr.Spec.Username, nodeUserPrefix) {
		return deny(fmt.Sprintf("username %q is not prefixed with %q", csr.Spec.Username, nodeUserPrefix))
	}
	if len(req.DNSNames)+len(req.IPAddresses) == 0 {
		return deny("no DNS names or IP addresses in the SANs found")
	}
	if req.Subject.CommonName != csr.Spec.Username {
		return deny("common name in CSR does not match username")
	}
	if len(req.Subject.Organization) != 1 || req.Subject.Organization[0] != nodesGroup {
		return deny("organization in CSR does not match nodes group")
	}
	if !in.NodeRead {
		return Decision{}, &Need{Kind: NeedNode, Name: strings.TrimPrefix(req.Subject.CommonName, nodeUserPrefix)}
	}
	if in.Node == nil {
		// Gardener names the Node it could not read by the empty object it read into: "".
		return deny(fmt.Sprintf("could not find node object with name %q", ""))
	}
	if ns := in.MachineNamespace; ns != nil {
		if !in.MachinesRead {
			return Decision{}, &Need{Kind: NeedMachinesOfNode, Namespace: *ns, Name: in.Node.Name}
		}
		if n := len(in.Machines); n != 1 {
			return deny(fmt.Sprintf("Expected exactly one machine in namespace %q for node %q but found %d", *ns, in.Node.Name, n))
		}
	}

	var (
		hostNames []string
		ips       []netip.Addr
	)
	for _, address := range in.Node.Status.Addresses {
		switch address.Type {
		case corev1.NodeHostName, corev1.NodeInternalDNS, corev1.NodeExternalDNS:
			hostNames = append(hostNames, address.Address)
		case corev1.NodeInternalIP, corev1.NodeExternalIP:
			ip, err := netip.ParseAddr(address.Address)
			if err != nil {
				return deny(fmt.Sprintf("IP address %q in node.Status.Addresses is invalid: %v", address.Address, err))
			}
			ips = append(ips, ip)
		}
	}
	if !sets.New(hostNames...).Equal(sets.New(req.DNSNames...)) {
		return deny("DNS names in CSR do not match addresses of type 'Hostname' or 'InternalDNS' or 'ExternalDNS' in node object")
	}
	var requested []netip.Addr
	for _, ip := range req.IPAddresses {
		// As Gardener compares them: an address the request encodes in neither 4 nor 16 bytes is
		// left out (x509 parses only those).
		if addr, ok := netip.AddrFromSlice(ip); ok {
			requested = append(requested, addr)
		}
	}
	if !sets.New(ips...).Equal(sets.New(requested...)) {
		return deny("IP addresses in CSR do not match addresses of type 'InternalIP' or 'ExternalIP' in node object")
	}
	return decided(Approve, kubeletServing, ReasonAllChecksPassed), nil
}

// decideNodeAgent decides on a node agent's client certificate: its bootstrap (with a bootstrap
// token, for a Machine whose Node has not joined) and its renewal (as itself). Gardener v1.150
// knows no third case: any other requester, the gardener-node-agent ServiceAccount included, is
// denied.
func decideNodeAgent(in Input) (Decision, *Need) {
	csr, cn := in.CSR, in.Request.Subject.CommonName
	deny := func(reason string) (Decision, *Need) { return decided(Deny, nodeAgent, reason), nil }
	machineName := strings.TrimPrefix(cn, v1beta1constants.NodeAgentUserNamePrefix)
	nodeName := machineName
	if ns := in.MachineNamespace; ns != nil {
		if !in.MachinesRead {
			return Decision{}, &Need{Kind: NeedMachine, Namespace: *ns, Name: machineName}
		}
		if len(in.Machines) == 0 {
			return deny(fmt.Sprintf("machine %q does not exist", machineName))
		}
		nodeName = in.Machines[0].Labels[MachineNodeLabel]
	}

	switch {
	case strings.HasPrefix(csr.Spec.Username, bootstrapUserPrefix):
		if nodeName != "" {
			if !in.NodeRead {
				return Decision{}, &Need{Kind: NeedNode, Name: nodeName}
			}
			if in.Node != nil {
				return deny(fmt.Sprintf("Cannot use bootstrap token since gardener-node-agent for machine %q is already bootstrapped", machineName))
			}
		}
	case strings.HasPrefix(csr.Spec.Username, v1beta1constants.NodeAgentUserNamePrefix):
		if csr.Spec.Username != cn {
			return deny(fmt.Sprintf("username %q and commonName %q do not match", csr.Spec.Username, cn))
		}
	default:
		return deny(fmt.Sprintf("username %q is not allowed to create CSRs for a gardener-node-agent", csr.Spec.Username))
	}
	return decided(Approve, nodeAgent, ReasonAllChecksPassed), nil
}

// decideGardenadm decides on the client certificate `gardenadm connect` bootstraps a self-hosted
// shoot's gardenlet with. Gardener words its condition as a node agent's.
func decideGardenadm(in Input) Decision {
	if !strings.HasPrefix(in.CSR.Spec.Username, bootstrapUserPrefix) {
		return decided(Deny, nodeAgent, fmt.Sprintf("username %q is not allowed to create CSRs for a gardenadm client", in.CSR.Spec.Username))
	}
	if org := in.Request.Subject.Organization; len(org) != 1 || org[0] != v1beta1constants.ShootsGroup {
		return decided(Deny, nodeAgent, "organization in CSR does not match nodes group")
	}
	return decided(Approve, nodeAgent, ReasonAllChecksPassed)
}

func decided(outcome Outcome, what, reason string) Decision {
	c := certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: ReasonApproved,
		Message: fmt.Sprintf("Approving %s (%s)", what, reason),
	}
	if outcome == Deny {
		c.Type, c.Reason, c.Message = certificatesv1.CertificateDenied, ReasonDenied, fmt.Sprintf("Denying %s (%s)", what, reason)
	}
	return Decision{Outcome: outcome, Reason: reason, Condition: c}
}

// Facts reads what a decision needs. NotFound is no error: a Node that does not exist is nil,
// Machines that do not exist are none.
type Facts interface {
	Node(ctx context.Context, name string) (*corev1.Node, error)
	Machine(ctx context.Context, namespace, name string) (*metav1.PartialObjectMetadata, error)
	MachinesOfNode(ctx context.Context, namespace, node string) ([]metav1.PartialObjectMetadata, error)
}

// Resolve decides on in, reading what each step needs from facts: at most a Machine and a Node.
func Resolve(ctx context.Context, in Input, facts Facts) (Decision, error) {
	for {
		d, need := Decide(in)
		if need == nil {
			return d, nil
		}
		switch need.Kind {
		case NeedNode:
			node, err := facts.Node(ctx, need.Name)
			if err != nil {
				return Decision{}, fmt.Errorf("error getting node object with name %q: %w", need.Name, err)
			}
			in.Node, in.NodeRead = node, true
		case NeedMachine:
			m, err := facts.Machine(ctx, need.Namespace, need.Name)
			if err != nil {
				return Decision{}, fmt.Errorf("error getting machine object with name %q: %w", need.Name, err)
			}
			in.Machines, in.MachinesRead = nil, true
			if m != nil {
				in.Machines = []metav1.PartialObjectMetadata{*m}
			}
		case NeedMachinesOfNode:
			ms, err := facts.MachinesOfNode(ctx, need.Namespace, need.Name)
			if err != nil {
				return Decision{}, fmt.Errorf("failed to list machine objects: %w", err)
			}
			in.Machines, in.MachinesRead = ms, true
		}
	}
}
