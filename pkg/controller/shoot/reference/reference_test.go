package reference

import (
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func secretRef(name string) Ref    { return Ref{Kind: "Secret", Name: name} }
func configMapRef(name string) Ref { return Ref{Kind: "ConfigMap", Name: name} }
func identityRef(name string) Ref  { return Ref{Kind: "WorkloadIdentity", Name: name} }

func TestReferences(t *testing.T) {
	s := &gardencorev1beta1.Shoot{}
	s.Spec.DNS = &gardencorev1beta1.DNS{Providers: []gardencorev1beta1.DNSProvider{
		{SecretName: ptr.To("dns-legacy")},
		{CredentialsRef: &autoscalingv1.CrossVersionObjectReference{APIVersion: "v1", Kind: "Secret", Name: "dns"}},
		{CredentialsRef: &autoscalingv1.CrossVersionObjectReference{APIVersion: "security.gardener.cloud/v1alpha1", Kind: "WorkloadIdentity", Name: "dns-identity"}},
		{CredentialsRef: &autoscalingv1.CrossVersionObjectReference{APIVersion: "v1", Kind: "ConfigMap", Name: "not-a-credential"}},
		{}, // the default domain's provider references nothing
	}}
	s.Spec.Kubernetes.KubeAPIServer = &gardencorev1beta1.KubeAPIServerConfig{
		AdmissionPlugins: []gardencorev1beta1.AdmissionPlugin{
			{Name: "PodNodeSelector"},
			{Name: "ImagePolicyWebhook", KubeconfigSecretName: ptr.To("admission-kubeconfig")},
		},
		AuditConfig:              &gardencorev1beta1.AuditConfig{AuditPolicy: &gardencorev1beta1.AuditPolicy{ConfigMapRef: &corev1.ObjectReference{Name: "audit-policy"}}},
		StructuredAuthentication: &gardencorev1beta1.StructuredAuthentication{ConfigMapName: "authn"},
		StructuredAuthorization: &gardencorev1beta1.StructuredAuthorization{ConfigMapName: "authz", Kubeconfigs: []gardencorev1beta1.AuthorizerKubeconfigReference{
			{AuthorizerName: "a", SecretName: "authz-kubeconfig"},
			{AuthorizerName: "b", SecretName: "dns"}, // referenced twice, listed once
		}},
	}
	s.Spec.Resources = []gardencorev1beta1.NamedResourceReference{
		{Name: "r1", ResourceRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "v1", Kind: "Secret", Name: "resource-secret"}},
		{Name: "r2", ResourceRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "v1", Kind: "ConfigMap", Name: "resource-configmap"}},
		{Name: "r3", ResourceRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "security.gardener.cloud/v1alpha1", Kind: "WorkloadIdentity", Name: "resource-identity"}},
		{Name: "r4", ResourceRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "not-protected"}},
		{Name: "r5", ResourceRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "v2", Kind: "Secret", Name: "wrong-version"}},
	}
	assert.Equal(t, []Ref{
		secretRef("dns-legacy"), secretRef("dns"), identityRef("dns-identity"),
		secretRef("admission-kubeconfig"), configMapRef("audit-policy"), configMapRef("authn"),
		configMapRef("authz"), secretRef("authz-kubeconfig"),
		secretRef("resource-secret"), configMapRef("resource-configmap"), identityRef("resource-identity"),
	}, References(s))

	assert.Empty(t, References(&gardencorev1beta1.Shoot{}))
}

func TestHoldsReferences(t *testing.T) {
	s := &gardencorev1beta1.Shoot{}
	assert.True(t, HoldsReferences(s))
	s.DeletionTimestamp = ptr.To(metav1.Now())
	s.Finalizers = []string{"gardener", Finalizer}
	assert.True(t, HoldsReferences(s), "gardenlet is still deleting the Shoot and may need its references")
	s.Finalizers = []string{Finalizer}
	assert.False(t, HoldsReferences(s), "gardenlet is done")
}

type shootSpec struct {
	name       string
	refs       []string // secret names
	finalizers []string
	deleting   bool
}

func shoots(specs ...shootSpec) []gardencorev1beta1.Shoot {
	var out []gardencorev1beta1.Shoot
	for _, spec := range specs {
		s := gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: spec.name, Namespace: "garden-a", Finalizers: spec.finalizers}}
		for _, r := range spec.refs {
			s.Spec.Resources = append(s.Spec.Resources, gardencorev1beta1.NamedResourceReference{Name: r, ResourceRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "v1", Kind: "Secret", Name: r}})
		}
		if spec.deleting {
			s.DeletionTimestamp = ptr.To(metav1.Now())
		}
		out = append(out, s)
	}
	return out
}

func secrets(finalized map[string]bool, deleting ...string) map[Ref]*metav1.PartialObjectMetadata {
	objects := map[Ref]*metav1.PartialObjectMetadata{}
	for name, has := range finalized {
		obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "garden-a", Finalizers: []string{"other"}}}
		if has {
			obj.Finalizers = append(obj.Finalizers, Finalizer)
		}
		for _, d := range deleting {
			if d == name {
				obj.DeletionTimestamp = ptr.To(metav1.Now())
			}
		}
		objects[secretRef(name)] = obj
	}
	return objects
}

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		name    string
		shoots  []gardencorev1beta1.Shoot
		objects map[Ref]*metav1.PartialObjectMetadata
		want    Plan
	}{
		{
			name:    "new shoot: its secret and itself get the finalizer",
			shoots:  shoots(shootSpec{name: "s", refs: []string{"a"}}),
			objects: secrets(map[string]bool{"a": false, "unrelated": false}),
			want:    Plan{Protect: []Ref{secretRef("a")}, Finalize: []string{"s"}},
		},
		{
			name:    "converged: nothing to do",
			shoots:  shoots(shootSpec{name: "s", refs: []string{"a"}, finalizers: []string{Finalizer}}),
			objects: secrets(map[string]bool{"a": true}),
			want:    Plan{},
		},
		{
			name:    "reference dropped: the secret and, with nothing else referenced, the shoot are released",
			shoots:  shoots(shootSpec{name: "s", finalizers: []string{Finalizer}}),
			objects: secrets(map[string]bool{"a": true}),
			want:    Plan{Release: []Ref{secretRef("a")}, Unfinalize: []string{"s"}},
		},
		{
			name: "a secret two shoots reference stays protected while one of them does",
			shoots: shoots(
				shootSpec{name: "s1", refs: []string{"a"}, finalizers: []string{Finalizer}},
				shootSpec{name: "s2", refs: []string{"a", "b"}, finalizers: []string{Finalizer}},
			),
			objects: secrets(map[string]bool{"a": true, "b": false}),
			want:    Plan{Protect: []Ref{secretRef("b")}},
		},
		{
			name: "shoot being deleted by gardenlet still holds its references",
			shoots: shoots(
				shootSpec{name: "s", refs: []string{"a"}, finalizers: []string{"gardener", Finalizer}, deleting: true},
			),
			objects: secrets(map[string]bool{"a": true}),
			want:    Plan{},
		},
		{
			name: "shoot released by gardenlet: its references go, then its finalizer",
			shoots: shoots(
				shootSpec{name: "s", refs: []string{"a", "shared"}, finalizers: []string{Finalizer}, deleting: true},
				shootSpec{name: "other", refs: []string{"shared"}, finalizers: []string{Finalizer}},
			),
			objects: secrets(map[string]bool{"a": true, "shared": true}),
			want:    Plan{Release: []Ref{secretRef("a")}, Unfinalize: []string{"s"}},
		},
		{
			name:    "finalized objects no shoot references are released, however they got the finalizer",
			shoots:  shoots(shootSpec{name: "s"}),
			objects: secrets(map[string]bool{"leaked-2": true, "leaked-1": true}),
			want:    Plan{Release: []Ref{secretRef("leaked-1"), secretRef("leaked-2")}},
		},
		{
			name:    "references to missing objects: nothing to protect, and no finalizer for the shoot",
			shoots:  shoots(shootSpec{name: "s", refs: []string{"missing"}}),
			objects: secrets(nil),
			want:    Plan{Missing: map[string][]Ref{"s": {secretRef("missing")}}},
		},
		{
			name:    "an object being deleted cannot gain a finalizer but still counts as existing",
			shoots:  shoots(shootSpec{name: "s", refs: []string{"a"}}),
			objects: secrets(map[string]bool{"a": false}, "a"),
			want:    Plan{Finalize: []string{"s"}},
		},
		{
			name:    "a shoot being deleted cannot gain the finalizer",
			shoots:  shoots(shootSpec{name: "s", refs: []string{"a"}, finalizers: []string{"gardener"}, deleting: true}),
			objects: secrets(map[string]bool{"a": true}),
			want:    Plan{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Decide(tc.shoots, tc.objects))
		})
	}
}

func TestDecideAcrossKinds(t *testing.T) {
	s := shoots(shootSpec{name: "s"})
	s[0].Spec.Kubernetes.KubeAPIServer = &gardencorev1beta1.KubeAPIServerConfig{StructuredAuthentication: &gardencorev1beta1.StructuredAuthentication{ConfigMapName: "same-name"}}
	objects := map[Ref]*metav1.PartialObjectMetadata{
		configMapRef("same-name"): {ObjectMeta: metav1.ObjectMeta{Name: "same-name"}},
		secretRef("same-name"):    {ObjectMeta: metav1.ObjectMeta{Name: "same-name", Finalizers: []string{Finalizer}}},
	}
	assert.Equal(t, Plan{Protect: []Ref{configMapRef("same-name")}, Release: []Ref{secretRef("same-name")}, Finalize: []string{"s"}}, Decide(s, objects),
		"a ConfigMap reference does not protect the Secret of the same name")
}

func TestPredicate(t *testing.T) {
	shoot := func(generation, observed int64, deleting bool, finalizers ...string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		u.SetGeneration(generation)
		if observed > 0 {
			_ = unstructured.SetNestedField(u.Object, observed, "status", "observedGeneration")
		}
		if deleting {
			u.SetDeletionTimestamp(ptr.To(metav1.Now()))
		}
		u.SetFinalizers(finalizers)
		return u
	}
	for _, tc := range []struct {
		name string
		ev   function.Event
		want bool
	}{
		{"new shoot", function.Event{Object: shoot(1, 0, false)}, true},
		{"spec changed, not yet observed by gardenlet", function.Event{Object: shoot(3, 2, false, Finalizer)}, true},
		{"status update of a settled shoot", function.Event{Object: shoot(3, 3, false, Finalizer)}, false},
		{"being deleted, gardenlet still at work", function.Event{Object: shoot(4, 4, true, "gardener", Finalizer)}, false},
		{"being deleted, released by gardenlet", function.Event{Object: shoot(4, 4, true, Finalizer)}, true},
		{"gone", function.Event{Object: shoot(4, 4, true), Deleted: true}, false},
		{"an event without the object", function.Event{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Predicate(tc.ev))
		})
	}
}
