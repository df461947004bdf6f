package manifests

import (
	"sort"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"

	"github.com/gardener-knative/gardener-knative/pkg/controller/managedresource/merge"
)

// SortObjectReferences orders .status.resources by merge.ReferenceKey, so that the status does not
// change when only the order of the manifests does. The sort is the same (unstable) one as
// Gardener's, so that entries with equal keys end up in the same order.
func SortObjectReferences(refs []resourcesv1alpha1.ObjectReference) {
	keys := make([]string, len(refs))
	for i, ref := range refs {
		keys[i] = merge.ReferenceKey(ref)
	}
	sort.Sort(byKey{keys: keys, refs: refs})
}

type byKey struct {
	keys []string
	refs []resourcesv1alpha1.ObjectReference
}

func (s byKey) Len() int           { return len(s.refs) }
func (s byKey) Less(i, j int) bool { return s.keys[i] < s.keys[j] }

func (s byKey) Swap(i, j int) {
	s.keys[i], s.keys[j] = s.keys[j], s.keys[i]
	s.refs[i], s.refs[j] = s.refs[j], s.refs[i]
}
