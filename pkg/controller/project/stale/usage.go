package stale

import (
	"context"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	securityv1alpha1 "github.com/gardener/gardener/pkg/apis/security/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// The indexes of the sweep's snapshot that InUseBy lists by. gardener-apiserver offers no field
// selectors for these relations (which Shoot uses which binding, which binding references which
// namespace's credentials or quotas), so they are answered only by the sweep's snapshot: Related
// declares them on its lists, and the reconciler never asks them of the API server.
const (
	// IndexSecretBindingUse is "<namespace>/<spec.secretBindingName>" of a Shoot.
	IndexSecretBindingUse = "snapshot.secretBindingUse"
	// IndexCredentialsBindingUse is "<namespace>/<spec.credentialsBindingName>" of a Shoot.
	IndexCredentialsBindingUse = "snapshot.credentialsBindingUse"
	// IndexCredentialsNamespace is the namespace of the credentials a binding references: a
	// SecretBinding's Secret, a CredentialsBinding's Secret, InternalSecret or WorkloadIdentity.
	IndexCredentialsNamespace = "snapshot.credentialsNamespace"
	// IndexQuotaNamespace is the namespaces of the Quotas a binding references.
	IndexQuotaNamespace = "snapshot.quotaNamespace"
)

// Related are the lists the stale sweep reads once per run, whatever the number of Projects:
// Namespaces (for the skip annotation) and what can keep a Project in use. Only Shoots and the
// bindings are listed in full, because the indexes need their specs; Secrets and Quotas are not
// listed at all (see InUseBy).
// Each list holds only what the decisions read, once the indexes are taken from the whole
// objects: the keys of Namespaces, Shoots, BackupEntries and SecretBindings (the decisions ask
// only whether they exist), the Namespaces' skip annotation beside them, and the
// CredentialsBindings' credentials reference.
var Related = []function.List{
	{Kind: kinds.Namespace, MetadataOnly: true, KeysOnly: true, Annotations: []string{v1beta1constants.ProjectSkipStaleCheck}},
	{Kind: kinds.Shoot, KeysOnly: true, Indexes: map[string]function.IndexFunc{
		IndexSecretBindingUse:      secretBindingUse,
		IndexCredentialsBindingUse: credentialsBindingUse,
	}},
	{Kind: kinds.BackupEntry, MetadataOnly: true, KeysOnly: true},
	{Kind: kinds.SecretBinding, KeysOnly: true, Indexes: map[string]function.IndexFunc{
		IndexCredentialsNamespace: secretBindingCredentialsNamespace,
		IndexQuotaNamespace:       secretBindingQuotaNamespaces,
	}},
	{Kind: kinds.CredentialsBinding, Project: keepCredentialsRef, Indexes: map[string]function.IndexFunc{
		IndexCredentialsNamespace: credentialsBindingCredentialsNamespace,
		IndexQuotaNamespace:       credentialsBindingQuotaNamespaces,
	}},
}

func keepCredentialsRef(obj client.Object) client.Object {
	return &securityv1alpha1.CredentialsBinding{ObjectMeta: metav1.ObjectMeta{Namespace: obj.GetNamespace(), Name: obj.GetName()},
		CredentialsRef: obj.(*securityv1alpha1.CredentialsBinding).CredentialsRef}
}

func bindingUse(namespace, binding string) []string {
	if binding == "" {
		return nil
	}
	return []string{namespace + "/" + binding}
}

func secretBindingUse(obj client.Object) []string {
	shoot := obj.(*gardencorev1beta1.Shoot)
	return bindingUse(shoot.Namespace, ptr.Deref(shoot.Spec.SecretBindingName, ""))
}

func credentialsBindingUse(obj client.Object) []string {
	shoot := obj.(*gardencorev1beta1.Shoot)
	return bindingUse(shoot.Namespace, ptr.Deref(shoot.Spec.CredentialsBindingName, ""))
}

// orOwn is a reference's namespace as gardener-apiserver defaults it: the binding's own when
// unset.
func orOwn(namespace string, binding client.Object) string {
	if namespace == "" {
		return binding.GetNamespace()
	}
	return namespace
}

func secretBindingCredentialsNamespace(obj client.Object) []string {
	binding := obj.(*gardencorev1beta1.SecretBinding)
	return []string{orOwn(binding.SecretRef.Namespace, binding)}
}

func secretBindingQuotaNamespaces(obj client.Object) []string {
	binding := obj.(*gardencorev1beta1.SecretBinding)
	return quotaNamespaces(binding.Quotas, binding)
}

// credentialKinds are the credentials a CredentialsBinding may reference, by apiVersion and
// kind, with the name InUseBy reports them by.
var credentialKinds = map[schema.GroupVersionKind]string{
	corev1.SchemeGroupVersion.WithKind("Secret"):                     "Secrets",
	gardencorev1beta1.SchemeGroupVersion.WithKind("InternalSecret"):  "InternalSecrets",
	securityv1alpha1.SchemeGroupVersion.WithKind("WorkloadIdentity"): "WorkloadIdentities",
}

func credentialsOf(binding *securityv1alpha1.CredentialsBinding) (string, bool) {
	ref := binding.CredentialsRef
	resource, ok := credentialKinds[schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)]
	return resource, ok
}

func credentialsBindingCredentialsNamespace(obj client.Object) []string {
	binding := obj.(*securityv1alpha1.CredentialsBinding)
	if _, ok := credentialsOf(binding); !ok {
		return nil
	}
	return []string{orOwn(binding.CredentialsRef.Namespace, binding)}
}

func credentialsBindingQuotaNamespaces(obj client.Object) []string {
	binding := obj.(*securityv1alpha1.CredentialsBinding)
	return quotaNamespaces(binding.Quotas, binding)
}

func quotaNamespaces(quotas []corev1.ObjectReference, binding client.Object) []string {
	var namespaces []string
	seen := map[string]bool{}
	for _, q := range quotas {
		ns := orOwn(q.Namespace, binding)
		if !seen[ns] {
			seen[ns] = true
			namespaces = append(namespaces, ns)
		}
	}
	return namespaces
}

// InUseBy returns what keeps the Project of namespace in use, in Gardener's order, or "" when
// nothing does: "Shoots" or "BackupEntries" in the namespace; "Secrets", "InternalSecrets" or
// "WorkloadIdentities" of the namespace that a SecretBinding or CredentialsBinding references
// and a Shoot uses through it; "Quotas" of the namespace that such a used binding references.
// Bindings and Shoots may be in any namespace.
//
// Gardener also requires the referenced Secret or Quota to exist (with its binding's reference
// label); InUseBy trusts the binding instead, which spares a sweep the LIST of every Secret in
// the garden. The bindings' controllers hold a finalizer on what a binding references, so the
// answers differ only for a binding whose Secret or Quota never existed, and then InUseBy keeps
// the Project, never deletes one Gardener would keep.
//
// reader is the sweep's snapshot: every List goes by one of the indexes Related declares.
func InUseBy(ctx context.Context, reader client.Reader, namespace string) (string, error) {
	if resource, err := UsedInNamespace(ctx, reader, namespace); err != nil || resource != "" {
		return resource, err
	}

	if used, err := usedSecretBinding(ctx, reader, IndexCredentialsNamespace, namespace); err != nil || used {
		return "Secrets", err
	}
	binding, err := usedCredentialsBinding(ctx, reader, IndexCredentialsNamespace, namespace)
	if err != nil {
		return "", err
	}
	if binding != nil {
		resource, _ := credentialsOf(binding)
		return resource, nil
	}
	if used, err := usedSecretBinding(ctx, reader, IndexQuotaNamespace, namespace); err != nil || used {
		return "Quotas", err
	}
	if binding, err := usedCredentialsBinding(ctx, reader, IndexQuotaNamespace, namespace); err != nil || binding != nil {
		return "Quotas", err
	}
	return "", nil
}

// UsedInNamespace returns what in the namespace keeps its Project in use, "Shoots" or
// "BackupEntries", or "" for neither: the part of InUseBy a kube-apiserver answers (a LIST in one
// namespace, of at most one object's metadata), so that it can be asked live.
func UsedInNamespace(ctx context.Context, reader client.Reader, namespace string) (string, error) {
	for _, kind := range []struct {
		resource string
		list     function.Kind
	}{{"Shoots", kinds.Shoot}, {"BackupEntries", kinds.BackupEntry}} {
		objects := &metav1.PartialObjectMetadataList{}
		objects.SetGroupVersionKind(kind.list.GroupVersion().WithKind(kind.list.Kind + "List"))
		if err := reader.List(ctx, objects, client.InNamespace(namespace), client.Limit(1)); err != nil || len(objects.Items) > 0 {
			return kind.resource, err
		}
	}
	return "", nil
}

// usedSecretBinding says whether a Shoot uses one of the SecretBindings whose index has the
// namespace.
func usedSecretBinding(ctx context.Context, reader client.Reader, index, namespace string) (bool, error) {
	bindings := &metav1.PartialObjectMetadataList{}
	bindings.SetGroupVersionKind(gardencorev1beta1.SchemeGroupVersion.WithKind("SecretBindingList"))
	if err := reader.List(ctx, bindings, client.MatchingFields{index: namespace}); err != nil {
		return false, err
	}
	for _, binding := range bindings.Items {
		if used, err := usedByShoot(ctx, reader, IndexSecretBindingUse, &binding); err != nil || used {
			return used, err
		}
	}
	return false, nil
}

// usedCredentialsBinding returns the first of the CredentialsBindings whose index has the
// namespace that a Shoot uses, nil if none is used.
func usedCredentialsBinding(ctx context.Context, reader client.Reader, index, namespace string) (*securityv1alpha1.CredentialsBinding, error) {
	bindings := &securityv1alpha1.CredentialsBindingList{}
	if err := reader.List(ctx, bindings, client.MatchingFields{index: namespace}); err != nil {
		return nil, err
	}
	for _, binding := range bindings.Items {
		used, err := usedByShoot(ctx, reader, IndexCredentialsBindingUse, &binding)
		if err != nil {
			return nil, err
		}
		if used {
			return &binding, nil
		}
	}
	return nil, nil
}

// usedByShoot says whether a Shoot of the binding's namespace names the binding: by the index,
// which the snapshot took from the whole Shoot, so that it holds only the Shoot's name.
func usedByShoot(ctx context.Context, reader client.Reader, use string, binding client.Object) (bool, error) {
	shoots := &metav1.PartialObjectMetadataList{}
	shoots.SetGroupVersionKind(gardencorev1beta1.SchemeGroupVersion.WithKind("ShootList"))
	if err := reader.List(ctx, shoots, client.MatchingFields{use: binding.GetNamespace() + "/" + binding.GetName()}); err != nil {
		return false, err
	}
	return len(shoots.Items) > 0, nil
}
