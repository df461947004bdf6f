package reference

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// Name is the reconciler's name within the shoot function.
const Name = "reference"

// Reconciler converges the reference protection of one namespace (its key names the Namespace).
type Reconciler struct {
	Writer function.Writer
	// Live lists the Shoots once more after a release (a sweep's snapshot may be older).
	Live client.Reader
	Log  *slog.Logger
}

var _ function.Handler = &Reconciler{}

// Reconcile reads the namespace's Shoots and the metadata of its Secrets, ConfigMaps and
// WorkloadIdentities (four LISTs), and applies Decide's plan: objects first, then the Shoots'
// own finalizers, so that a Shoot never loses its finalizer while what it referenced is still
// protected on its account. A namespace without Shoots is left alone, as Gardener, which only
// ever looks at a namespace when reconciling one of its Shoots, leaves it.
func (r *Reconciler) Reconcile(ctx context.Context, req function.Request) error {
	namespace := req.Key.Name
	shoots := &gardencorev1beta1.ShootList{}
	if err := req.Reader.List(ctx, shoots, client.InNamespace(namespace)); err != nil {
		return fmt.Errorf("listing shoots: %w", err)
	}
	if len(shoots.Items) == 0 {
		return nil
	}
	objects := map[Ref]*metav1.PartialObjectMetadata{}
	for _, k := range Referenced {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(k.GroupVersion().WithKind(k.Kind + "List"))
		if err := req.Reader.List(ctx, list, client.InNamespace(namespace)); err != nil {
			return fmt.Errorf("listing %s: %w", k.Resource, err)
		}
		for i := range list.Items {
			obj := &list.Items[i]
			// Copies out of a list may come without their kind; the Writer's patch needs it.
			obj.SetGroupVersionKind(k.GroupVersionKind)
			objects[Ref{Kind: k.Kind, Name: obj.Name}] = obj
		}
	}

	plan := Decide(shoots.Items, objects)
	for shoot, refs := range plan.Missing {
		r.Log.Info("shoot references objects that do not exist", "namespace", namespace, "shoot", shoot, "missing", refs)
	}
	var errs []error
	for _, ref := range plan.Protect {
		errs = append(errs, r.patch(ctx, objects[ref], "added finalizer", func(o client.Object) { controllerutil.AddFinalizer(o, Finalizer) }))
	}
	for _, ref := range plan.Release {
		errs = append(errs, r.patch(ctx, objects[ref], "released", func(o client.Object) { controllerutil.RemoveFinalizer(o, Finalizer) }))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if len(plan.Release) > 0 {
		// A Shoot created (or changed) since the Shoots were listed may reference what was just
		// released; its own reconcile found it protected and changed nothing. The Shoots once
		// more, live: what they reference now is protected again.
		fresh := &gardencorev1beta1.ShootList{}
		if err := r.Live.List(ctx, fresh, client.InNamespace(namespace)); err != nil {
			return fmt.Errorf("listing shoots after a release: %w", err)
		}
		for _, ref := range Decide(fresh.Items, objects).Protect {
			errs = append(errs, r.patch(ctx, objects[ref], "added finalizer again", func(o client.Object) { controllerutil.AddFinalizer(o, Finalizer) }))
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}

	byName := map[string]*gardencorev1beta1.Shoot{}
	for i := range shoots.Items {
		byName[shoots.Items[i].Name] = &shoots.Items[i]
	}
	for _, name := range plan.Finalize {
		errs = append(errs, r.patch(ctx, shootMetadata(byName[name]), "added finalizer", func(o client.Object) { controllerutil.AddFinalizer(o, Finalizer) }))
	}
	for _, name := range plan.Unfinalize {
		errs = append(errs, r.patch(ctx, shootMetadata(byName[name]), "removed finalizer", func(o client.Object) { controllerutil.RemoveFinalizer(o, Finalizer) }))
	}
	return errors.Join(errs...)
}

func (r *Reconciler) patch(ctx context.Context, obj *metav1.PartialObjectMetadata, what string, mutate func(client.Object)) error {
	changed, err := r.Writer.Patch(ctx, obj, func() { mutate(obj) })
	if err != nil {
		return fmt.Errorf("%s %s/%s: %w", obj.Kind, obj.Namespace, obj.Name, err)
	}
	if changed {
		r.Log.Info(what, "kind", obj.Kind, "namespace", obj.Namespace, "name", obj.Name)
	}
	return nil
}

// shootMetadata is a Shoot's metadata alone: the reconciler only ever patches its finalizers.
func shootMetadata(s *gardencorev1beta1.Shoot) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{ObjectMeta: *s.ObjectMeta.DeepCopy()}
	m.SetGroupVersionKind(kinds.Shoot.GroupVersionKind)
	return m
}

// Predicate is Gardener's predicate on Shoot events, decided on the event's object alone:
//   - deletions: never (a Shoot is gone only after this reconciler released it);
//   - a Shoot being deleted that gardenlet has released (no gardener finalizer): its references
//     stop counting;
//   - a Shoot whose spec changed: Gardener compares the referencing fields of the old and new
//     object, but an update event carries only the new one, so every spec change counts. It is
//     recognised as metadata.generation ahead of status.observedGeneration, which gardenlet
//     catches up with as it starts reconciling: the event of the change itself, and new Shoots,
//     pass; the status updates that follow do not.
//
// What the events miss (a change whose event was dropped, a referenced object created after the
// Shoot) the sweep catches.
func Predicate(ev function.Event) bool {
	if ev.Deleted {
		return false
	}
	if ev.Object == nil {
		return true
	}
	if ev.Object.GetDeletionTimestamp() != nil && !controllerutil.ContainsFinalizer(ev.Object, gardencorev1beta1.GardenerName) {
		return true
	}
	return ev.SpecUnobserved()
}

// MapShootToNamespace maps a Shoot's event to its namespace, without a request.
func MapShootToNamespace(_ context.Context, _ client.Reader, ev function.Event) ([]function.Key, error) {
	return []function.Key{{Name: ev.Key.Namespace}}, nil
}
