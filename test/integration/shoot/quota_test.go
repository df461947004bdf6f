package shoot_test

import (
	"context"
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	securityv1alpha1 "github.com/gardener/gardener/pkg/apis/security/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gardener-knative/gardener-knative/pkg/controller/shoot/quota"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
)

// quotaWithLifetime creates a Quota in the fixture's namespace; days nil means no lifetime.
func (f *fixture) quotaWithLifetime(t testing.TB, name string, days *int32) corev1.ObjectReference {
	t.Helper()
	q := &gardencorev1beta1.Quota{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns}}
	q.Spec.ClusterLifetimeDays = days
	q.Spec.Scope = corev1.ObjectReference{APIVersion: "v1", Kind: "Secret"}
	require.NoError(t, env.Client.Create(context.Background(), q))
	return corev1.ObjectReference{Namespace: f.ns, Name: name}
}

func (f *fixture) secretBindingWithQuotas(t testing.TB, name string, quotas ...corev1.ObjectReference) {
	t.Helper()
	b := &gardencorev1beta1.SecretBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns}, Quotas: quotas}
	b.SecretRef = corev1.SecretReference{Name: "credentials", Namespace: f.ns}
	require.NoError(t, env.Client.Create(context.Background(), b))
}

func (f *fixture) credentialsBindingWithQuotas(t testing.TB, name string, quotas ...corev1.ObjectReference) {
	t.Helper()
	b := &securityv1alpha1.CredentialsBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns}, Quotas: quotas}
	b.CredentialsRef = corev1.ObjectReference{APIVersion: "v1", Kind: "Secret", Name: "credentials", Namespace: f.ns}
	b.Provider = securityv1alpha1.CredentialsBindingProvider{Type: "local"}
	require.NoError(t, env.Client.Create(context.Background(), b))
}

func expiration(t testing.TB, s *gardencorev1beta1.Shoot) (string, bool) {
	t.Helper()
	v, ok := fresh(t, s).Annotations[quota.ExpirationAnnotation]
	return v, ok
}

func TestQuotaLifetimeExpiresShoots(t *testing.T) {
	f := newFixture(t, functiontest.AsFunction())
	week := f.quotaWithLifetime(t, "week", ptr.To[int32](7))
	threeDays := f.quotaWithLifetime(t, "three-days", ptr.To[int32](3))
	unlimited := f.quotaWithLifetime(t, "unlimited", nil)
	f.secretBindingWithQuotas(t, "trial", week, threeDays, unlimited)
	f.credentialsBindingWithQuotas(t, "unlimited", unlimited)

	trial := f.shootWithSpec(t, "trial", func(s *gardencorev1beta1.Shoot) { s.Spec.SecretBindingName = ptr.To("trial") })
	f.Send("add", trial)
	value, ok := expiration(t, trial)
	require.True(t, ok)
	assert.Equal(t, fresh(t, trial).CreationTimestamp.Add(3*24*time.Hour).UTC().Format(time.RFC3339), value, "creation plus the shortest lifetime")

	// A user extended the Shoot's life (gardener-apiserver admits up to the lifetime from now).
	extended := f.shootWithSpec(t, "extended", func(s *gardencorev1beta1.Shoot) {
		s.Spec.SecretBindingName = ptr.To("trial")
		s.Annotations = map[string]string{quota.ExpirationAnnotation: time.Now().Add(5 * 24 * time.Hour).UTC().Format(time.RFC3339)}
	})
	// No Quota limits this one: an annotation a user set goes.
	free := f.shootWithSpec(t, "free", func(s *gardencorev1beta1.Shoot) {
		s.Spec.CredentialsBindingName = ptr.To("unlimited")
		s.Annotations = map[string]string{quota.ExpirationAnnotation: "2030-01-01T00:00:00Z"}
	})
	f.Send("add", free) // its event reads its CredentialsBinding
	_, ok = expiration(t, free)
	assert.False(t, ok)
	f.Sweep(quota.Name)
	assert.False(t, gone(t, trial))

	f.Clock.Step(3*24*time.Hour + time.Minute)
	f.Sweep(quota.Name)
	assert.True(t, gone(t, trial), "its lifetime has expired")
	assert.False(t, gone(t, extended), "the user's extension is honoured")
	assert.False(t, gone(t, free))

	f.Clock.Step(2 * 24 * time.Hour)
	f.Sweep(quota.Name)
	assert.True(t, gone(t, extended))
	assert.False(t, gone(t, free))

	counts := f.Measure(func() { f.Sweep(quota.Name) })
	assert.Equal(t, map[string]int{"list": shootPages(t) + 3}, counts, "a sweep with nothing changed: one (paginated) LIST each of Shoots, SecretBindings, CredentialsBindings and Quotas, no write")
}

// An expired Shoot with a finalizer (gardenlet's) shows the confirmed deletion.
func TestQuotaConfirmsTheDeletion(t *testing.T) {
	f := newFixture(t, functiontest.AsFunction())
	f.secretBindingWithQuotas(t, "trial", f.quotaWithLifetime(t, "day", ptr.To[int32](1)))
	s := f.shootWithSpec(t, "expired", func(s *gardencorev1beta1.Shoot) {
		s.Spec.SecretBindingName = ptr.To("trial")
		s.Finalizers = []string{gardencorev1beta1.GardenerName}
		s.Annotations = map[string]string{quota.ExpirationAnnotation: time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)}
	})
	f.Send("add", s)
	s = fresh(t, s)
	assert.NotNil(t, s.DeletionTimestamp)
	assert.Equal(t, "true", s.Annotations[v1beta1constants.ConfirmationDeletion])
	assert.NotEmpty(t, s.Annotations[v1beta1constants.GardenerTimestamp])

	counts := f.Measure(func() { f.Sweep(quota.Name) })
	assert.NotContains(t, counts, "delete", "a Shoot being deleted is not deleted again")
	assert.NotContains(t, counts, "patch")
	s.Finalizers = nil
	require.NoError(t, env.Client.Update(context.Background(), s))
}
