package function

import (
	"context"
	"hash/fnv"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/gardener-knative/gardener-knative/pkg/tenant"
)

// Own writes. Every write a reconcile makes comes back as an event of the object it wrote, and
// for the kinds that carry no old object (Knative's events) a predicate cannot tell that echo from
// someone else's change: a ManagedResource's finalizer and status writes, or the objects it
// applies, each reconciled the key once more, while the reconcile that wrote them was still
// running (bench-seed: several reconciles per ManagedResource created, on a burst). Gardener's
// predicates drop them by comparing the old and the new object.
//
// The runtime drops them instead by version: a reconcile that succeeded knew every object it
// wrote at the version its write produced (the write was conditional on the version it read, and
// its answer is that object). So an event of that object at exactly that version carries nothing
// new for the key that wrote it: it is acknowledged without a reconcile once the key is free
// (an echo usually arrives while its reconcile runs, and waits for it). Anyone else's change
// has another version; a reconcile that failed leaves its writes' events to be reconciled; a
// deletion is always reconciled; another key (or function) mapping the same event is not
// affected. The memory is the process's own (a replica without it reconciles as before) and
// bounded.

// ownWrite identifies one version of one object that a reconcile wrote, or that an event carries.
type ownWrite struct {
	// cluster is where the object is (Source or Target, as the server resolves them); tenant is
	// the tenant whose Target it is, empty on the Source.
	cluster Cluster
	tenant  tenant.Name
	kind    schema.GroupKind
	key     Key
	version string
}

// ownWritesMemory bounds how many written versions are remembered (137 bytes each, measured: the
// digests with the LRU's bookkeeping): a burst of 500 ManagedResources of 10 objects each writes
// about 7,500.
const ownWritesMemory = 20000

// ownWrites remembers the versions successful reconciles wrote, by the reconciled key (the
// reconciler, tenant and key of the key lock).
type ownWrites struct {
	versions *lru.Cache
}

// ownWriteDigest stands for one reconciled key and one version it wrote: a 128-bit FNV-1a of
// their fields, all the memory needs to tell them apart (that another version's event matches one
// of 20,000 remembered is about 2^-113 likely) in 16 bytes, where the strings themselves kept 313
// bytes per version alive (bench-seed: 3.5 of managedresource's 16 MB of live heap at 50 shoots).
type ownWriteDigest [16]byte

func digestOf(reconciled string, w ownWrite) ownWriteDigest {
	h := fnv.New128a()
	for _, field := range []string{reconciled, string(w.cluster), string(w.tenant), w.kind.Group, w.kind.Kind, w.key.Namespace, w.key.Name, w.version} {
		// Each field ends with a byte no field holds, so that no two tuples write the same bytes.
		_, _ = h.Write(append([]byte(field), 0))
	}
	var d ownWriteDigest
	h.Sum(d[:0])
	return d
}

func newOwnWrites() *ownWrites { return &ownWrites{versions: lru.New(ownWritesMemory)} }

// add remembers what a successful reconcile of the key wrote.
func (o *ownWrites) add(reconciled string, writes []ownWrite) {
	for _, w := range writes {
		o.versions.Add(digestOf(reconciled, w), struct{}{})
	}
}

// wrote says whether a successful reconcile of the key wrote that version of the object.
func (o *ownWrites) wrote(reconciled string, w ownWrite) bool {
	_, ok := o.versions.Get(digestOf(reconciled, w))
	return ok
}

// recordVersion notes that a write of the reconcile produced obj (the server's answer) on the
// writer's cluster. A writer the runtime did not build for a cluster records nothing.
func (j *journal) recordVersion(ctx context.Context, cluster Cluster, obj client.Object) {
	if j == nil || cluster == "" || obj.GetResourceVersion() == "" {
		return
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Kind == "" && j.scheme != nil {
		found, err := apiutil.GVKForObject(obj, j.scheme)
		if err != nil {
			return
		}
		gvk = found
	}
	w := ownWrite{cluster: cluster, kind: gvk.GroupKind(), key: client.ObjectKeyFromObject(obj), version: obj.GetResourceVersion()}
	if cluster == Target {
		w.tenant = tenant.From(ctx)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.wrote = append(j.wrote, w)
}

// written are the versions the reconcile's writes produced.
func (j *journal) written() []ownWrite {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.wrote
}

// ownWriteOf is the version an event carries, nil where it carries none to compare: a
// Reference-mode event (no object) or a deletion (always reconciled).
func (s *Server) ownWriteOf(ev Event) *ownWrite {
	if ev.Object == nil || ev.Deleted || ev.Object.GetResourceVersion() == "" {
		return nil
	}
	w := &ownWrite{cluster: s.clusterOf(ev.Cluster), kind: ev.Kind.GroupKind(), key: ev.Key, version: ev.Object.GetResourceVersion()}
	if w.cluster == Target {
		w.tenant = ev.Tenant
	}
	return w
}
