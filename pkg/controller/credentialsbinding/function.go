// Package credentialsbinding is GCM's CredentialsBinding controller: a CredentialsBinding
// protects the Secret, InternalSecret or WorkloadIdentity and labels the Quotas it references,
// and is itself kept while Shoots use it. The logic is shared with the SecretBinding controller
// (pkg/controller/internal/binding); this package names what is particular to
// CredentialsBindings.
package credentialsbinding

import (
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	securityv1alpha1 "github.com/gardener/gardener/pkg/apis/security/v1alpha1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/internal/binding"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// Kind is the CredentialsBinding as a binding kind.
var Kind = binding.Kind{
	Name:    "credentialsbinding",
	Binding: kinds.CredentialsBinding,
	Credentials: []binding.CredentialsKind{
		{Kind: kinds.Secret, ProviderLabels: true},
		{Kind: kinds.InternalSecret, ProviderLabels: true},
		{Kind: kinds.WorkloadIdentity},
	},
	CredentialsFinalizer: "gardener.cloud/credentialsbinding",
	ReferenceLabel:       v1beta1constants.LabelCredentialsBindingReference,
	ShootField:           []string{"spec", "credentialsBindingName"},
	ShootUses:            func(s *gardencorev1beta1.Shoot) string { return ptr.Deref(s.Spec.CredentialsBindingName, "") },
	New:                  func() client.Object { return &securityv1alpha1.CredentialsBinding{} },
	NewList:              func() client.ObjectList { return &securityv1alpha1.CredentialsBindingList{} },
	Decode:               Decode,
	// Twice an hour, off the minutes of the other binding kind's sweep.
	Schedule: "22,52 * * * *",
}

// Function is GCM's CredentialsBinding controller as a function.
var Function = binding.NewFunction(Kind)

// Decode reads what the decisions need of a CredentialsBinding.
func Decode(obj client.Object) binding.Binding {
	cb := obj.(*securityv1alpha1.CredentialsBinding)
	b := binding.Binding{
		Key:      client.ObjectKeyFromObject(cb),
		Deleting: cb.DeletionTimestamp != nil,
		Credentials: binding.Reference{
			GroupVersionKind: cb.CredentialsRef.GroupVersionKind(),
			Key:              binding.KeyInNamespace(cb.Namespace, cb.CredentialsRef.Namespace, cb.CredentialsRef.Name),
		},
	}
	if cb.Provider.Type != "" {
		b.ProviderTypes = []string{cb.Provider.Type}
	}
	for _, q := range cb.Quotas {
		b.Quotas = append(b.Quotas, binding.KeyInNamespace(cb.Namespace, q.Namespace, q.Name))
	}
	return b
}
