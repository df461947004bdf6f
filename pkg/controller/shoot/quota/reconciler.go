package quota

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	securityv1alpha1 "github.com/gardener/gardener/pkg/apis/security/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// Name is the reconciler's name within the shoot function; its sweep has the same name.
const Name = "quota"

// RBAC is what the reconciler needs: read a Shoot, its binding and their Quotas (GETs for
// events, LISTs for the sweep), annotate the Shoot and delete it.
var RBAC = []rbacv1.PolicyRule{
	{APIGroups: []string{kinds.Shoot.Group}, Resources: []string{kinds.Shoot.Resource}, Verbs: []string{"get", "list", "patch", "delete"}},
	{APIGroups: []string{kinds.SecretBinding.Group}, Resources: []string{kinds.SecretBinding.Resource, kinds.Quota.Resource}, Verbs: []string{"get", "list"}},
	{APIGroups: []string{kinds.CredentialsBinding.Group}, Resources: []string{kinds.CredentialsBinding.Resource}, Verbs: []string{"get", "list"}},
}

// Reconciler maintains one Shoot's expiration and deletes it when it has expired.
type Reconciler struct {
	Writer function.Writer
	Clock  clock.PassiveClock
	Log    *slog.Logger
}

var _ function.Handler = &Reconciler{}

// New builds the reconciler.
func New(deps function.Deps) (function.Handler, error) {
	return &Reconciler{Writer: deps.Source.Writer, Clock: deps.Clock, Log: deps.Log}, nil
}

// Reconcile reads the Shoot, its binding (the SecretBinding, else the CredentialsBinding: they
// are mutually exclusive) and the binding's Quotas, and applies Decide. A binding or Quota that
// does not exist is an error, as in Gardener: the lifetime cannot be known without it.
func (r *Reconciler) Reconcile(ctx context.Context, req function.Request) error {
	shoot := &gardencorev1beta1.Shoot{}
	if err := req.Reader.Get(ctx, req.Key, shoot); err != nil {
		return err
	}
	quotas, err := r.quotas(ctx, req.Reader, shoot)
	if err != nil {
		return err
	}
	now := r.Clock.Now()
	decision, err := Decide(now, shoot, ShortestLifetime(quotas))
	if err != nil {
		return function.Terminal(err) // the annotation must change; retrying cannot cure it
	}
	log := r.Log.With("shoot", req.Key)
	switch decision.Action {
	case Keep:
		return nil
	case RemoveExpiration:
		log.Info("removing expiration timestamp annotation")
		_, err := r.Writer.Patch(ctx, shoot, func() { delete(shoot.Annotations, ExpirationAnnotation) })
		return err
	}
	if _, err := r.Writer.Patch(ctx, shoot, func() { metav1.SetMetaDataAnnotation(&shoot.ObjectMeta, ExpirationAnnotation, decision.Expiration) }); err != nil {
		return err
	}
	if decision.Action == SetExpiration {
		log.Info("set expiration timestamp annotation", "expirationTime", decision.Expiration)
		return nil
	}
	log.Info("shoot cluster lifetime expired, deleting shoot", "expirationTime", decision.Expiration)
	if _, err := r.Writer.Patch(ctx, shoot, func() {
		metav1.SetMetaDataAnnotation(&shoot.ObjectMeta, v1beta1constants.ConfirmationDeletion, "true")
		metav1.SetMetaDataAnnotation(&shoot.ObjectMeta, v1beta1constants.GardenerTimestamp, now.UTC().Format(time.RFC3339Nano))
	}); err != nil {
		return client.IgnoreNotFound(err)
	}
	return client.IgnoreNotFound(r.Writer.Delete(ctx, shoot))
}

// quotas reads the Quotas the Shoot's binding references.
func (r *Reconciler) quotas(ctx context.Context, reader client.Reader, shoot *gardencorev1beta1.Shoot) ([]gardencorev1beta1.Quota, error) {
	var refs []corev1.ObjectReference
	switch {
	case shoot.Spec.SecretBindingName != nil:
		binding := &gardencorev1beta1.SecretBinding{}
		if err := reader.Get(ctx, client.ObjectKey{Namespace: shoot.Namespace, Name: *shoot.Spec.SecretBindingName}, binding); err != nil {
			return nil, fmt.Errorf("reading the shoot's SecretBinding: %w", err)
		}
		refs = binding.Quotas
	case shoot.Spec.CredentialsBindingName != nil:
		binding := &securityv1alpha1.CredentialsBinding{}
		if err := reader.Get(ctx, client.ObjectKey{Namespace: shoot.Namespace, Name: *shoot.Spec.CredentialsBindingName}, binding); err != nil {
			return nil, fmt.Errorf("reading the shoot's CredentialsBinding: %w", err)
		}
		refs = binding.Quotas
	}
	quotas := make([]gardencorev1beta1.Quota, 0, len(refs))
	for _, ref := range refs {
		q := gardencorev1beta1.Quota{}
		if err := reader.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, &q); err != nil {
			return nil, fmt.Errorf("reading Quota %s/%s: %w", ref.Namespace, ref.Name, err)
		}
		quotas = append(quotas, q)
	}
	return quotas, nil
}

// Predicate is Gardener's: created Shoots only. Later changes (a binding or Quota changed, the
// annotation edited, the lifetime running out) are the sweep's, as they are Gardener's hourly
// re-queue's.
func Predicate(ev function.Event) bool { return ev.Created }

// Watches feeds the reconciler with Shoot events.
var Watches = []function.Watch{{Kind: kinds.Shoot, Reconciler: Name, Predicate: Predicate}}

// Sweeps: hourly (Gardener's sync period of 60m), every Shoot against one LIST each of the
// SecretBindings, CredentialsBindings and Quotas, read in full (the Quotas' references and
// lifetimes are in their specs).
var Sweeps = []function.Sweep{{
	Name: Name, Schedule: "17 * * * *", Reconciler: Name,
	Primary: function.List{Kind: kinds.Shoot},
	Related: []function.List{{Kind: kinds.SecretBinding}, {Kind: kinds.CredentialsBinding}, {Kind: kinds.Quota}},
}}
