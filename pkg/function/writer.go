package function

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"gomodules.xyz/jsonpatch/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
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
	// obj's resourceVersion. It sends nothing (and reports false) when mutate changed nothing,
	// or when the server found nothing to change in the very same patch of the very same
	// version of the object before (e.g. a manifest that leaves out what the server defaults:
	// obj then stays as read). On success obj holds the server's answer.
	Patch(ctx context.Context, obj client.Object, mutate func()) (changed bool, err error)
	// Touch sends an update of obj that changes nothing by itself, conditional on obj's
	// resourceVersion, so that the API server's admission (mutating webhooks) sees the object
	// again: GRM's alwaysUpdate. On success obj holds the server's answer.
	Touch(ctx context.Context, obj client.Object) error
	// PatchStatus is Patch on the status subresource.
	PatchStatus(ctx context.Context, obj client.Object, mutate func()) (changed bool, err error)
	// PatchSubResource is Patch on another subresource the API server serves for updates (e.g.
	// certificatesigningrequests/approval, the only place a CSR's Approved condition is set).
	PatchSubResource(ctx context.Context, obj client.Object, subResource string, mutate func()) (changed bool, err error)
	// Delete deletes obj if it still has obj's UID and resourceVersion.
	Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error
}

// NewWriter returns the optimistic writer over c.
func NewWriter(c client.Client) Writer { return newWriter(c, "") }

// newWriter is the optimistic writer of a reconciler's cluster: it notes the versions its writes
// produce in the reconcile's journal (ownwrites.go).
func newWriter(c client.Client, cluster Cluster) *optimisticWriter {
	return &optimisticWriter{c: c, cluster: cluster, noops: lru.New(noopMemory)}
}

// noopMemory bounds how many patches the server answered without a change are remembered
// (about 100 bytes each).
const noopMemory = 20000

type optimisticWriter struct {
	c client.Client
	// cluster is the cluster c reaches, as the server resolves it; empty for a writer of no
	// reconciler's cluster (whose writes are no events the function watches).
	cluster Cluster
	// noops remembers patches the server applied without a change (its answer kept the
	// resourceVersion), by the object's UID and version and the patch: while the object stays at
	// that version, the same patch would change nothing again, so it is not sent again.
	noops *lru.Cache
}

func (w *optimisticWriter) Create(ctx context.Context, obj client.Object) error {
	j := journalFrom(ctx)
	if err := j.beforeCreate(obj); err != nil {
		return err
	}
	if err := w.c.Create(ctx, obj); err != nil {
		return err
	}
	j.recordCreate(w.c, obj)
	j.recordVersion(ctx, w.cluster, obj)
	return nil
}

func (w *optimisticWriter) Patch(ctx context.Context, obj client.Object, mutate func()) (bool, error) {
	return w.patch(ctx, obj, mutate, func(p client.Patch) error { return w.c.Patch(ctx, obj, p) })
}

func (w *optimisticWriter) Touch(ctx context.Context, obj client.Object) error {
	rv := obj.GetResourceVersion()
	if rv == "" {
		return fmt.Errorf("touching %s: an optimistic write needs the resourceVersion it is based on", client.ObjectKeyFromObject(obj))
	}
	if err := w.c.Patch(ctx, obj, (&change{}).patch(rv)); err != nil {
		return err
	}
	w.recorded(ctx, obj, rv)
	return nil
}

func (w *optimisticWriter) PatchStatus(ctx context.Context, obj client.Object, mutate func()) (bool, error) {
	return w.patch(ctx, obj, mutate, func(p client.Patch) error { return w.c.Status().Patch(ctx, obj, p) })
}

func (w *optimisticWriter) PatchSubResource(ctx context.Context, obj client.Object, subResource string, mutate func()) (bool, error) {
	return w.patch(ctx, obj, mutate, func(p client.Patch) error { return w.c.SubResource(subResource).Patch(ctx, obj, p) })
}

func (w *optimisticWriter) patch(ctx context.Context, obj client.Object, mutate func(), send func(client.Patch) error) (bool, error) {
	rv := obj.GetResourceVersion()
	d, err := diff(obj, mutate)
	if err != nil || d == nil {
		return false, err
	}
	patch := d.patch(rv)
	noop := noopKey{tenant: tenant.From(ctx), uid: obj.GetUID(), rv: rv, patch: d.fingerprint()}
	if _, known := w.noops.Get(noop); known {
		return false, json.Unmarshal(d.before, obj)
	}
	err = send(patch)
	if err == nil {
		w.recorded(ctx, obj, rv)
		if obj.GetResourceVersion() == rv {
			w.noops.Add(noop, struct{}{})
		}
	}
	if !apierrors.IsInvalid(err) {
		return true, err
	}
	// A typed object renders struct fields the server may not have (e.g. status: {} of a
	// CRD-served object that never had one), and a JSON patch cannot add below a parent that is
	// missing. Read the object as the server has it and add each missing parent whole: where
	// the server has no parent, it has no unknown fields to lose.
	raw := &unstructured.Unstructured{}
	gvk, gvkErr := apiutil.GVKForObject(obj, w.c.Scheme())
	if gvkErr != nil {
		return true, err
	}
	raw.SetGroupVersionKind(gvk)
	if getErr := w.c.Get(ctx, client.ObjectKeyFromObject(obj), raw); getErr != nil {
		return true, getErr
	}
	if raw.GetResourceVersion() != rv {
		return true, apierrors.NewConflict(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, obj.GetName(), fmt.Errorf("the object changed since it was read"))
	}
	fixed := d.addMissingParents(raw.Object)
	if fixed == nil {
		return true, err
	}
	if err := send(fixed.patch(rv)); err != nil {
		return true, err
	}
	w.recorded(ctx, obj, rv)
	return true, nil
}

// recorded notes a successful conditional write of obj (the server's answer) based on version
// rv in the reconcile's journal: for the owner guard, and its new version, if it made one.
func (w *optimisticWriter) recorded(ctx context.Context, obj client.Object, rv string) {
	j := journalFrom(ctx)
	j.recordWrite(obj)
	if obj.GetResourceVersion() != rv {
		j.recordVersion(ctx, w.cluster, obj)
	}
}

func (w *optimisticWriter) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	uid, rv := obj.GetUID(), obj.GetResourceVersion()
	if uid == "" || rv == "" {
		return fmt.Errorf("deleting %s: an optimistic delete needs the UID and resourceVersion the decision was based on", client.ObjectKeyFromObject(obj))
	}
	return w.c.Delete(ctx, obj, append([]client.DeleteOption{client.Preconditions{UID: &uid, ResourceVersion: &rv}}, opts...)...)
}

// change is what a reconciler's mutation changed: JSON patch operations from the object before to
// the object after, and the object after (for whole parents).
type change struct {
	ops   []jsonpatch.Operation
	after map[string]any
	// before is the object as read, in JSON.
	before []byte
}

// fingerprint identifies the change whatever the order of its operations (the diff's order
// follows map iteration).
func (c *change) fingerprint() [sha256.Size]byte {
	ops := make([]string, 0, len(c.ops))
	for _, op := range c.ops {
		ops = append(ops, op.Json())
	}
	slices.Sort(ops)
	return sha256.Sum256([]byte(strings.Join(ops, "\n")))
}

// noopKey identifies a patch of one version of one object.
type noopKey struct {
	tenant tenant.Name
	uid    types.UID
	rv     string
	patch  [sha256.Size]byte
}

// diff applies mutate to obj and returns what it changed; nil when nothing changed.
func diff(obj client.Object, mutate func()) (*change, error) {
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
	c := &change{ops: ops, before: before}
	if err := json.Unmarshal(after, &c.after); err != nil {
		return nil, err
	}
	return c, nil
}

// patch is the JSON patch of the change, led by a replacement of metadata.resourceVersion with
// the version read: the API server then refuses it with a Conflict if the object changed since.
func (c *change) patch(rv string) client.Patch {
	ops := append([]jsonpatch.Operation{{Operation: "replace", Path: "/metadata/resourceVersion", Value: rv}}, c.ops...)
	data, _ := json.Marshal(ops) // operations of decoded JSON always marshal
	return client.RawPatch(types.JSONPatchType, data)
}

// addMissingParents rewrites the change for the object as the server has it (server): an
// operation below a parent the server lacks becomes an add of that parent as it is after the
// change; a removal of what the server lacks is dropped. Nil when nothing was missing.
func (c *change) addMissingParents(server map[string]any) *change {
	fixed := &change{after: c.after}
	added := map[string]bool{}
	rewritten := false
	for _, op := range c.ops {
		segments := pointerSegments(op.Path)
		missing := firstMissing(server, segments[:len(segments)-1])
		if missing < 0 {
			fixed.ops = append(fixed.ops, op)
			continue
		}
		rewritten = true
		if op.Operation == "remove" {
			continue
		}
		parent := "/" + joinPointer(segments[:missing+1])
		if added[parent] {
			continue
		}
		added[parent] = true
		if value, ok := valueAt(c.after, segments[:missing+1]); ok {
			fixed.ops = append(fixed.ops, jsonpatch.Operation{Operation: "add", Path: parent, Value: value})
		}
	}
	if !rewritten {
		return nil
	}
	return fixed
}

// firstMissing is the index of the first segment of path that doc lacks, or -1.
func firstMissing(doc any, path []string) int {
	for i, segment := range path {
		next, ok := step(doc, segment)
		if !ok {
			return i
		}
		doc = next
	}
	return -1
}

func valueAt(doc any, path []string) (any, bool) {
	for _, segment := range path {
		next, ok := step(doc, segment)
		if !ok {
			return nil, false
		}
		doc = next
	}
	return doc, true
}

func step(doc any, segment string) (any, bool) {
	switch d := doc.(type) {
	case map[string]any:
		v, ok := d[segment]
		return v, ok
	case []any:
		i, err := strconv.Atoi(segment)
		if err != nil || i < 0 || i >= len(d) {
			return nil, false
		}
		return d[i], true
	}
	return nil, false
}

// pointerSegments splits a JSON pointer (RFC 6901) into its unescaped segments.
func pointerSegments(pointer string) []string {
	parts := strings.Split(strings.TrimPrefix(pointer, "/"), "/")
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")
	}
	return parts
}

func joinPointer(segments []string) string {
	escaped := make([]string, len(segments))
	for i, s := range segments {
		escaped[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
	}
	return strings.Join(escaped, "/")
}
