package samples

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The samples of the reference protection functions (cloudprofile, namespacedcloudprofile,
// controllerdeployment, exposureclass, quota) each show three protected objects: one in use,
// one being deleted while still in use (it stays, and a ResourceReferenced Event says why),
// and one being deleted that nothing uses (the first sweep releases it).

// protectionSample is one object of a protection sample.
type protectionSample struct {
	obj client.Object
	// withStatus writes the status once after the create: gardener-apiserver serves every
	// object with one, a stand-in CRD only once it is written, and the functions' status
	// patches address fields inside it.
	withStatus bool
	// deleted deletes it after the create; it carries the protection's finalizer already, as
	// if the function had protected it before the deletion.
	deleted bool
	// reconciled, for an object deleted that a function also writes a status of, says from a
	// fresh read that the function has: the deletion waits for it (at most reconcileWait).
	// Gardener writes no status of an object on its way out, so without the wait whether the
	// object keeps one would depend on whether a function saw it before its deletion.
	reconciled func(client.Object) bool
}

// reconcileWait bounds the wait for reconciled: where no function runs yet, the deletion goes
// ahead after it.
const reconcileWait = 15 * time.Second

// createProtectionSamples creates the samples in order, then deletes those to be deleted; those
// that exist already are left as they are. Deleting only once all exist means that a protected
// object is in use before its deletion is seen, whether or not the functions already run: the
// one in use stays, deterministically.
func createProtectionSamples(ctx context.Context, c client.Client, samples ...protectionSample) error {
	var created []protectionSample
	for _, s := range samples {
		if err := c.Create(ctx, s.obj); err != nil {
			if err := client.IgnoreAlreadyExists(err); err != nil {
				return err
			}
			continue
		}
		if s.withStatus {
			if err := setStatus(ctx, c, s.obj); err != nil {
				return err
			}
		}
		if s.deleted {
			created = append(created, s)
		}
	}
	deadline := time.Now().Add(reconcileWait)
	for _, s := range created {
		if s.reconciled != nil {
			awaitReconciled(ctx, c, s, deadline)
		}
		if err := client.IgnoreNotFound(c.Delete(ctx, s.obj)); err != nil {
			return err
		}
	}
	return nil
}

// awaitReconciled polls the sample until s.reconciled says so, the deadline passes or ctx ends.
func awaitReconciled(ctx context.Context, c client.Client, s protectionSample, deadline time.Time) {
	current := s.obj.DeepCopyObject().(client.Object)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if err := c.Get(ctx, client.ObjectKeyFromObject(s.obj), current); err == nil && s.reconciled(current) {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}
