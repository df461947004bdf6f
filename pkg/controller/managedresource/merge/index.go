package merge

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Key identifies an object across API versions as Gardener does, "group/kind/namespace/name",
// with an empty namespace read as "default" for every kind but Namespace (the namespace Kubernetes
// puts a namespaced object in when a manifest names none). It is also the sort key of
// .status.resources.
func Key(group, kind, namespace, name string) string {
	if kind != "Namespace" && namespace == "" {
		namespace = metav1.NamespaceDefault
	}
	return fmt.Sprintf("%s/%s/%s/%s", group, kind, namespace, name)
}

// ReferenceKey is the Key of a .status.resources entry (an unparsable apiVersion counts as the
// core group).
func ReferenceKey(ref resourcesv1alpha1.ObjectReference) string {
	return Key(ref.GroupVersionKind().Group, ref.Kind, ref.Namespace, ref.Name)
}

// Index holds what a ManagedResource applied last time (.status.resources) to tell, for each
// object it wants now, what it applied before (the labels and annotations to drop when no longer
// wanted), and at the end which previous objects nobody wants any more and must be deleted.
type Index struct {
	byKey        map[string]resourcesv1alpha1.ObjectReference
	found        sets.Set[string]
	equivalences Equivalences
}

// NewIndex indexes refs; a later entry with the same Key replaces an earlier one. With
// equivalences, Lookup also finds an entry under an equivalent group and kind; nil means exact
// matches only (as when a ManagedResource is deleted).
func NewIndex(refs []resourcesv1alpha1.ObjectReference, equivalences Equivalences) *Index {
	index := &Index{
		byKey:        make(map[string]resourcesv1alpha1.ObjectReference, len(refs)),
		found:        sets.New[string](),
		equivalences: equivalences,
	}
	for _, ref := range refs {
		index.byKey[ReferenceKey(ref)] = ref
	}
	return index
}

// Lookup returns the previous entry of the object ref names, the exact one or else one under an
// equivalent group and kind, and marks it found so that it is not deleted. Equivalents are tried
// in the order of group and kind, where Gardener's order is random (it only matters when more
// than one equivalent entry exists).
func (i *Index) Lookup(ref resourcesv1alpha1.ObjectReference) (resourcesv1alpha1.ObjectReference, bool) {
	key := ReferenceKey(ref)
	if previous, ok := i.byKey[key]; ok {
		i.found.Insert(key)
		return previous, true
	}
	equivalents := i.equivalences.Of(metav1.GroupKind{Group: ref.GroupVersionKind().Group, Kind: ref.Kind}).UnsortedList()
	slices.SortFunc(equivalents, compareGroupKinds)
	for _, gk := range equivalents {
		key := Key(gk.Group, gk.Kind, ref.Namespace, ref.Name)
		if previous, ok := i.byKey[key]; ok {
			i.found.Insert(key)
			return previous, true
		}
	}
	return resourcesv1alpha1.ObjectReference{}, false
}

// Found says whether a Lookup matched ref's entry.
func (i *Index) Found(ref resourcesv1alpha1.ObjectReference) bool {
	return i.found.Has(ReferenceKey(ref))
}

// Unmatched returns, ordered by Key, the entries no Lookup matched: the objects the ManagedResource
// no longer wants, to delete from the target cluster.
func (i *Index) Unmatched() []resourcesv1alpha1.ObjectReference {
	var unmatched []resourcesv1alpha1.ObjectReference
	for _, key := range sets.List(sets.KeySet(i.byKey)) {
		if !i.found.Has(key) {
			unmatched = append(unmatched, i.byKey[key])
		}
	}
	return unmatched
}

func compareGroupKinds(a, b metav1.GroupKind) int {
	return cmp.Or(strings.Compare(a.Group, b.Group), strings.Compare(a.Kind, b.Kind))
}
