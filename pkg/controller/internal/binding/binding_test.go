package binding

import (
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

var testKind = Kind{
	Name:                 "testbinding",
	Binding:              kinds.SecretBinding,
	Credentials:          []CredentialsKind{{Kind: kinds.Secret, ProviderLabels: true}, {Kind: kinds.WorkloadIdentity}},
	CredentialsFinalizer: "gardener.cloud/testbinding",
	ReferenceLabel:       "reference.gardener.cloud/testbinding",
	ShootField:           []string{"spec", "secretBindingName"},
	ShootUses:            func(s *gardencorev1beta1.Shoot) string { return ptr.Deref(s.Spec.SecretBindingName, "") },
}

var (
	secret      = CredentialsKind{Kind: kinds.Secret, ProviderLabels: true}
	identity    = CredentialsKind{Kind: kinds.WorkloadIdentity}
	credentials = Reference{GroupVersionKind: kinds.Secret.GroupVersionKind, Key: function.Key{Namespace: "garden-a", Name: "cloud"}}
)

func metadata(labels map[string]string, finalizers ...string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "cloud", Namespace: "garden-a", Labels: labels, Finalizers: finalizers}}
}

func TestProtect(t *testing.T) {
	b := Binding{Key: function.Key{Namespace: "garden-a", Name: "b"}, Credentials: credentials, ProviderTypes: []string{"aws", "gcp"}}
	for _, tc := range []struct {
		name           string
		kind           CredentialsKind
		obj            *metav1.PartialObjectMetadata
		wantLabels     map[string]string
		wantFinalizers []string
	}{
		{
			name: "unprotected secret gets finalizer, reference label and one provider label per type",
			kind: secret, obj: metadata(nil),
			wantLabels: map[string]string{
				"reference.gardener.cloud/testbinding": "true",
				"provider.shoot.gardener.cloud/aws":    "true",
				"provider.shoot.gardener.cloud/gcp":    "true",
			},
			wantFinalizers: []string{"gardener.cloud/testbinding"},
		},
		{
			name: "the legacy finalizer is replaced, other finalizers and labels stay",
			kind: secret, obj: metadata(map[string]string{"team": "a"}, "gardener.cloud/gardener", "other"),
			wantLabels: map[string]string{
				"team":                                 "a",
				"reference.gardener.cloud/testbinding": "true",
				"provider.shoot.gardener.cloud/aws":    "true",
				"provider.shoot.gardener.cloud/gcp":    "true",
			},
			wantFinalizers: []string{"other", "gardener.cloud/testbinding"},
		},
		{
			name: "labels are only added where their key is missing",
			kind: secret, obj: metadata(map[string]string{"reference.gardener.cloud/testbinding": "false", "provider.shoot.gardener.cloud/aws": "yes"}),
			wantLabels: map[string]string{
				"reference.gardener.cloud/testbinding": "false",
				"provider.shoot.gardener.cloud/aws":    "yes",
				"provider.shoot.gardener.cloud/gcp":    "true",
			},
			wantFinalizers: []string{"gardener.cloud/testbinding"},
		},
		{
			name: "credentials being deleted cannot gain the finalizer, but are labelled",
			kind: secret, obj: func() *metav1.PartialObjectMetadata {
				m := metadata(nil, "other")
				m.DeletionTimestamp = ptr.To(metav1.Now())
				return m
			}(),
			wantLabels: map[string]string{
				"reference.gardener.cloud/testbinding": "true",
				"provider.shoot.gardener.cloud/aws":    "true",
				"provider.shoot.gardener.cloud/gcp":    "true",
			},
			wantFinalizers: []string{"other"},
		},
		{
			name: "a workload identity gets no provider label and loses those of the binding's types",
			kind: identity, obj: metadata(map[string]string{"provider.shoot.gardener.cloud/aws": "true", "provider.shoot.gardener.cloud/azure": "true"}),
			wantLabels: map[string]string{
				"reference.gardener.cloud/testbinding": "true",
				"provider.shoot.gardener.cloud/azure":  "true",
			},
			wantFinalizers: []string{"gardener.cloud/testbinding"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testKind.Protect(tc.obj, tc.kind, b)
			assert.Equal(t, tc.wantLabels, tc.obj.Labels)
			assert.Equal(t, tc.wantFinalizers, tc.obj.Finalizers)
		})
	}
}

func TestRelease(t *testing.T) {
	obj := metadata(map[string]string{
		"team":                                 "a",
		"reference.gardener.cloud/testbinding": "true",
		"reference.gardener.cloud/other":       "true",
		"provider.shoot.gardener.cloud/aws":    "true",
		"provider.shoot.gardener.cloud/gcp":    "true",
	}, "gardener.cloud/testbinding", "gardener.cloud/gardener", "gardener.cloud/other")
	testKind.Release(obj)
	assert.Equal(t, map[string]string{"team": "a", "reference.gardener.cloud/other": "true"}, obj.Labels,
		"the other kind's reference label stays; every provider label goes")
	assert.Equal(t, []string{"gardener.cloud/other"}, obj.Finalizers)

	bare := metadata(nil)
	testKind.Release(bare)
	assert.Empty(t, bare.Labels)
	assert.Empty(t, bare.Finalizers)
}

func TestMayReleaseCredentials(t *testing.T) {
	self := Binding{Key: function.Key{Namespace: "garden-a", Name: "b"}, Deleting: true, Credentials: credentials}
	otherNamespace := function.Key{Namespace: "garden-b", Name: "b"}
	otherSecret := credentials
	otherSecret.Name = "other"
	identityOfSameName := credentials
	identityOfSameName.GroupVersionKind = kinds.WorkloadIdentity.GroupVersionKind
	for _, tc := range []struct {
		name  string
		peers []Binding
		want  bool
	}{
		{name: "no binding but itself", peers: []Binding{self}, want: true},
		{name: "another binding (in another namespace) references the same secret", peers: []Binding{self, {Key: otherNamespace, Credentials: credentials}}, want: false},
		{name: "the other binding is being deleted too", peers: []Binding{self, {Key: otherNamespace, Deleting: true, Credentials: credentials}}, want: true},
		{name: "the other binding references another secret", peers: []Binding{self, {Key: otherNamespace, Credentials: otherSecret}}, want: true},
		{name: "the other binding references another kind of the same name", peers: []Binding{self, {Key: otherNamespace, Credentials: identityOfSameName}}, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, MayReleaseCredentials(self, tc.peers))
		})
	}
}

func TestQuotasToRelease(t *testing.T) {
	q1, q2, q3 := function.Key{Namespace: "garden", Name: "q1"}, function.Key{Namespace: "garden", Name: "q2"}, function.Key{Namespace: "garden-a", Name: "q1"}
	self := Binding{Key: function.Key{Namespace: "garden-a", Name: "b"}, Deleting: true, Quotas: []function.Key{q1, q2, q3}}
	peers := []Binding{
		self,
		{Key: function.Key{Namespace: "garden-b", Name: "b"}, Quotas: []function.Key{q1}},
		// A binding being deleted still keeps its Quotas labelled (Gardener's rule).
		{Key: function.Key{Namespace: "garden-c", Name: "b"}, Deleting: true, Quotas: []function.Key{q2}},
	}
	assert.Equal(t, []function.Key{q3}, QuotasToRelease(self, peers))
	assert.Equal(t, []function.Key{q1, q2, q3}, QuotasToRelease(self, []Binding{self}))
}

func TestShootsUsing(t *testing.T) {
	b := Binding{Key: function.Key{Namespace: "garden-a", Name: "b"}}
	shoot := func(namespace, name string, binding *string, deleting bool) gardencorev1beta1.Shoot {
		s := gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
		s.Spec.SecretBindingName = binding
		if deleting {
			s.DeletionTimestamp = &metav1.Time{}
		}
		return s
	}
	shoots := []gardencorev1beta1.Shoot{
		shoot("garden-a", "uses", ptr.To("b"), false),
		shoot("garden-a", "deleting", ptr.To("b"), true),
		shoot("garden-a", "other-binding", ptr.To("c"), false),
		shoot("garden-a", "none", nil, false),
		shoot("garden-b", "same-name-elsewhere", ptr.To("b"), false),
	}
	assert.Equal(t, []string{"garden-a/uses", "garden-a/deleting"}, testKind.ShootsUsing(b, shoots), "a Shoot being deleted still uses its binding")
	assert.Empty(t, testKind.ShootsUsing(b, shoots[2:]))
}

func TestBindingPredicate(t *testing.T) {
	binding := func(finalizers []string, deleting bool) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetFinalizers(finalizers)
		if deleting {
			u.SetDeletionTimestamp(ptr.To(metav1.Now()))
		}
		return u
	}
	assert.True(t, BindingPredicate(function.Event{Object: binding(nil, false)}), "new binding")
	assert.False(t, BindingPredicate(function.Event{Object: binding([]string{"gardener"}, false)}), "protected binding: its references are immutable")
	assert.True(t, BindingPredicate(function.Event{Object: binding([]string{"gardener"}, true)}), "binding being deleted")
	assert.False(t, BindingPredicate(function.Event{Object: binding(nil, false), Deleted: true}), "binding gone")
	assert.True(t, BindingPredicate(function.Event{}), "an event without the object")
}

func TestShootPredicate(t *testing.T) {
	shoot := func(binding string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		if binding != "" {
			_ = unstructured.SetNestedField(u.Object, binding, "spec", "secretBindingName")
		}
		return u
	}
	assert.True(t, testKind.ShootPredicate(function.Event{Deleted: true, Object: shoot("b")}))
	assert.False(t, testKind.ShootPredicate(function.Event{Deleted: true, Object: shoot("")}), "a Shoot without a binding of the kind")
	assert.False(t, testKind.ShootPredicate(function.Event{Object: shoot("b")}), "a Shoot that still exists")
	assert.False(t, testKind.ShootPredicate(function.Event{Deleted: true}), "an event without the object names no binding")
}

func TestKeyInNamespace(t *testing.T) {
	assert.Equal(t, function.Key{Namespace: "garden-a", Name: "s"}, KeyInNamespace("garden-a", "", "s"))
	assert.Equal(t, function.Key{Namespace: "garden", Name: "s"}, KeyInNamespace("garden-a", "garden", "s"))
}
