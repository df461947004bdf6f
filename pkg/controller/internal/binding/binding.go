// Package binding is what GCM's SecretBinding and CredentialsBinding controllers share. A
// binding protects the credentials it references (a Secret, InternalSecret or WorkloadIdentity)
// with a finalizer of its kind and labels them, labels the Quotas it references, and holds its
// own finalizer while Shoots of its namespace use it. The two controllers differ only in names
// and in how a binding spells its references: each is one Kind, served by the Function built
// here (see NewFunction).
package binding

import (
	"slices"
	"strings"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/gardener-knative/gardener-knative/pkg/function"
)

const (
	// Finalizer is the binding's own finalizer, released once no Shoot uses the binding.
	Finalizer = gardencorev1beta1.GardenerName
	// legacyCredentialsFinalizer is what Gardener put on referenced credentials before each
	// binding kind got its own finalizer; it is replaced wherever it is still found.
	legacyCredentialsFinalizer = gardencorev1beta1.ExternalGardenerName
)

// Reference names an object a binding references.
type Reference struct {
	schema.GroupVersionKind
	function.Key
}

// Binding is what the decisions need of one SecretBinding or CredentialsBinding.
type Binding struct {
	Key      function.Key
	Deleting bool
	// Credentials are the referenced Secret, InternalSecret or WorkloadIdentity.
	Credentials   Reference
	ProviderTypes []string
	Quotas        []function.Key
}

// CredentialsKind is a kind a binding may reference as its credentials.
type CredentialsKind struct {
	Kind function.Kind
	// ProviderLabels says whether credentials of this kind carry the provider labels
	// provider.shoot.gardener.cloud/<type>=true. Secrets and InternalSecrets do.
	// WorkloadIdentities do not (an admission plugin gives them the extensions' label), so a
	// binding removes its type's label from them, as Gardener does since v1.146.
	ProviderLabels bool
}

// Kind is one kind of binding: its names and how to read its objects.
type Kind struct {
	// Name names the function and the controller ("secretbinding").
	Name    string
	Binding function.Kind
	// Credentials are the kinds a binding of this kind may reference as credentials.
	Credentials []CredentialsKind
	// CredentialsFinalizer protects referenced credentials while a binding of this kind exists.
	CredentialsFinalizer string
	// ReferenceLabel marks credentials and Quotas referenced by bindings of this kind.
	ReferenceLabel string
	// ShootField is the path of the binding's name in a Shoot's object, for events.
	ShootField []string
	// ShootUses returns the name of the binding of this kind a Shoot uses ("" for none).
	ShootUses func(*gardencorev1beta1.Shoot) string
	// New and NewList return empty typed objects of the kind; Decode reads one.
	New     func() client.Object
	NewList func() client.ObjectList
	Decode  func(client.Object) Binding
	// Schedule is the resync sweep's cron schedule.
	Schedule string
}

// credentialsKind returns the credentials kind of gvk, if bindings of k may reference it.
func (k Kind) credentialsKind(gvk schema.GroupVersionKind) (CredentialsKind, bool) {
	for _, ck := range k.Credentials {
		if ck.Kind.GroupVersionKind == gvk {
			return ck, true
		}
	}
	return CredentialsKind{}, false
}

// Protect applies to the metadata of credentials of kind ck what binding b requires: k's
// finalizer (replacing the legacy one; credentials already being deleted cannot gain it), k's
// reference label and, where ck carries them, the provider labels of b's types; from
// credentials that do not carry them, it removes the labels of b's types. Like Gardener, it adds
// a label only where its key is missing.
func (k Kind) Protect(obj client.Object, ck CredentialsKind, b Binding) {
	if obj.GetDeletionTimestamp() == nil {
		controllerutil.AddFinalizer(obj, k.CredentialsFinalizer)
	}
	controllerutil.RemoveFinalizer(obj, legacyCredentialsFinalizer)
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	for _, t := range b.ProviderTypes {
		key := v1beta1constants.LabelShootProviderPrefix + t
		if _, has := labels[key]; ck.ProviderLabels && !has {
			labels[key] = "true"
		} else if !ck.ProviderLabels {
			delete(labels, key)
		}
	}
	if _, has := labels[k.ReferenceLabel]; !has {
		labels[k.ReferenceLabel] = "true"
	}
	obj.SetLabels(labels)
}

// Release removes from credentials' metadata what Protect applied: k's finalizer (and the
// legacy one), k's reference label and the provider labels. Gardener removes one provider label,
// whichever it meets first, and relies on gardener-admission-controller's
// sync-provider-secret-labels webhook, which recomputes them on every update from the bindings
// that still exist; removing all of them is the deterministic form of the same.
func (k Kind) Release(obj client.Object) {
	controllerutil.RemoveFinalizer(obj, k.CredentialsFinalizer)
	controllerutil.RemoveFinalizer(obj, legacyCredentialsFinalizer)
	labels := obj.GetLabels()
	for key := range labels {
		if key == k.ReferenceLabel || strings.HasPrefix(key, v1beta1constants.LabelShootProviderPrefix) {
			delete(labels, key)
		}
	}
	obj.SetLabels(labels)
}

// ShootsUsing returns the Shoots (as "namespace/name") that use b, in the order given. A Shoot
// uses the binding of its own namespace that it names, whether or not it is being deleted.
func (k Kind) ShootsUsing(b Binding, shoots []gardencorev1beta1.Shoot) []string {
	var using []string
	for i := range shoots {
		s := &shoots[i]
		if s.Namespace == b.Key.Namespace && k.ShootUses(s) == b.Key.Name {
			using = append(using, s.Namespace+"/"+s.Name)
		}
	}
	return using
}

// MayReleaseCredentials says whether the credentials of the released binding b may lose their
// protection: no other binding of the kind that is not itself being deleted references them.
func MayReleaseCredentials(b Binding, all []Binding) bool {
	for _, other := range all {
		if other.Key != b.Key && !other.Deleting && other.Credentials == b.Credentials {
			return false
		}
	}
	return true
}

// QuotasToRelease returns the Quotas of the released binding b that no other binding of the
// kind references. Unlike credentials, a Quota stays labelled while a binding that is being
// deleted still references it (Gardener's rule).
func QuotasToRelease(b Binding, all []Binding) []function.Key {
	var release []function.Key
	for _, q := range b.Quotas {
		referenced := slices.ContainsFunc(all, func(other Binding) bool {
			return other.Key != b.Key && slices.Contains(other.Quotas, q)
		})
		if !referenced {
			release = append(release, q)
		}
	}
	return release
}

// KeyInNamespace is the key of a reference, defaulted to namespace where it names none, as
// gardener-apiserver defaults the references of bindings.
func KeyInNamespace(namespace, refNamespace, name string) function.Key {
	if refNamespace == "" {
		refNamespace = namespace
	}
	return function.Key{Namespace: refNamespace, Name: name}
}
