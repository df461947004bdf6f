// Package csrapprover is GRM's CertificateSigningRequest approver as a function: it approves or
// denies the target's requests for kubelet serving certificates (signer
// kubernetes.io/kubelet-serving, which kube-controller-manager does not approve) and for the
// client certificates of gardener-node-agent and gardenadm (signer
// kubernetes.io/kube-apiserver-client), with Gardener v1.150's rules (Decide), checking Nodes in
// the target and Machines in the source. A sweep every minute decides what a lost event left
// pending.
package csrapprover

import (
	"context"
	"fmt"
	"log/slog"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/clients"
)

// Config is the approver's part of the ResourceManagerConfiguration (controllers.csrApprover),
// overridden by the environment.
type Config struct {
	// Enabled is controllers.csrApprover.enabled.
	Enabled bool `envconfig:"CSR_APPROVER_ENABLED"`
	// MachineNamespace is controllers.csrApprover.machineNamespace: where the target's Machines
	// are in the source cluster in single-target (and seed) mode. Nil (Gardener's default) checks
	// no Machines. Per seed it is ignored: a tenant's Machines are in its own namespace.
	MachineNamespace *string `envconfig:"CSR_APPROVER_MACHINE_NAMESPACE"`
}

// FromResourceManager takes the settings from the file (Gardener's defaults applied).
func (c *Config) FromResourceManager(rm *componentconfig.ResourceManagerFile) {
	c.Enabled = rm.Controllers.CSRApprover.Enabled
	c.MachineNamespace = rm.Controllers.CSRApprover.MachineNamespace
}

// approvalSubresource is where alone a CSR's Approved or Denied condition may be written.
const approvalSubresource = "approval"

// Function is GRM's CertificateSigningRequest approver.
var Function = &function.Function{
	Name:       "csrapprover",
	Parts:      []function.Part{function.Seed},
	Config:     &Config{},
	Deployment: function.PerSeed,
	RBAC: []rbacv1.PolicyRule{
		// The shoots' Machines: read one by name (node agent), list a Node's (kubelet serving).
		{APIGroups: []string{kinds.Machine.Group}, Resources: []string{kinds.Machine.Resource}, Verbs: []string{"get", "list"}},
		// Per seed: the tenants (Discover, each tenant's Cluster).
		{APIGroups: []string{clients.ClusterGroup}, Resources: []string{clients.ClusterResource}, Verbs: []string{"get", "list"}},
	},
	// Each tenant's access Secrets, in enrolled tenants' namespaces only.
	TenantRBAC: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}},
	// Gardener runs it only in the resource managers of shoots with workers.
	Reconcilers: []function.Reconciler{{Name: "main", For: kinds.CertificateSigningRequest, Cluster: function.Target, New: newReconciler, AppliesTo: (*tenant.Settings).HasWorkers}},
	Watches:     []function.Watch{{Kind: kinds.CertificateSigningRequest, Cluster: function.Target, Reconciler: "main", Predicate: Predicate}},
	Sweeps: []function.Sweep{{
		// Catches requests whose events were lost: one LIST per tenant; only a pending request
		// of the approver's signers costs the reads of its decision.
		Name: "pending", Schedule: "* * * * *", Reconciler: "main",
		Off:     func(config any) bool { return !config.(*Config).Enabled },
		Primary: function.List{Kind: kinds.CertificateSigningRequest, Cluster: function.Target},
	}},
}

// Predicate passes what Gardener's predicates pass, creations and updates of requests for the
// kubelet-serving and kube-apiserver-client signers, less those the event shows decided already
// (Gardener's reconcile of them does nothing, and a decision is never taken back).
func Predicate(ev function.Event) bool {
	if ev.Deleted || ev.Object == nil {
		return false
	}
	csr, err := function.Decode[certificatesv1.CertificateSigningRequest](ev)
	if err != nil {
		return true // the reconcile reads it properly
	}
	switch csr.Spec.SignerName {
	case certificatesv1.KubeletServingSignerName, certificatesv1.KubeAPIServerClientSignerName:
		return !Final(csr)
	}
	return false
}

// Reconciler decides one CertificateSigningRequest of the target.
type Reconciler struct {
	Config         *Config
	Source, Target function.ClusterClient
	Log            *slog.Logger
}

func newReconciler(deps function.Deps) (function.Handler, error) {
	return &Reconciler{Config: deps.Config.(*Config), Source: deps.Source, Target: deps.Target, Log: deps.Log}, nil
}

// Reconcile decides an undecided request of the approver's and writes the decision to its
// approval subresource, conditional on the version read: a request changed meanwhile is decided
// again from live state.
func (r *Reconciler) Reconcile(ctx context.Context, req function.Request) error {
	if !r.Config.Enabled {
		return nil
	}
	csr := &certificatesv1.CertificateSigningRequest{}
	if err := req.Reader.Get(ctx, req.Key, csr); err != nil {
		return err
	}
	if Final(csr) {
		return nil
	}
	x509cr, err := ParseRequest(csr.Spec.Request)
	if err != nil {
		// spec.request is immutable: retrying cannot help.
		return function.Terminal(fmt.Errorf("unable to parse csr: %w", err))
	}
	d, err := Resolve(ctx, Input{CSR: csr, Request: x509cr, MachineNamespace: r.machineNamespace(ctx)}, &facts{target: req.Target, source: r.Source.Reader})
	if err != nil {
		return fmt.Errorf("failed when checking for approval conditions: %w", err)
	}
	log := r.Log.With("csr", csr.Name, "signer", csr.Spec.SignerName, "reason", d.Reason)
	if d.Outcome == Ignore {
		log.Debug("not the approver's CSR")
		return nil
	}
	if _, err := r.Target.Writer.PatchSubResource(ctx, csr, approvalSubresource, func() {
		csr.Status.Conditions = append(csr.Status.Conditions, d.Condition)
	}); err != nil {
		return fmt.Errorf("writing the %s of CSR %s: %w", d.Outcome, csr.Name, err)
	}
	log.Info("decided CSR", "outcome", string(d.Outcome))
	return nil
}

// machineNamespace is where the Machines of the reconcile's target are: per seed the tenant's
// namespace (a tenant is named after its shoot's control-plane namespace, which holds its
// Machines), else the configured one.
func (r *Reconciler) machineNamespace(ctx context.Context) *string {
	if t := tenant.From(ctx); t != "" {
		ns := string(t)
		return &ns
	}
	return r.Config.MachineNamespace
}

// facts reads Nodes from the target and Machines (their metadata: the decisions need their
// names and node label) from the source. A name no object can have (Gardener's cached reads find
// nothing under it) is not read.
type facts struct {
	target, source client.Reader
}

func (f *facts) Node(ctx context.Context, name string) (*corev1.Node, error) {
	if len(validation.IsDNS1123Subdomain(name)) > 0 {
		return nil, nil
	}
	node := &corev1.Node{}
	if err := f.target.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return node, nil
}

func (f *facts) Machine(ctx context.Context, namespace, name string) (*metav1.PartialObjectMetadata, error) {
	if len(validation.IsDNS1123Subdomain(name)) > 0 {
		return nil, nil
	}
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(kinds.Machine.GroupVersionKind)
	if err := f.source.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, m); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return m, nil
}

func (f *facts) MachinesOfNode(ctx context.Context, namespace, node string) ([]metav1.PartialObjectMetadata, error) {
	if len(validation.IsValidLabelValue(node)) > 0 {
		return nil, nil // no Machine can carry it as its label
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(kinds.Machine.GroupVersion().WithKind(kinds.Machine.Kind + "List"))
	if err := f.source.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{MachineNodeLabel: node}); err != nil {
		return nil, err
	}
	return list.Items, nil
}
