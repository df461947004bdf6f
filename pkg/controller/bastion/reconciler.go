// Package bastion deletes Bastions that are expired or rotten, or whose Shoot is gone, being
// deleted or moved to another seed (GCM's Bastion controller). Deleting a Bastion is what
// triggers gardenlet's clean-up on the seed.
package bastion

import (
	"context"
	"log/slog"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	operationsv1alpha1 "github.com/gardener/gardener/pkg/apis/operations/v1alpha1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/function"
)

// Reason says why a Bastion is deleted; empty means it stays.
type Reason string

// The reasons for deleting a Bastion, in the order they are checked.
const (
	ShootGone          Reason = "ShootGone"
	ShootDeleting      Reason = "ShootDeleting"
	ShootMigrated      Reason = "ShootMigrated"
	Expired            Reason = "Expired"
	MaxLifetimeReached Reason = "MaxLifetimeReached"
)

// DeletionReason decides whether bastion must go. shoot is nil when the referenced Shoot does
// not exist. A Bastion expires once now is after status.expirationTimestamp, and rots once it
// is older than maxLifetime; at the exact instant it still lives.
func DeletionReason(now time.Time, bastion *operationsv1alpha1.Bastion, shoot *gardencorev1beta1.Shoot, maxLifetime time.Duration) Reason {
	switch {
	case shoot == nil:
		return ShootGone
	case shoot.DeletionTimestamp != nil:
		return ShootDeleting
	// The admission plugin never lets a Bastion exist without spec.seedName, so inequality
	// (nil included) means the Shoot has moved to another seed.
	case !apiequality.Semantic.DeepEqual(shoot.Spec.SeedName, bastion.Spec.SeedName):
		return ShootMigrated
	case bastion.Status.ExpirationTimestamp != nil && now.After(bastion.Status.ExpirationTimestamp.Time):
		return Expired
	case now.Sub(bastion.CreationTimestamp.Time) > maxLifetime:
		return MaxLifetimeReached
	}
	return ""
}

// Reconciler deletes the Bastions that DeletionReason condemns.
type Reconciler struct {
	Writer      function.Writer
	Clock       clock.PassiveClock
	MaxLifetime time.Duration
	Log         *slog.Logger
}

var _ function.Handler = &Reconciler{}

// Reconcile reads the Bastion and its Shoot and deletes the Bastion if it must go. The delete
// is conditional on the Bastion's UID and resourceVersion: a heartbeat that extended its
// expiration after the read turns into a conflict, and the runtime decides again.
func (r *Reconciler) Reconcile(ctx context.Context, req function.Request) error {
	reader, key := req.Reader, req.Key
	bastion := &operationsv1alpha1.Bastion{}
	if err := reader.Get(ctx, key, bastion); err != nil {
		return client.IgnoreNotFound(err)
	}
	if bastion.DeletionTimestamp != nil {
		return nil // gardenlet is cleaning it up already
	}

	shoot := &gardencorev1beta1.Shoot{}
	if err := reader.Get(ctx, client.ObjectKey{Namespace: bastion.Namespace, Name: bastion.Spec.ShootRef.Name}, shoot); err != nil {
		if !apierrors.IsNotFound(err) {
			return err
		}
		shoot = nil
	}

	reason := DeletionReason(r.Clock.Now(), bastion, shoot, r.MaxLifetime)
	if reason == "" {
		return nil
	}
	r.Log.Info("deleting bastion", "bastion", key, "reason", reason, "shoot", bastion.Spec.ShootRef.Name,
		"creationTimestamp", bastion.CreationTimestamp.Time, "expirationTimestamp", bastion.Status.ExpirationTimestamp)
	return client.IgnoreNotFound(r.Writer.Delete(ctx, bastion))
}
