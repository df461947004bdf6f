package function

import (
	"context"
	"encoding/json"
	"fmt"

	"gomodules.xyz/jsonpatch/v2"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Writer is the only way a reconciler writes. Every write it offers is optimistic, so a write
// based on a stale read (another writer, a sweep's snapshot, a reordered event) fails with a
// Conflict instead of overwriting newer state, and the runtime reconciles again from live state.
// And it never sends a whole typed object, so fields the API types do not know (served by a
// newer gardener-apiserver) are never dropped: updates are JSON patches of exactly what the
// reconciler changed, addressed field by field and list element by list element.
type Writer interface {
	// Create creates obj. A create cannot overwrite anything; AlreadyExists means another
	// writer was first.
	Create(ctx context.Context, obj client.Object) error
	// Patch applies mutate to obj and sends what it changed as a JSON patch, conditional on
	// obj's resourceVersion. It sends nothing (and reports false) when mutate changed nothing.
	// On success obj holds the server's answer.
	Patch(ctx context.Context, obj client.Object, mutate func()) (changed bool, err error)
	// PatchStatus is Patch on the status subresource.
	PatchStatus(ctx context.Context, obj client.Object, mutate func()) (changed bool, err error)
	// Delete deletes obj if it still has obj's UID and resourceVersion.
	Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error
}

// NewWriter returns the optimistic writer over c.
func NewWriter(c client.Client) Writer { return &optimisticWriter{c: c} }

type optimisticWriter struct{ c client.Client }

func (w *optimisticWriter) Create(ctx context.Context, obj client.Object) error {
	return w.c.Create(ctx, obj)
}

func (w *optimisticWriter) Patch(ctx context.Context, obj client.Object, mutate func()) (bool, error) {
	patch, err := diff(obj, mutate)
	if err != nil || patch == nil {
		return false, err
	}
	return true, w.c.Patch(ctx, obj, patch)
}

func (w *optimisticWriter) PatchStatus(ctx context.Context, obj client.Object, mutate func()) (bool, error) {
	patch, err := diff(obj, mutate)
	if err != nil || patch == nil {
		return false, err
	}
	return true, w.c.Status().Patch(ctx, obj, patch)
}

func (w *optimisticWriter) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	uid, rv := obj.GetUID(), obj.GetResourceVersion()
	if uid == "" || rv == "" {
		return fmt.Errorf("deleting %s: an optimistic delete needs the UID and resourceVersion the decision was based on", client.ObjectKeyFromObject(obj))
	}
	return w.c.Delete(ctx, obj, append([]client.DeleteOption{client.Preconditions{UID: &uid, ResourceVersion: &rv}}, opts...)...)
}

// diff applies mutate to obj and returns the JSON patch from before to after, led by a
// replacement of metadata.resourceVersion with the version read: the API server then refuses
// the patch with a Conflict if the object changed since. Nil when nothing changed.
func diff(obj client.Object, mutate func()) (client.Patch, error) {
	rv := obj.GetResourceVersion()
	if rv == "" {
		return nil, fmt.Errorf("patching %s: an optimistic patch needs the resourceVersion the decision was based on", client.ObjectKeyFromObject(obj))
	}
	before, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	mutate()
	after, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	ops, err := jsonpatch.CreatePatch(before, after)
	if err != nil {
		return nil, fmt.Errorf("computing patch of %s: %w", client.ObjectKeyFromObject(obj), err)
	}
	if len(ops) == 0 {
		return nil, nil
	}
	for _, op := range ops {
		if op.Path == "/metadata/resourceVersion" {
			return nil, fmt.Errorf("patching %s: a reconciler must not change the resourceVersion", client.ObjectKeyFromObject(obj))
		}
	}
	ops = append([]jsonpatch.Operation{{Operation: "replace", Path: "/metadata/resourceVersion", Value: rv}}, ops...)
	data, err := json.Marshal(ops)
	if err != nil {
		return nil, err
	}
	return client.RawPatch(types.JSONPatchType, data), nil
}
