// Package collect decides gardener-resource-manager's garbage collector: which of the
// garbage-collectable ConfigMaps and Secrets of the target cluster no workload references any
// more. Workloads declare what they use with reference annotations that the resource manager
// injects when it applies them; a collectable object that no such annotation names, and that is
// old enough, is deleted.
package collect

import (
	"cmp"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// LabelKeyGarbageCollectable, with LabelValueGarbageCollectable, marks a ConfigMap or Secret
	// the garbage collector may delete once nothing references it.
	LabelKeyGarbageCollectable = "resources.gardener.cloud/garbage-collectable-reference"
	// LabelValueGarbageCollectable is the only value of LabelKeyGarbageCollectable that counts.
	LabelValueGarbageCollectable = "true"

	// AnnotationKeyPrefix starts the key of a reference annotation,
	// AnnotationKeyPrefix + <kind> + "-" + <first 8 hex digits of the name's SHA-256>, whose value
	// is the referenced object's name.
	AnnotationKeyPrefix = "reference.resources.gardener.cloud/"

	// KindConfigMap and KindSecret are the kinds as reference annotation keys spell them.
	KindConfigMap = "configmap"
	KindSecret    = "secret"

	// DefaultMinimumObjectLifetime is Gardener's minimum age of a collected object: a ConfigMap
	// or Secret created moments ago may be about to be referenced by a workload being applied.
	DefaultMinimumObjectLifetime = 10 * time.Minute
)

// Object identifies a ConfigMap or Secret to delete.
type Object struct {
	// Kind is KindConfigMap or KindSecret.
	Kind      string
	Namespace string
	Name      string
}

// ReferencedKind returns the kind that a reference annotation key names ("" when key is not a
// reference annotation key): the part between the prefix and the one "-" that must follow it.
// The hash is not verified; the annotation's value names the object.
func ReferencedKind(key string) string {
	rest, ok := strings.CutPrefix(key, AnnotationKeyPrefix)
	if !ok {
		return ""
	}
	kind, hash, ok := strings.Cut(rest, "-")
	if !ok || strings.Contains(hash, "-") {
		return ""
	}
	return kind
}

// Collect returns the ConfigMaps and Secrets to delete at now, sorted by kind, namespace and
// name: those labelled LabelKeyGarbageCollectable=LabelValueGarbageCollectable that are at
// least minimumObjectLifetime old (creationTimestamp + minimumObjectLifetime not after now) and
// that no object of referencing (Gardener's: Deployments, StatefulSets, DaemonSets, Jobs,
// CronJobs, Pods, ManagedResources and Prometheuses, read for their own .metadata.annotations
// only) names in a reference annotation of its own namespace. configMaps and secrets may hold unlabelled objects; they are
// never collected. Only the metadata of the objects is read.
func Collect(now time.Time, minimumObjectLifetime time.Duration, configMaps, secrets, referencing []metav1.Object) []Object {
	candidates := map[Object]bool{}
	for _, c := range []struct {
		kind    string
		objects []metav1.Object
	}{{KindSecret, secrets}, {KindConfigMap, configMaps}} {
		for _, obj := range c.objects {
			if obj.GetLabels()[LabelKeyGarbageCollectable] != LabelValueGarbageCollectable {
				continue
			}
			if obj.GetCreationTimestamp().Add(minimumObjectLifetime).UTC().After(now.UTC()) {
				continue
			}
			candidates[Object{Kind: c.kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}] = true
		}
	}

	for _, obj := range referencing {
		for key, name := range obj.GetAnnotations() {
			if kind := ReferencedKind(key); kind != "" && name != "" {
				delete(candidates, Object{Kind: kind, Namespace: obj.GetNamespace(), Name: name})
			}
		}
	}

	out := make([]Object, 0, len(candidates))
	for o := range candidates {
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b Object) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out
}
