package referenceprotection

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kube"
	"github.com/gardener-knative/gardener-knative/pkg/scheme"
)

// Reconciler adds the finalizer to protected objects and removes it from deleted ones once no
// referrer is left. It reads the protected object metadata-only.
type Reconciler struct {
	*Protection
	Writer function.Writer
	Events function.EventRecorder
	Log    *slog.Logger
}

var _ function.Handler = &Reconciler{}

// Reconcile converges one protected object. A deletion that referrers still block is not an
// error (Gardener returns one to be retried with backoff): the referrers' events and the resync
// sweep bring the object back when a referrer goes, and an error would only make the sender
// retry the same answer.
func (r *Reconciler) Reconcile(ctx context.Context, req function.Request) error {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(r.Kind.GroupVersionKind)
	if err := req.Reader.Get(ctx, req.Key, obj); err != nil {
		return client.IgnoreNotFound(err)
	}

	if NeedsFinalizer(obj, r.Finalizer) {
		r.Log.Info("Adding finalizer", "object", req.Key, "finalizer", r.Finalizer)
		finalizers := append(slices.Clip(obj.GetFinalizers()), r.Finalizer)
		_, err := r.Writer.Patch(ctx, obj, func() { obj.SetFinalizers(finalizers) })
		return client.IgnoreNotFound(err)
	}
	if !AwaitsRelease(obj, r.Finalizer) {
		return nil
	}

	referencing, err := r.referencing(ctx, req)
	if err != nil {
		return err
	}
	if len(referencing) > 0 {
		message := r.Blocked(req.Key, referencing)
		r.Log.Info("Deletion blocked: still referenced", "object", req.Key, "reason", message)
		if r.RecordEvent {
			r.Events.Event(ctx, obj, corev1.EventTypeNormal, v1beta1constants.EventResourceReferenced, message)
		}
		return nil
	}

	r.Log.Info("No longer referenced, removing finalizer", "object", req.Key, "finalizer", r.Finalizer)
	finalizers := slices.DeleteFunc(slices.Clone(obj.GetFinalizers()), func(f string) bool { return f == r.Finalizer })
	_, err = r.Writer.Patch(ctx, obj, func() { obj.SetFinalizers(finalizers) })
	return client.IgnoreNotFound(err)
}

// referencing finds, per referrer kind, the referrers that still reference the object. A sweep
// asks its snapshot's reverse index; an event lists the referrers live (one namespace where
// they can only reference their own), because gardener-apiserver offers no field selector for
// most of these references, and filters them with the same definition of the reference.
func (r *Reconciler) referencing(ctx context.Context, req function.Request) ([]Referencing, error) {
	var found []Referencing
	for _, ref := range r.Referrers {
		list, err := newList(ref.Kind.GroupVersionKind)
		if err != nil {
			return nil, err
		}
		var opts []client.ListOption
		if ref.SameNamespace {
			opts = append(opts, client.InNamespace(req.Key.Namespace))
		}
		if req.Trigger == function.BySweep {
			opts = append(opts, client.MatchingFields{ReferencesIndex: req.Key.String()})
		}
		items, err := kube.ListAll(ctx, req.Reader, list, pageSize, opts...)
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", ref.Kind.Resource, err)
		}
		var names []string
		for _, item := range items {
			if !slices.Contains(ref.keys(item), req.Key) {
				continue
			}
			name := item.GetName()
			if ref.Kind.Namespaced {
				name = item.GetNamespace() + "/" + name
			}
			names = append(names, name)
		}
		if len(names) > 0 {
			slices.Sort(names)
			found = append(found, Referencing{Kind: ref.Kind.Kind, Names: names})
		}
	}
	return found, nil
}

// newList returns an empty typed list of the kind: references live in specs.
func newList(gvk schema.GroupVersionKind) (client.ObjectList, error) {
	obj, err := scheme.Gardener.New(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err != nil {
		return nil, fmt.Errorf("the scheme does not know %sList: %w", gvk.Kind, err)
	}
	list, ok := obj.(client.ObjectList)
	if !ok || !meta.IsListType(list) {
		return nil, fmt.Errorf("%sList is not a list", gvk.Kind)
	}
	return list, nil
}
