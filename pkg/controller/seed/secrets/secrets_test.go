package secrets

import (
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func TestSelector(t *testing.T) {
	for role, shared := range map[string]bool{
		"default-domain": true, "internal-domain": true, "alerting": true, "global-monitoring": true, "openvpn-diffie-hellman": true,
		"kubeconfig": false, "ssh-keypair": false, "monitoring": false, "helm-pull-secret": false, "oci-ca-bundle": false, "resource-reference": false,
	} {
		assert.Equal(t, shared, Selector.Matches(labels.Set{"gardener.cloud/role": role}), role)
	}
	assert.False(t, Selector.Matches(labels.Set{"other": "label"}), "no role, not shared")
	_, err := metav1.ParseToLabelSelector(Selector.String())
	assert.NoError(t, err, "the watch's selector must be expressible for the source: %s", Selector.String())
}

func TestNewNamespace(t *testing.T) {
	seed := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "s1", UID: "uid-1"}}
	ns := NewNamespace(seed, NamespaceName("s1"))
	assert.Equal(t, "seed-s1", ns.Name)
	assert.Equal(t, map[string]string{"gardener.cloud/role": "seed"}, ns.Labels)
	assert.True(t, metav1.IsControlledBy(ns, seed))
	ref := metav1.GetControllerOf(ns)
	assert.Equal(t, gardencorev1beta1.SchemeGroupVersion.String(), ref.APIVersion)
	assert.Equal(t, "Seed", ref.Kind)
}

func TestApplyOriginal(t *testing.T) {
	original := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"gardener.cloud/role": "alerting"}, Annotations: map[string]string{"a": "b"}},
		Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"k": []byte("v")}}
	dst := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "seed-s1", Labels: map[string]string{"stale": "label"}}, Data: map[string][]byte{"old": nil}}
	ApplyOriginal(dst, original)
	assert.Equal(t, original.Labels, dst.Labels)
	assert.Equal(t, original.Annotations, dst.Annotations)
	assert.Equal(t, original.Type, dst.Type)
	assert.Equal(t, original.Data, dst.Data)
	assert.Equal(t, "seed-s1", dst.Namespace)
}

func TestPredicates(t *testing.T) {
	assert.True(t, SeedPredicate(function.Event{Created: true}))
	assert.False(t, SeedPredicate(function.Event{}), "updates change nothing the reconciler decides on")
	assert.True(t, GardenSecretPredicate(function.Event{Key: function.Key{Namespace: "garden", Name: "x"}}))
	assert.False(t, GardenSecretPredicate(function.Event{Key: function.Key{Namespace: "seed-s1", Name: "x"}}))
}
