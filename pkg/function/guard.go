package function

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// The owner guard. Every write of the Writer is conditional on what was read, but a create has
// no precondition: a reconcile that decided on a primary that has since been deleted can still
// create, and across clusters no ownerReference cleans up after it. So the runtime keeps a
// journal of each reconcile: the primary as the reconcile first read it (its UID, whether it was
// being deleted) and what the Writer created. When a reconcile that created anything ends, the
// primary is checked once, live and metadata-only, unless a conditional write on it after the
// last create already proved it unchanged (the common case: a status written at the end). If it
// is gone, has another UID, or is being deleted, the creations are undone (deleted with UID and
// resourceVersion preconditions, or by the reconciler's Undo) and the key is reconciled again
// from live state, which then sees the deletion. Either the deletion's reconcile saw the create,
// or this check sees the deletion: nothing created outlives a deleted owner.

// journal is what one reconcile did that the owner guard checks.
type journal struct {
	mu sync.Mutex
	// primary is the reconciled kind and key; scheme tells typed objects' kinds.
	primaryGroupKind schema.GroupKind
	primaryKey       types.NamespacedName
	scheme           *runtime.Scheme
	// read tells that the reconcile read its primary; uid, deleting and object are what it read.
	read     bool
	uid      types.UID
	deleting bool
	object   client.Object
	// created are the Writer's creations, in order; proven says a conditional write on the
	// primary (not being deleted) succeeded after the last of them.
	created []Created
	proven  bool
	// snapshot says the reconcile reads a sweep's snapshot: it may not create (beforeCreate);
	// refused says a create was refused for it.
	snapshot, refused bool
	// wrote are the versions the reconcile's writes produced (ownwrites.go).
	wrote []ownWrite
}

// Created is one object a reconcile created: as the API server answered its create (UID and
// resourceVersion set), and the client that created it (of the Source, a target or a tenant).
type Created struct {
	Object client.Object
	client client.Client
}

// Delete deletes the created object if it is still as created (UID and resourceVersion): one
// changed since is someone else's to decide about.
func (c Created) Delete(ctx context.Context) error {
	uid, rv := c.Object.GetUID(), c.Object.GetResourceVersion()
	return client.IgnoreNotFound(c.client.Delete(ctx, c.Object, client.Preconditions{UID: &uid, ResourceVersion: &rv}))
}

// UndoRequest is what a reconciler's Undo gets: the primary as the reconcile read it (nil when
// it did not read it) and what the reconcile created, in order.
type UndoRequest struct {
	Primary client.Object
	Created []Created
}

type journalKey struct{}

func withJournal(ctx context.Context, j *journal) context.Context {
	return context.WithValue(ctx, journalKey{}, j)
}

func journalFrom(ctx context.Context) *journal {
	j, _ := ctx.Value(journalKey{}).(*journal)
	return j
}

// errCreateFromSnapshot is what a create in a reconcile of a sweep's snapshot gets: the runtime
// reconciles the key again from live reads first (a snapshot is older than the event that may
// have deleted the owner since), and then lets it create.
var errCreateFromSnapshot = errors.New("a create is not decided on a sweep's snapshot: reconciling again from live state")

// beforeCreate refuses a create decided on a snapshot, except of the reviews the API server
// answers without keeping anything (a SubjectAccessReview: a question, not an object).
func (j *journal) beforeCreate(obj client.Object) error {
	if j == nil {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.snapshot && !j.ephemeral(obj) {
		j.refused = true
		return errCreateFromSnapshot
	}
	return nil
}

// recordCreate notes a creation (obj as the server answered). An object without UID is none the
// API server keeps (a SubjectAccessReview, a TokenReview): nothing to undo.
func (j *journal) recordCreate(c client.Client, obj client.Object) {
	if j == nil || obj.GetUID() == "" {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.created = append(j.created, Created{Object: obj.DeepCopyObject().(client.Object), client: c})
	j.proven = false
}

// recordRead notes the primary as the reconcile first read it.
func (j *journal) recordRead(key client.ObjectKey, obj client.Object) {
	if j == nil || key != j.primaryKey {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.read || !j.isPrimary(obj) {
		return
	}
	j.read, j.uid, j.deleting = true, obj.GetUID(), obj.GetDeletionTimestamp() != nil
	j.object = obj.DeepCopyObject().(client.Object)
}

// recordWrite notes a successful conditional write (obj is the server's answer): on the primary,
// not being deleted, after the creates, it proves the primary unchanged since the creates.
func (j *journal) recordWrite(obj client.Object) {
	if j == nil || client.ObjectKeyFromObject(obj) != j.primaryKey {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.isPrimary(obj) && (!j.read || obj.GetUID() == j.uid) && obj.GetDeletionTimestamp() == nil {
		j.proven = true
	}
}

// ephemeral tells the kinds a create asks a question with (authorization's and authentication's
// reviews), which persist nothing.
func (j *journal) ephemeral(obj client.Object) bool {
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Kind == "" && j.scheme != nil {
		if found, err := apiutil.GVKForObject(obj, j.scheme); err == nil {
			gvk = found
		}
	}
	return gvk.Group == "authorization.k8s.io" || gvk.Group == "authentication.k8s.io"
}

// isPrimary tells whether obj is of the primary's kind (typed, unstructured or metadata only).
func (j *journal) isPrimary(obj client.Object) bool {
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Kind == "" && j.scheme != nil {
		if found, err := apiutil.GVKForObject(obj, j.scheme); err == nil {
			gvk = found
		}
	}
	return gvk.Group == j.primaryGroupKind.Group && gvk.Kind == j.primaryGroupKind.Kind
}

// toCheck returns the creations the guard must check, nil when there are none or a write
// proved the primary unchanged.
func (j *journal) toCheck() []Created {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.proven || len(j.created) == 0 {
		return nil
	}
	return slices.Clone(j.created)
}

// ownerLost reads the primary live, metadata-only, and tells whether the reconcile's creations
// lost their owner: it is gone, has another UID than the reconcile read, or is being deleted.
func (j *journal) ownerLost(ctx context.Context, live client.Reader, version string) (bool, error) {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(j.primaryGroupKind.WithVersion(version))
	err := live.Get(ctx, j.primaryKey, m)
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("checking the owner of what the reconcile created: %w", err)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return (j.read && m.UID != j.uid) || m.DeletionTimestamp != nil, nil
}

// undoRequest is what the reconciler's Undo gets.
func (j *journal) undoRequest(created []Created) UndoRequest {
	j.mu.Lock()
	defer j.mu.Unlock()
	return UndoRequest{Primary: j.object, Created: created}
}

// reset starts the journal of another attempt of the reconcile, from live reads.
func (j *journal) reset() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.read, j.uid, j.deleting, j.object = false, "", false, nil
	j.created, j.proven, j.snapshot, j.refused = nil, false, false, false
	j.wrote = nil
}

// DefaultUndo deletes what the reconcile created, latest first, each if still as created.
func DefaultUndo(ctx context.Context, req UndoRequest) error {
	var errs []error
	for i := len(req.Created) - 1; i >= 0; i-- {
		if err := req.Created[i].Delete(ctx); err != nil && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("undoing the create of %s: %w", client.ObjectKeyFromObject(req.Created[i].Object), err))
		}
	}
	return errors.Join(errs...)
}

// ErrOwnerChanged says that the primary of a reconcile is gone, has another UID or is being
// deleted since the reconcile read it (OwnerUnchanged).
var ErrOwnerChanged = errors.New("the reconciled object was deleted or replaced since it was read")

// OwnerUnchanged is the owner guard for side effects outside the Writer (e.g. a Helm release): it
// reads the reconcile's primary live, metadata-only, and returns ErrOwnerChanged (wrapped in a
// Conflict, so that the runtime reconciles the key again from live state) when the primary the
// reconcile read is gone, was replaced or is being deleted. Outside a reconcile it returns nil.
func OwnerUnchanged(ctx context.Context, live client.Reader, version string) error {
	j := journalFrom(ctx)
	if j == nil {
		return nil
	}
	lost, err := j.ownerLost(ctx, live, version)
	if err != nil {
		return err
	}
	if lost {
		return apierrors.NewConflict(schema.GroupResource{Group: j.primaryGroupKind.Group, Resource: j.primaryGroupKind.Kind}, j.primaryKey.Name, ErrOwnerChanged)
	}
	return nil
}

// observingReader notes the reconcile's first read of its primary in the journal.
type observingReader struct {
	client.Reader
	j *journal
}

func (r observingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := r.Reader.Get(ctx, key, obj, opts...)
	if err == nil {
		r.j.recordRead(key, obj)
	}
	return err
}
