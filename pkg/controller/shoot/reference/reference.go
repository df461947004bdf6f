// Package reference is the "reference" reconciler of GCM's Shoot controller: every Secret,
// ConfigMap and WorkloadIdentity a Shoot's spec references carries the finalizer
// gardener.cloud/reference-protection while a Shoot of its namespace still needs it, and so does
// the Shoot itself, so that what it references outlives it even when GCM is down at its deletion.
//
// Gardener reconciles one Shoot at a time, but every decision it takes is about a namespace:
// which objects of the namespace no Shoot of the namespace references any more. This reconciler
// therefore converges a whole namespace at once (its key is the Namespace), the Shoot events
// mapping to their namespace: the same rules, applied to every Shoot of the namespace.
package reference

import (
	"cmp"
	"slices"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	securityv1alpha1 "github.com/gardener/gardener/pkg/apis/security/v1alpha1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// Finalizer protects referenced objects and the Shoots that reference them.
const Finalizer = v1beta1constants.ReferenceProtectionFinalizerName

// Referenced are the kinds a Shoot references in its namespace.
var Referenced = []function.Kind{kinds.Secret, kinds.ConfigMap, kinds.WorkloadIdentity}

// Ref names an object of the Shoot's namespace by kind ("Secret", "ConfigMap",
// "WorkloadIdentity") and name.
type Ref struct {
	Kind string
	Name string
}

// References returns what a Shoot's spec references, each once, in the order of the spec:
//   - DNS provider credentials (.spec.dns.providers[].secretName, and .credentialsRef to a
//     Secret or WorkloadIdentity, which replaces it since Gardener v1.146);
//   - admission plugin kubeconfig Secrets (.spec.kubernetes.kubeAPIServer.admissionPlugins[].kubeconfigSecretName);
//   - the audit policy ConfigMap (.spec.kubernetes.kubeAPIServer.auditConfig.auditPolicy.configMapRef);
//   - structured authentication and authorization ConfigMaps and the authorization kubeconfig
//     Secrets (.spec.kubernetes.kubeAPIServer.structured{Authentication,Authorization});
//   - Secrets, ConfigMaps and WorkloadIdentities of .spec.resources[].
func References(s *gardencorev1beta1.Shoot) []Ref {
	var refs []Ref
	add := func(kind, name string) {
		if name != "" && !slices.Contains(refs, Ref{kind, name}) {
			refs = append(refs, Ref{kind, name})
		}
	}
	addCrossVersion := func(ref autoscalingv1.CrossVersionObjectReference) {
		switch {
		case ref.APIVersion == corev1.SchemeGroupVersion.String() && (ref.Kind == kinds.Secret.Kind || ref.Kind == kinds.ConfigMap.Kind),
			ref.APIVersion == securityv1alpha1.SchemeGroupVersion.String() && ref.Kind == kinds.WorkloadIdentity.Kind:
			add(ref.Kind, ref.Name)
		}
	}
	if s.Spec.DNS != nil {
		for _, p := range s.Spec.DNS.Providers {
			if p.SecretName != nil {
				add(kinds.Secret.Kind, *p.SecretName)
			}
			// DNS credentials are Secrets or WorkloadIdentities, never ConfigMaps.
			if p.CredentialsRef != nil && p.CredentialsRef.Kind != kinds.ConfigMap.Kind {
				addCrossVersion(*p.CredentialsRef)
			}
		}
	}
	if api := s.Spec.Kubernetes.KubeAPIServer; api != nil {
		for _, p := range api.AdmissionPlugins {
			if p.KubeconfigSecretName != nil {
				add(kinds.Secret.Kind, *p.KubeconfigSecretName)
			}
		}
		if api.AuditConfig != nil && api.AuditConfig.AuditPolicy != nil && api.AuditConfig.AuditPolicy.ConfigMapRef != nil {
			add(kinds.ConfigMap.Kind, api.AuditConfig.AuditPolicy.ConfigMapRef.Name)
		}
		if api.StructuredAuthentication != nil {
			add(kinds.ConfigMap.Kind, api.StructuredAuthentication.ConfigMapName)
		}
		if api.StructuredAuthorization != nil {
			add(kinds.ConfigMap.Kind, api.StructuredAuthorization.ConfigMapName)
			for _, k := range api.StructuredAuthorization.Kubeconfigs {
				add(kinds.Secret.Kind, k.SecretName)
			}
		}
	}
	for _, r := range s.Spec.Resources {
		addCrossVersion(r.ResourceRef)
	}
	return refs
}

// HoldsReferences says whether a Shoot's references count. They stop counting once the Shoot is
// being deleted and gardenlet has released it (its gardener finalizer is gone): nothing will
// read them any more. A Shoot still being deleted by gardenlet needs them (e.g. its DNS
// credentials to clean up its records).
func HoldsReferences(s *gardencorev1beta1.Shoot) bool {
	return s.DeletionTimestamp == nil || controllerutil.ContainsFinalizer(s, gardencorev1beta1.GardenerName)
}

// Plan is what converging a namespace changes.
type Plan struct {
	// Protect are referenced objects that lack the finalizer.
	Protect []Ref
	// Release are objects with the finalizer that no Shoot's references need.
	Release []Ref
	// Finalize are the Shoots that reference an existing object and lack the finalizer.
	Finalize []string
	// Unfinalize are the Shoots that hold the finalizer without needing it.
	Unfinalize []string
	// Missing are, by Shoot, its references to objects that do not exist.
	Missing map[string][]Ref
}

// Decide plans a namespace from its Shoots and the metadata of its objects of the referenced
// kinds, with Gardener's rules applied to every Shoot:
//   - an object referenced by a Shoot whose references count gets the finalizer;
//   - an object with the finalizer that no such Shoot references loses it, whether or not it
//     was ever referenced (objects of the namespace that carry the finalizer are the Shoots');
//   - a Shoot whose references count holds the finalizer exactly while one of the objects it
//     references exists, and a Shoot whose references no longer count loses it.
//
// An object being deleted cannot gain a finalizer, and neither can a Shoot being deleted; both
// still count as existing.
func Decide(shoots []gardencorev1beta1.Shoot, objects map[Ref]*metav1.PartialObjectMetadata) Plan {
	plan := Plan{}
	referenced := map[Ref]bool{}
	for i := range shoots {
		s := &shoots[i]
		holds := HoldsReferences(s)
		needs := false
		if holds {
			for _, ref := range References(s) {
				obj, exists := objects[ref]
				if !exists {
					if plan.Missing == nil {
						plan.Missing = map[string][]Ref{}
					}
					plan.Missing[s.Name] = append(plan.Missing[s.Name], ref)
					continue
				}
				needs = true
				if !referenced[ref] && !controllerutil.ContainsFinalizer(obj, Finalizer) && obj.DeletionTimestamp == nil {
					plan.Protect = append(plan.Protect, ref)
				}
				referenced[ref] = true
			}
		}
		has := controllerutil.ContainsFinalizer(s, Finalizer)
		switch {
		case needs && !has && s.DeletionTimestamp == nil:
			plan.Finalize = append(plan.Finalize, s.Name)
		case !needs && has:
			plan.Unfinalize = append(plan.Unfinalize, s.Name)
		}
	}
	for ref, obj := range objects {
		if !referenced[ref] && controllerutil.ContainsFinalizer(obj, Finalizer) {
			plan.Release = append(plan.Release, ref)
		}
	}
	slices.SortFunc(plan.Release, func(a, b Ref) int { return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name)) })
	return plan
}
