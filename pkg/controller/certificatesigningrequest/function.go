package certificatesigningrequest

import (
	"errors"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// RBAC is what approving takes: read requests, ask SubjectAccessReviews, update the approval
// subresource, and approve for the kube-apiserver client signer only (the API server checks
// "approve" on the request's signer before it accepts an Approved condition).
var RBAC = []rbacv1.PolicyRule{
	{APIGroups: []string{certificatesv1.GroupName}, Resources: []string{"certificatesigningrequests"}, Verbs: []string{"get", "list"}},
	{APIGroups: []string{certificatesv1.GroupName}, Resources: []string{"certificatesigningrequests/approval"}, Verbs: []string{"update"}},
	{APIGroups: []string{certificatesv1.GroupName}, Resources: []string{"signers"}, ResourceNames: []string{certificatesv1.KubeAPIServerClientSignerName}, Verbs: []string{"approve"}},
	{APIGroups: []string{authorizationv1.GroupName}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
}

// ResyncSweep is the sweep that looks at every request again.
const ResyncSweep = "resync"

// Function is GCM's CertificateSigningRequest controller ("csr-autoapprove").
var Function = &function.Function{
	Name:          "certificatesigningrequest",
	Parts:         []function.Part{function.Runtime},
	WorksOnGarden: true,
	RBAC:          RBAC,
	Reconcilers: []function.Reconciler{{
		Name: "main",
		For:  kinds.CertificateSigningRequest,
		New: func(deps function.Deps) (function.Handler, error) {
			subresources, ok := deps.Source.Reader.(client.SubResourceClientConstructor)
			if !ok {
				return nil, errors.New("the source reader cannot address the approval subresource")
			}
			counter := NewNotApprovedCounter()
			if deps.Registry != nil {
				if err := deps.Registry.Register(counter); err != nil {
					return nil, fmt.Errorf("registering the not-approved counter: %w", err)
				}
			}
			return &Reconciler{Writer: deps.Source.Writer, Approver: NewApprover(subresources), Log: deps.Log, NotApproved: counter}, nil
		},
	}},
	Watches: []function.Watch{{Kind: kinds.CertificateSigningRequest, Reconciler: "main", Predicate: Predicate}},
	// A request whose event was lost, or whose requester was granted the right later, is
	// decided at the next sweep; a gardenlet retries its bootstrap well within the hour a
	// pending request lives.
	Sweeps: []function.Sweep{{
		Name: ResyncSweep, Schedule: "2-59/5 * * * *", Reconciler: "main",
		Primary: function.List{Kind: kinds.CertificateSigningRequest},
	}},
}

// Predicate lets through creations and updates of requests that are still undecided: a
// deletion, or a request approved, denied or issued already, has nothing left to decide.
func Predicate(ev function.Event) bool {
	if ev.Deleted {
		return false
	}
	if ev.Object == nil {
		return true
	}
	csr, err := function.Decode[certificatesv1.CertificateSigningRequest](ev)
	if err != nil {
		return true // the reconcile reads it properly
	}
	return !InFinalState(csr)
}
