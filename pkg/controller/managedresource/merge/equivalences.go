package merge

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Equivalences maps a group and kind to every group and kind (itself included) under which the
// API server serves the same objects, e.g. Deployments in apps and extensions. It lets an object
// that moved API group in a ManagedResource be recognised as the one applied before, instead of
// being deleted and created again.
type Equivalences map[metav1.GroupKind]sets.Set[metav1.GroupKind]

// NewEquivalences returns the equivalences Kubernetes' historic API groups need, extended with
// the ManagedResource's .spec.equivalences. A list that shares a member with a known set extends
// the set of its first such member; like Gardener, sets that a list bridges are not joined
// otherwise, so equivalence is not made transitive beyond that.
func NewEquivalences(additional ...[]metav1.GroupKind) Equivalences {
	e := Equivalences{}
	for _, kind := range []string{"Deployment", "DaemonSet", "ReplicaSet", "StatefulSet"} {
		e.add([]metav1.GroupKind{{Group: "extensions", Kind: kind}, {Group: "apps", Kind: kind}})
	}
	for _, kind := range []string{"Ingress", "NetworkPolicy"} {
		e.add([]metav1.GroupKind{{Group: "extensions", Kind: kind}, {Group: "networking.k8s.io", Kind: kind}})
	}
	for _, list := range additional {
		e.add(list)
	}
	return e
}

func (e Equivalences) add(list []metav1.GroupKind) {
	var set sets.Set[metav1.GroupKind]
	for _, gk := range list {
		if known, ok := e[gk]; ok {
			set = known
			break
		}
	}
	if set == nil {
		set = sets.New[metav1.GroupKind]()
	}
	for _, gk := range list {
		set.Insert(gk)
		e[gk] = set
	}
}

// Of returns the group kinds equivalent to gk, gk included; nil when gk has no equivalents.
func (e Equivalences) Of(gk metav1.GroupKind) sets.Set[metav1.GroupKind] {
	return e[gk]
}
