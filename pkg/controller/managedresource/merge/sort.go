package merge

import (
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// installOrder is Helm's install order of kinds (helm.sh/helm/v4 release util InstallOrder, the
// one Gardener uses): what others depend on (namespaces, service accounts, secrets, CRDs, RBAC)
// comes first.
var installOrder = func() map[string]int {
	kinds := []string{
		"PriorityClass",
		"Namespace",
		"NetworkPolicy",
		"ResourceQuota",
		"LimitRange",
		"PodSecurityPolicy",
		"PodDisruptionBudget",
		"ServiceAccount",
		"Secret",
		"SecretList",
		"ConfigMap",
		"StorageClass",
		"PersistentVolume",
		"PersistentVolumeClaim",
		"CustomResourceDefinition",
		"ClusterRole",
		"ClusterRoleList",
		"ClusterRoleBinding",
		"ClusterRoleBindingList",
		"Role",
		"RoleList",
		"RoleBinding",
		"RoleBindingList",
		"Service",
		"DaemonSet",
		"Pod",
		"ReplicationController",
		"ReplicaSet",
		"Deployment",
		"HorizontalPodAutoscaler",
		"StatefulSet",
		"Job",
		"CronJob",
		"IngressClass",
		"Ingress",
		"APIService",
		"MutatingWebhookConfiguration",
		"ValidatingWebhookConfiguration",
	}
	order := make(map[string]int, len(kinds))
	for i, kind := range kinds {
		order[kind] = i
	}
	return order
}()

// SortForApply orders items for applying them one after the other, so that an object finds what
// it depends on already there: by Helm's install order of kinds, then by name; kinds Helm does not
// know come last, by kind and name. Group and namespace play no part. The sort is the same
// (unstable) one as Gardener's, so that ties end up in the same order.
func SortForApply[T any](items []T, object func(T) *unstructured.Unstructured) {
	sort.Sort(byInstallOrder[T]{items: items, object: object})
}

type byInstallOrder[T any] struct {
	items  []T
	object func(T) *unstructured.Unstructured
}

func (s byInstallOrder[T]) Len() int      { return len(s.items) }
func (s byInstallOrder[T]) Swap(i, j int) { s.items[i], s.items[j] = s.items[j], s.items[i] }

func (s byInstallOrder[T]) Less(i, j int) bool {
	a, b := s.object(s.items[i]), s.object(s.items[j])
	rankA, knownA := installOrder[a.GetKind()]
	rankB, knownB := installOrder[b.GetKind()]
	switch {
	case !knownA && !knownB:
		if a.GetKind() != b.GetKind() {
			return a.GetKind() < b.GetKind()
		}
		return a.GetName() < b.GetName()
	case !knownA:
		return false
	case !knownB:
		return true
	case rankA != rankB:
		return rankA < rankB
	default:
		return a.GetName() < b.GetName()
	}
}
