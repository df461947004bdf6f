package samples

import (
	"context"

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
}

// createProtectionSamples creates the samples in order, then deletes those to be deleted; those
// that exist already are left as they are. Deleting only once all exist means that a protected
// object is in use before its deletion is seen, whether or not the functions already run: the
// one in use stays, deterministically.
func createProtectionSamples(ctx context.Context, c client.Client, samples ...protectionSample) error {
	var created []client.Object
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
			created = append(created, s.obj)
		}
	}
	for _, obj := range created {
		if err := client.IgnoreNotFound(c.Delete(ctx, obj)); err != nil {
			return err
		}
	}
	return nil
}
