// Package secretbinding is GCM's SecretBinding controller: a SecretBinding protects the Secret
// and labels the Quotas it references, and is itself kept while Shoots use it. The logic is
// shared with the CredentialsBinding controller (pkg/controller/internal/binding); this package
// names what is particular to SecretBindings.
package secretbinding

import (
	"strings"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/internal/binding"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// Kind is the SecretBinding as a binding kind.
var Kind = binding.Kind{
	Name:                 "secretbinding",
	Binding:              kinds.SecretBinding,
	Credentials:          []binding.CredentialsKind{{Kind: kinds.Secret, ProviderLabels: true}},
	CredentialsFinalizer: "gardener.cloud/secretbinding",
	ReferenceLabel:       v1beta1constants.LabelSecretBindingReference,
	ShootField:           []string{"spec", "secretBindingName"},
	ShootUses:            func(s *gardencorev1beta1.Shoot) string { return ptr.Deref(s.Spec.SecretBindingName, "") },
	New:                  func() client.Object { return &gardencorev1beta1.SecretBinding{} },
	NewList:              func() client.ObjectList { return &gardencorev1beta1.SecretBindingList{} },
	Decode:               Decode,
	// Twice an hour, off the minutes of the other binding kind's sweep.
	Schedule: "7,37 * * * *",
}

// Function is GCM's SecretBinding controller as a function.
var Function = binding.NewFunction(Kind)

// Decode reads what the decisions need of a SecretBinding. Its provider type may list several
// types separated by commas (Gardener's GetSecretBindingTypes).
func Decode(obj client.Object) binding.Binding {
	sb := obj.(*gardencorev1beta1.SecretBinding)
	b := binding.Binding{
		Key:      client.ObjectKeyFromObject(sb),
		Deleting: sb.DeletionTimestamp != nil,
		Credentials: binding.Reference{
			GroupVersionKind: kinds.Secret.GroupVersionKind,
			Key:              binding.KeyInNamespace(sb.Namespace, sb.SecretRef.Namespace, sb.SecretRef.Name),
		},
	}
	if sb.Provider != nil && sb.Provider.Type != "" {
		b.ProviderTypes = strings.Split(sb.Provider.Type, ",")
	}
	for _, q := range sb.Quotas {
		b.Quotas = append(b.Quotas, binding.KeyInNamespace(sb.Namespace, q.Namespace, q.Name))
	}
	return b
}
