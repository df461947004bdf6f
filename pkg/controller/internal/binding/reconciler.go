package binding

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
	"github.com/gardener-knative/gardener-knative/pkg/kube"
)

// peerPageSize is the page size of the LIST of all bindings a release reads.
const peerPageSize = 500

// Reconciler converges one binding: while it exists, its credentials and Quotas are protected
// and labelled and it holds its finalizer; once it is being deleted and no Shoot uses it, it
// releases them (where no other binding still needs them) and then itself.
type Reconciler struct {
	Kind   Kind
	Writer function.Writer
	// Live reads the API server where a sweep's snapshot cannot answer: referenced objects
	// that lack the reference label (the sweep lists only labelled ones).
	Live   client.Reader
	Events function.EventRecorder
	Log    *slog.Logger
}

var _ function.Handler = &Reconciler{}

// Reconcile reads the binding and protects or releases what it references.
func (r *Reconciler) Reconcile(ctx context.Context, req function.Request) error {
	obj := r.Kind.New()
	if err := req.Reader.Get(ctx, req.Key, obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	b := r.Kind.Decode(obj)
	if b.Deleting {
		return r.release(ctx, req, obj, b)
	}
	return r.protect(ctx, req, obj, b)
}

// protect adds the binding's own finalizer first, so that it cannot disappear while its
// references are being protected, then protects its credentials and labels its Quotas.
func (r *Reconciler) protect(ctx context.Context, req function.Request, obj client.Object, b Binding) error {
	if changed, err := r.Writer.Patch(ctx, obj, func() { controllerutil.AddFinalizer(obj, Finalizer) }); err != nil {
		return fmt.Errorf("adding finalizer: %w", err)
	} else if changed {
		r.Log.Info("added finalizer", "binding", b.Key)
	}

	ck, ok := r.Kind.credentialsKind(b.Credentials.GroupVersionKind)
	if !ok {
		return function.Terminal(fmt.Errorf("credentials %s %s: a %s cannot reference this kind", b.Credentials.GroupVersionKind, b.Credentials.Key, r.Kind.Binding.Kind))
	}
	credentials, err := r.read(ctx, req, b.Credentials)
	if err != nil {
		return fmt.Errorf("reading credentials %s %s: %w", b.Credentials.Kind, b.Credentials.Key, err)
	}
	if changed, err := r.Writer.Patch(ctx, credentials, func() { r.Kind.Protect(credentials, ck, b) }); err != nil {
		return fmt.Errorf("protecting credentials %s %s: %w", b.Credentials.Kind, b.Credentials.Key, err)
	} else if changed {
		r.Log.Info("protected credentials", "binding", b.Key, "kind", b.Credentials.Kind, "credentials", b.Credentials.Key)
	}

	for _, q := range b.Quotas {
		quota, err := r.read(ctx, req, Reference{GroupVersionKind: kinds.Quota.GroupVersionKind, Key: q})
		if err != nil {
			return fmt.Errorf("reading quota %s: %w", q, err)
		}
		if changed, err := r.Writer.Patch(ctx, quota, func() { metav1.SetMetaDataLabel(&quota.ObjectMeta, r.Kind.ReferenceLabel, "true") }); err != nil {
			return fmt.Errorf("labelling quota %s: %w", q, err)
		} else if changed {
			r.Log.Info("labelled quota", "binding", b.Key, "quota", q)
		}
	}
	return nil
}

// release lets a binding that is being deleted go once no Shoot uses it: its credentials lose
// protection and labels unless another binding of the kind that is not being deleted references
// them, its Quotas lose the label unless another binding references them, and last it loses
// its own finalizer. While Shoots use it, a Warning event names them and nothing changes; the
// deletion of those Shoots brings the binding back (see ShootPredicate), and so does the sweep.
func (r *Reconciler) release(ctx context.Context, req function.Request, obj client.Object, b Binding) error {
	if !controllerutil.ContainsFinalizer(obj, Finalizer) {
		return nil
	}
	shoots := &gardencorev1beta1.ShootList{}
	if err := req.Reader.List(ctx, shoots, client.InNamespace(b.Key.Namespace)); err != nil {
		return fmt.Errorf("listing shoots: %w", err)
	}
	if using := r.Kind.ShootsUsing(b, shoots.Items); len(using) > 0 {
		r.Log.Info("deletion waits for shoots that use the binding", "binding", b.Key, "shoots", using)
		r.Events.Eventf(ctx, obj, corev1.EventTypeWarning, v1beta1constants.EventResourceReferenced,
			"Cannot delete %s, because the following Shoots are still referencing it: %+v", r.Kind.Binding.Kind, using)
		return nil
	}

	peers, err := kube.ListAll(ctx, req.Reader, r.Kind.NewList(), peerPageSize)
	if err != nil {
		return fmt.Errorf("listing %s: %w", r.Kind.Binding.Resource, err)
	}
	all := make([]Binding, 0, len(peers))
	for _, p := range peers {
		all = append(all, r.Kind.Decode(p))
	}

	released := false
	if _, supported := r.Kind.credentialsKind(b.Credentials.GroupVersionKind); supported && MayReleaseCredentials(b, all) {
		if err := r.patchIfExists(ctx, req, b.Credentials, r.Kind.Release); err != nil {
			return fmt.Errorf("releasing credentials %s %s: %w", b.Credentials.Kind, b.Credentials.Key, err)
		}
		released = true
	}
	quotas := QuotasToRelease(b, all)
	for _, q := range quotas {
		unlabel := func(m client.Object) {
			labels := m.GetLabels()
			delete(labels, r.Kind.ReferenceLabel)
			m.SetLabels(labels)
		}
		if err := r.patchIfExists(ctx, req, Reference{GroupVersionKind: kinds.Quota.GroupVersionKind, Key: q}, unlabel); err != nil {
			return fmt.Errorf("unlabelling quota %s: %w", q, err)
		}
	}

	if released || len(quotas) > 0 {
		if err := r.protectAgain(ctx, b, quotas); err != nil {
			return err
		}
	}

	if _, err := r.Writer.Patch(ctx, obj, func() { controllerutil.RemoveFinalizer(obj, Finalizer) }); err != nil {
		return fmt.Errorf("removing finalizer: %w", err)
	}
	r.Log.Info("no shoot uses the binding any more: released it", "binding", b.Key)
	return nil
}

// protectAgain lists the bindings once more, live, after a release: a binding created meanwhile
// that references what was released (its own reconcile found it still protected, and changed
// nothing) is protected again, as its own reconcile would.
func (r *Reconciler) protectAgain(ctx context.Context, b Binding, quotas []function.Key) error {
	peers, err := kube.ListAll(ctx, r.Live, r.Kind.NewList(), peerPageSize)
	if err != nil {
		return fmt.Errorf("listing %s after a release: %w", r.Kind.Binding.Resource, err)
	}
	live := function.Request{Reader: r.Live, Trigger: function.ByEvent}
	for _, p := range peers {
		peer := r.Kind.Decode(p)
		if peer.Key == b.Key || peer.Deleting {
			continue
		}
		if peer.Credentials == b.Credentials || slices.ContainsFunc(quotas, func(q function.Key) bool { return slices.Contains(peer.Quotas, q) }) {
			r.Log.Info("a binding appeared that references what was released: protected again", "binding", peer.Key, "released by", b.Key)
			if err := r.protect(ctx, live, p, peer); err != nil {
				return err
			}
		}
	}
	return nil
}

// patchIfExists applies mutate to the metadata of the referenced object; one that is gone has
// nothing left to release.
func (r *Reconciler) patchIfExists(ctx context.Context, req function.Request, ref Reference, mutate func(client.Object)) error {
	obj, err := r.read(ctx, req, ref)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	changed, err := r.Writer.Patch(ctx, obj, func() { mutate(obj) })
	if changed && err == nil {
		r.Log.Info("released", "kind", ref.Kind, "object", ref.Key)
	}
	return err
}

// read reads the metadata of a referenced object. A sweep's snapshot holds only the objects
// that carry the kind's reference label, so one it does not hold is read live: it is either
// gone or needs a write anyway.
func (r *Reconciler) read(ctx context.Context, req function.Request, ref Reference) (*metav1.PartialObjectMetadata, error) {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(ref.GroupVersionKind)
	err := req.Reader.Get(ctx, ref.Key, obj)
	if apierrors.IsNotFound(err) && req.Trigger == function.BySweep {
		err = r.Live.Get(ctx, ref.Key, obj)
	}
	// Copies out of a list may come without their kind; the Writer's patch needs it.
	obj.SetGroupVersionKind(ref.GroupVersionKind)
	return obj, err
}
