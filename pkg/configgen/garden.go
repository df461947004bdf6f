package configgen

import (
	"bytes"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/sources"
)

// GardenDir is the folder of config/ an operator applies to the garden: each part's garden
// identity (GardenAccess).
const GardenDir = "garden"

// GardenIdentityNamespace is the garden's namespace of the parts' identities there, where
// Gardener keeps its own components' (kube-system of the virtual garden).
const GardenIdentityNamespace = "kube-system"

// GardenIdentity names a part's ServiceAccount in the garden, its token Secret and its RBAC there:
// the part's namespace, so that the runtime part's and a seed's never mix.
func GardenIdentity(part function.Part) string { return part.Namespace() }

// GardenAccess are the objects that give a part's functions that work on the garden, and its
// garden source, their identity there: a ServiceAccount in the garden's kube-system with a
// long-lived token Secret (what a kubeconfig of the part's garden-access may carry, as hack/cluster.sh
// builds it), a ClusterRole with the union of those functions' declared rules and get, list and
// watch on every kind the part's garden source watches, and a Role per namespace of their
// NamespacedRBAC. Nil for a part whose functions do not work on the garden.
func GardenAccess(part function.Part, fns []*function.Function) []client.Object {
	var rules []rbacv1.PolicyRule
	var watched []function.Kind
	namespaced := map[string][]rbacv1.PolicyRule{}
	for _, fn := range fns {
		if !fn.WorksOnGarden || !slices.Contains(fn.Parts, part) {
			continue
		}
		rules = append(rules, fn.RBACIn(part)...)
		watched = append(watched, fn.WatchedKinds(function.Source)...)
		for namespace, r := range fn.NamespacedRBAC {
			namespaced[function.NamespaceOf(namespace, part)] = append(namespaced[function.NamespaceOf(namespace, part)], r...)
		}
	}
	if len(rules) == 0 {
		return nil
	}
	name := GardenIdentity(part)
	component := "garden-access"
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: GardenIdentityNamespace}}
	roleName := sources.ClusterScopedName(part.Namespace(), component)
	token := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: meta(component, name+"-token", GardenIdentityNamespace),
		Type:       corev1.SecretTypeServiceAccountToken,
	}
	token.Annotations = map[string]string{corev1.ServiceAccountNameKey: name}
	sa := &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: meta(component, name, GardenIdentityNamespace),
	}
	return append([]client.Object{sa, token}, grants(component, roleName, subjects,
		append(rules, sources.WatchRules(watched)...), namespaced, func(namespace string) string { return namespace })...)
}

// GardenFiles are the files of config/garden/: one per part whose functions work on the garden.
func GardenFiles(fns []*function.Function) ([]File, error) {
	var files []File
	for _, part := range function.AllParts {
		objs := GardenAccess(part, fns)
		if objs == nil {
			continue
		}
		var buf bytes.Buffer
		buf.WriteString(Header + "\n")
		fmt.Fprintf(&buf, "# The identity of the %s part in the garden (apply to the garden: `ko apply -f config/garden/`):\n", part)
		fmt.Fprintf(&buf, "# the ServiceAccount %s/%s and its token, with the rules of the part's functions that\n", GardenIdentityNamespace, GardenIdentity(part))
		buf.WriteString("# work on the garden and of its garden source, derived from their declarations. A kubeconfig with\n")
		fmt.Fprintf(&buf, "# this token is the part's garden access (the Secret garden-access in %s,\n", part.Namespace())
		buf.WriteString("# docs/deployment.md, \"Garden access\"). Regenerate with `go run ./hack/genconfig`.\n")
		for _, obj := range objs {
			doc, err := Marshal(obj)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
			}
			buf.WriteString("---\n")
			buf.Write(doc)
		}
		files = append(files, File{Name: string(part) + ".yaml", Content: buf.Bytes()})
	}
	return files, nil
}
