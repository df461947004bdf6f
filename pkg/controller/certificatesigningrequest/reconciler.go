package certificatesigningrequest

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/function"
)

// Gardener's approval condition.
const (
	ApprovedReason  = "AutoApproved"
	ApprovedMessage = "Auto approving gardenlet client certificate after SubjectAccessReview."
)

// Approver writes a CertificateSigningRequest's approval subresource. The runtime's Writer
// patches objects and their status; approval is a subresource of its own that Kubernetes
// serves for update, and only there may the Approved condition be set. An update of it carries
// the resourceVersion read, so it is as optimistic as the Writer's patches, and the API server
// takes nothing but the conditions from it, so it cannot drop fields.
type Approver interface {
	UpdateApproval(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) error
}

// NewApprover updates the approval subresource through c.
func NewApprover(c client.SubResourceClientConstructor) Approver { return approver{c: c} }

type approver struct {
	c client.SubResourceClientConstructor
}

func (a approver) UpdateApproval(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) error {
	return a.c.SubResource("approval").Update(ctx, csr)
}

// Reconciler approves the CertificateSigningRequests of gardenlets.
type Reconciler struct {
	// Writer creates the SubjectAccessReviews.
	Writer   function.Writer
	Approver Approver
	Log      *slog.Logger
	// NotApproved counts the requests left alone, by reason.
	NotApproved *prometheus.CounterVec
}

var _ function.Handler = &Reconciler{}

// NewNotApprovedCounter is the counter of requests left alone, by Reason.
func NewNotApprovedCounter() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gardener_knative_csr_not_approved_total",
		Help: "CertificateSigningRequests the function looked at and left alone (neither approved nor denied), by reason. A request pending for a while is counted at every look.",
	}, []string{"reason"})
}

// Reconcile approves the request if it is a gardenlet's and its requester may create
// certificatesigningrequests/seedclient; it leaves every other request alone, logging and
// counting why.
func (r *Reconciler) Reconcile(ctx context.Context, req function.Request) error {
	csr := &certificatesv1.CertificateSigningRequest{}
	if err := req.Reader.Get(ctx, req.Key, csr); err != nil {
		return client.IgnoreNotFound(err)
	}
	if InFinalState(csr) {
		return nil
	}
	log := r.Log.With("csr", csr.Name, "username", csr.Spec.Username, "groups", csr.Spec.Groups)
	if reason, message := CheckSeedClient(csr); reason != "" {
		r.leaveAlone(log, reason, "the request does not match a gardenlet's client certificate request: "+message)
		return nil
	}

	allowed, why, err := r.mayCreateSeedClient(ctx, csr)
	if err != nil {
		return fmt.Errorf("checking whether %q may create certificatesigningrequests/%s: %w", csr.Spec.Username, SeedClientSubresource, err)
	}
	if !allowed {
		r.leaveAlone(log, NotAuthorized, fmt.Sprintf("recognized the request, but the requester may not create certificatesigningrequests/%s: %s", SeedClientSubresource, why))
		return nil
	}

	log.Info("auto-approving certificate signing request")
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type:    certificatesv1.CertificateApproved,
		Status:  corev1.ConditionTrue,
		Reason:  ApprovedReason,
		Message: ApprovedMessage,
	})
	if err := r.Approver.UpdateApproval(ctx, csr); err != nil {
		return fmt.Errorf("approving %s: %w", csr.Name, err)
	}
	return nil
}

// mayCreateSeedClient asks the API server whether the requester (as the request records it:
// user, UID, groups, extra) may create certificatesigningrequests/seedclient.
func (r *Reconciler) mayCreateSeedClient(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) (bool, string, error) {
	extra := make(map[string]authorizationv1.ExtraValue, len(csr.Spec.Extra))
	for k, v := range csr.Spec.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   csr.Spec.Username,
		UID:    csr.Spec.UID,
		Groups: csr.Spec.Groups,
		Extra:  extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Group:       certificatesv1.GroupName,
			Resource:    "certificatesigningrequests",
			Subresource: SeedClientSubresource,
			Verb:        "create",
		},
	}}
	if err := r.Writer.Create(ctx, sar); err != nil {
		return false, "", err
	}
	return sar.Status.Allowed, sar.Status.Reason, nil
}

func (r *Reconciler) leaveAlone(log *slog.Logger, reason Reason, message string) {
	log.Info("not approving certificate signing request", "reason", string(reason), "detail", message)
	r.NotApproved.WithLabelValues(string(reason)).Inc()
}
