// Package quota keeps Quotas while SecretBindings or CredentialsBindings use them (GCM's Quota
// controller): a reference protection (pkg/controller/referenceprotection) of Quotas referenced
// by the bindings' quotas[].
package quota

import (
	"fmt"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	securityv1alpha1 "github.com/gardener/gardener/pkg/apis/security/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/gardener-knative/gardener-knative/pkg/controller/referenceprotection"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// Protection is the Quota's: finalizer "gardener", released when neither a SecretBinding nor a
// CredentialsBinding lists it. Both bindings' quotas are immutable, so only their deletion can
// release a Quota.
var Protection = &referenceprotection.Protection{
	FunctionName: "quota",
	Kind:         kinds.Quota,
	Finalizer:    gardencorev1beta1.GardenerName,
	Referrers: []referenceprotection.Referrer{
		{Kind: kinds.SecretBinding, References: referenceprotection.Typed(SecretBindingReferences)},
		{Kind: kinds.CredentialsBinding, References: referenceprotection.Typed(CredentialsBindingReferences)},
	},
	Blocked: func(_ function.Key, referencing []referenceprotection.Referencing) string {
		return fmt.Sprintf("Cannot delete Quota, because the following resources are still referencing it: SecretBindings - %+v, CredentialsBindings - %+v",
			referenceprotection.NamesOf(referencing, kinds.SecretBinding.Kind), referenceprotection.NamesOf(referencing, kinds.CredentialsBinding.Kind))
	},
	RecordEvent: true,
	Schedule:    "47 * * * *",
}

// Function is GCM's Quota controller.
var Function = Protection.Function()

// SecretBindingReferences are the Quotas a SecretBinding lists.
func SecretBindingReferences(binding *gardencorev1beta1.SecretBinding) []function.Key {
	return quotaKeys(binding.Quotas)
}

// CredentialsBindingReferences are the Quotas a CredentialsBinding lists.
func CredentialsBindingReferences(binding *securityv1alpha1.CredentialsBinding) []function.Key {
	return quotaKeys(binding.Quotas)
}

// quotaKeys takes each reference's namespace as it is, as Gardener compares them.
func quotaKeys(refs []corev1.ObjectReference) []function.Key {
	keys := make([]function.Key, 0, len(refs))
	for _, ref := range refs {
		keys = append(keys, function.Key{Namespace: ref.Namespace, Name: ref.Name})
	}
	return keys
}
