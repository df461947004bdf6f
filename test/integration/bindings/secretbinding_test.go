package bindings_test

import (
	"context"
	"fmt"
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gardener-knative/gardener-knative/pkg/controller/secretbinding"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
)

const (
	secretBindingFinalizer = "gardener.cloud/secretbinding"
	secretBindingLabel     = "reference.gardener.cloud/secretbinding"
)

func (f *fixture) secretBinding(t testing.TB, name, secret, providerType string, quotas ...string) *gardencorev1beta1.SecretBinding {
	sb := &gardencorev1beta1.SecretBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns}}
	sb.SecretRef = corev1.SecretReference{Name: secret, Namespace: f.ns}
	sb.Provider = &gardencorev1beta1.SecretBindingProvider{Type: providerType}
	for _, q := range quotas {
		sb.Quotas = append(sb.Quotas, f.quotaRef(q))
	}
	return create(t, sb)
}

func usesSecretBinding(name string) func(*gardencorev1beta1.Shoot) {
	return func(s *gardencorev1beta1.Shoot) { s.Spec.SecretBindingName = ptr.To(name) }
}

// assertSecretProtected asserts what a SecretBinding of the given provider types gives its Secret.
func assertSecretProtected(t *testing.T, s *corev1.Secret, types ...string) {
	t.Helper()
	s = fresh(t, s)
	assert.Equal(t, []string{secretBindingFinalizer}, s.Finalizers)
	want := map[string]string{secretBindingLabel: "true"}
	for _, typ := range types {
		want["provider.shoot.gardener.cloud/"+typ] = "true"
	}
	assert.Equal(t, want, s.Labels)
}

func assertReleased(t *testing.T, objs ...interface {
	GetFinalizers() []string
	GetLabels() map[string]string
}) {
	t.Helper()
	for _, o := range objs {
		assert.Empty(t, o.GetFinalizers())
		assert.Empty(t, o.GetLabels())
	}
}

func TestSecretBindingLifecycle(t *testing.T) {
	f := newFixture(t, secretbinding.Function)
	secret := f.secret(t, "cloud")
	quota := f.quota(t, "trial")
	sb := f.secretBinding(t, "binding", "cloud", "aws,gcp", "trial")

	f.Send("add", sb)
	assert.Equal(t, []string{"gardener"}, fresh(t, sb).Finalizers)
	assertSecretProtected(t, secret, "aws", "gcp")
	assert.Equal(t, map[string]string{secretBindingLabel: "true"}, fresh(t, quota).Labels)
	assert.Empty(t, fresh(t, quota).Finalizers, "Quotas are labelled only: the quota function holds their finalizer")

	// Whoever deletes the Secret first only marks it: it goes with the binding's release.
	require.NoError(t, env.Client.Delete(context.Background(), secret))
	assert.False(t, gone(t, secret), "the finalizer keeps a referenced Secret")

	shoot := f.shoot(t, "shoot", usesSecretBinding("binding"))
	f.deleteAndSend(t, sb)
	assert.False(t, gone(t, sb), "a Shoot uses the binding")
	assert.Equal(t, []string{"Cannot delete SecretBinding, because the following Shoots are still referencing it: [" + f.ns + "/shoot]"},
		warnings(t, sb, "ResourceReferenced"))

	f.deleteShoot(t, shoot)
	assert.True(t, gone(t, sb), "the deletion of its last Shoot releases the binding")
	assert.True(t, gone(t, secret), "released, the Secret marked for deletion goes")
	assertReleased(t, fresh(t, quota))
}

func TestSecretBindingReleaseKeepsWhatOthersNeed(t *testing.T) {
	f := newFixture(t, secretbinding.Function)
	secret := f.secret(t, "cloud")
	quota := f.quota(t, "trial")
	first := f.secretBinding(t, "first", "cloud", "aws", "trial")
	second := f.secretBinding(t, "second", "cloud", "aws", "trial")
	f.Send("add", first)
	f.Send("add", second)

	f.deleteAndSend(t, first)
	assert.True(t, gone(t, first))
	assertSecretProtected(t, secret, "aws")
	assert.Equal(t, map[string]string{secretBindingLabel: "true"}, fresh(t, quota).Labels)

	f.deleteAndSend(t, second)
	assert.True(t, gone(t, second))
	assertReleased(t, fresh(t, secret), fresh(t, quota))
}

// A Secret referenced by a binding that is itself being deleted is not protected by it any more
// (Gardener's rule): the release of the other binding releases the Secret.
func TestSecretBindingReleaseIgnoresBindingsBeingDeleted(t *testing.T) {
	f := newFixture(t, secretbinding.Function)
	secret := f.secret(t, "cloud")
	first := f.secretBinding(t, "first", "cloud", "aws")
	second := f.secretBinding(t, "second", "cloud", "aws")
	f.Send("add", first)
	f.Send("add", second)
	shoot := f.shoot(t, "shoot", usesSecretBinding("second"))

	f.deleteAndSend(t, second)
	f.deleteAndSend(t, first)
	assert.True(t, gone(t, first))
	assert.False(t, gone(t, second))
	assertReleased(t, fresh(t, secret))

	f.deleteShoot(t, shoot)
	assert.True(t, gone(t, second))
}

// Events can be dropped, and objects can exist before the source starts: the resync sweep alone
// protects and releases.
func TestSecretBindingSweepConverges(t *testing.T) {
	f := newFixture(t, secretbinding.Function)
	secret := f.secret(t, "cloud")
	quota := f.quota(t, "trial")
	labelled := f.secret(t, "labelled")
	labelled.Labels = map[string]string{secretBindingLabel: "true"} // in the sweep's list, without the finalizer
	require.NoError(t, env.Client.Update(context.Background(), labelled))
	sb := f.secretBinding(t, "binding", "cloud", "aws", "trial")
	other := f.secretBinding(t, "other", "labelled", "gcp")
	shoot := f.shoot(t, "shoot", usesSecretBinding("binding"))

	f.Sweep("resync")
	assert.Equal(t, []string{"gardener"}, fresh(t, sb).Finalizers)
	assertSecretProtected(t, secret, "aws")
	assertSecretProtected(t, labelled, "gcp")
	assert.Equal(t, map[string]string{secretBindingLabel: "true"}, fresh(t, quota).Labels)
	assert.Equal(t, []string{"gardener"}, fresh(t, other).Finalizers)

	require.NoError(t, env.Client.Delete(context.Background(), sb))
	f.Sweep("resync")
	assert.False(t, gone(t, sb), "a Shoot uses the binding")
	require.NoError(t, env.Client.Delete(context.Background(), shoot))
	f.Sweep("resync")
	assert.True(t, gone(t, sb))
	assertReleased(t, fresh(t, secret), fresh(t, quota))
	assertSecretProtected(t, labelled, "gcp")
}

// The function runs as its own ServiceAccount with exactly the RBAC of its declaration: events,
// the Shoot mapping, the sweep, the release and the Warning event must all work with it.
func TestSecretBindingRunsWithItsRBAC(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, secretbinding.Function, functiontest.AsFunction())
	secret := f.secret(t, "cloud")
	quota := f.quota(t, "trial")
	sb := f.secretBinding(t, "binding", "cloud", "aws", "trial")
	f.Send("add", sb)
	assertSecretProtected(t, secret, "aws")

	shoot := f.shoot(t, "shoot", usesSecretBinding("binding"))
	f.deleteAndSend(t, sb)
	assert.NotEmpty(t, warnings(t, sb, "ResourceReferenced"))
	// The event again (redelivered): the Warning is counted, on the Event recorded before.
	f.Send("update", sb)
	assert.Equal(t, int32(2), warningCount(t, sb, "ResourceReferenced"))
	require.NoError(t, env.Client.Delete(ctx, shoot))
	f.Sweep("resync")
	assert.True(t, gone(t, sb))
	assertReleased(t, fresh(t, secret), fresh(t, quota))

	c, _, err := env.CountingClient("system:serviceaccount:gardener-knative:secretbinding")
	require.NoError(t, err)
	err = c.Delete(ctx, fresh(t, secret))
	assert.True(t, apierrors.IsForbidden(err), "the function may not delete Secrets, got %v", err)
}

// TestSecretBindingRequestCost pins what events and sweeps cost in API requests; the numbers are
// the ones docs/functions/secretbinding.md reports.
func TestSecretBindingRequestCost(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, secretbinding.Function)
	f.secret(t, "cloud")
	f.quota(t, "trial")
	sb := f.secretBinding(t, "binding", "cloud", "aws", "trial")
	// The first event of a process also asks discovery for the kinds' REST mappings.
	f.Send("add", sb)

	f.secret(t, "cloud-2")
	f.quota(t, "trial-2")
	assert.Equal(t, map[string]int{"get": 3, "patch": 3}, f.Measure(func() { f.Send("add", f.secretBinding(t, "new", "cloud-2", "aws", "trial-2")) }),
		"a new binding: GET binding, Secret and Quota metadata, PATCH each")
	assert.Empty(t, f.Measure(func() { f.Send("update", fresh(t, sb)) }), "an update of a protected binding: filtered, no request")
	unrelated := f.shoot(t, "unrelated", func(*gardencorev1beta1.Shoot) {})
	assert.Empty(t, f.Measure(func() { f.deleteShoot(t, unrelated) }), "deletion of a Shoot without a binding: filtered")
	user := f.shoot(t, "user", usesSecretBinding("binding"))
	assert.Equal(t, map[string]int{"get": 1}, f.Measure(func() { f.deleteShoot(t, user) }),
		"deletion of a Shoot whose binding is not being deleted: one metadata-only GET of the binding")

	user = f.shoot(t, "user", usesSecretBinding("binding"))
	assert.Equal(t, map[string]int{"get": 1, "list": 1, "create": 1}, f.Measure(func() { f.deleteAndSend(t, sb) }),
		"deletion of a binding in use: GET binding, LIST the namespace's Shoots, create the Warning event")
	assert.Equal(t, map[string]int{"get": 4, "list": 3, "patch": 3}, f.Measure(func() { f.deleteShoot(t, user) }),
		"release: GET binding metadata (mapping) and binding, LIST Shoots and all SecretBindings, GET and PATCH Secret and Quota, LIST the SecretBindings again live (one created meanwhile is protected again), PATCH binding")
	require.True(t, gone(t, sb))

	// A sweep over 1,000 protected bindings: one LIST per related kind and pages of 500
	// bindings, no GET, no write.
	for i := range 998 {
		require.NoError(t, env.Client.Create(ctx, &gardencorev1beta1.SecretBinding{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("binding-%04d", i), Namespace: f.ns},
			SecretRef:  corev1.SecretReference{Name: "cloud", Namespace: f.ns},
			Provider:   &gardencorev1beta1.SecretBindingProvider{Type: "aws"},
			Quotas:     []corev1.ObjectReference{f.quotaRef("trial")},
		}))
	}
	f.Sweep("resync") // protects the new ones
	all := &gardencorev1beta1.SecretBindingList{}
	require.NoError(t, env.Client.List(ctx, all))
	counts := f.Measure(func() { f.Sweep("resync") })
	assert.Equal(t, map[string]int{"list": 3 + 2*((len(all.Items)+499)/500)}, counts, "Shoots, Secrets and Quotas, %d bindings in pages of 500 held, and the same streamed", len(all.Items))
	t.Logf("no-op sweep over %d SecretBindings: %v", len(all.Items), counts)
}
