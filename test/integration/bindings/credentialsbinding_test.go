package bindings_test

import (
	"context"
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	securityv1alpha1 "github.com/gardener/gardener/pkg/apis/security/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/credentialsbinding"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
)

const (
	credentialsBindingFinalizer = "gardener.cloud/credentialsbinding"
	credentialsBindingLabel     = "reference.gardener.cloud/credentialsbinding"
)

func (f *fixture) credentialsBinding(t testing.TB, name string, credentials client.Object, providerType string, quotas ...string) *securityv1alpha1.CredentialsBinding {
	t.Helper()
	gvk := functiontest.ToUnstructured(t, credentials).GroupVersionKind()
	cb := &securityv1alpha1.CredentialsBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns}}
	cb.CredentialsRef = corev1.ObjectReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: credentials.GetName(), Namespace: credentials.GetNamespace()}
	cb.Provider.Type = providerType
	for _, q := range quotas {
		cb.Quotas = append(cb.Quotas, f.quotaRef(q))
	}
	return create(t, cb)
}

func (f *fixture) workloadIdentity(t testing.TB, name string, labels map[string]string) *securityv1alpha1.WorkloadIdentity {
	return create(t, &securityv1alpha1.WorkloadIdentity{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns, Labels: labels}})
}

func usesCredentialsBinding(name string) func(*gardencorev1beta1.Shoot) {
	return func(s *gardencorev1beta1.Shoot) { s.Spec.CredentialsBindingName = ptr.To(name) }
}

func assertProtected(t *testing.T, obj client.Object, wantLabels map[string]string) {
	t.Helper()
	obj = fresh(t, obj)
	assert.Equal(t, []string{credentialsBindingFinalizer}, obj.GetFinalizers(), "%s", obj.GetName())
	assert.Equal(t, wantLabels, obj.GetLabels(), "%s", obj.GetName())
}

func TestCredentialsBindingLifecycle(t *testing.T) {
	for _, tc := range []struct {
		name        string
		credentials func(f *fixture) client.Object
		wantLabels  map[string]string
		// keptLabels are the labels the release leaves: those of others.
		keptLabels map[string]string
	}{
		{
			name:        "Secret",
			credentials: func(f *fixture) client.Object { return f.secret(t, "cloud") },
			wantLabels:  map[string]string{credentialsBindingLabel: "true", "provider.shoot.gardener.cloud/aws": "true"},
		},
		{
			name: "InternalSecret",
			credentials: func(f *fixture) client.Object {
				return create(t, &gardencorev1beta1.InternalSecret{ObjectMeta: metav1.ObjectMeta{Name: "cloud", Namespace: f.ns}})
			},
			wantLabels: map[string]string{credentialsBindingLabel: "true", "provider.shoot.gardener.cloud/aws": "true"},
		},
		{
			name: "WorkloadIdentity: no provider label, the binding's type's one removed",
			credentials: func(f *fixture) client.Object {
				return f.workloadIdentity(t, "cloud", map[string]string{"provider.shoot.gardener.cloud/aws": "true", "provider.extensions.gardener.cloud/aws": "true"})
			},
			wantLabels: map[string]string{credentialsBindingLabel: "true", "provider.extensions.gardener.cloud/aws": "true"},
			keptLabels: map[string]string{"provider.extensions.gardener.cloud/aws": "true"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, credentialsbinding.Function)
			credentials := tc.credentials(f)
			quota := f.quota(t, "trial")
			cb := f.credentialsBinding(t, "binding", credentials, "aws", "trial")

			f.Send("add", cb)
			assert.Equal(t, []string{"gardener"}, fresh(t, cb).Finalizers)
			assertProtected(t, credentials, tc.wantLabels)
			assert.Equal(t, map[string]string{credentialsBindingLabel: "true"}, fresh(t, quota).Labels)

			shoot := f.shoot(t, "shoot", usesCredentialsBinding("binding"))
			f.deleteAndSend(t, cb)
			assert.False(t, gone(t, cb), "a Shoot uses the binding")
			assert.Equal(t, []string{"Cannot delete CredentialsBinding, because the following Shoots are still referencing it: [" + f.ns + "/shoot]"},
				warnings(t, cb, "ResourceReferenced"))

			f.deleteShoot(t, shoot)
			assert.True(t, gone(t, cb))
			credentials = fresh(t, credentials)
			assert.Empty(t, credentials.GetFinalizers())
			assert.Equal(t, tc.keptLabels, credentials.GetLabels(), "only the labels of bindings are removed")
			assertReleased(t, fresh(t, quota))
		})
	}
}

// A Secret two kinds of bindings reference carries both finalizers and labels; each kind
// releases only its own. The function runs with its RBAC: Secret credentials are read and
// patched.
func TestCredentialsAndSecretBindingShareASecret(t *testing.T) {
	f := newFixture(t, credentialsbinding.Function, functiontest.AsFunction())
	secret := f.secret(t, "cloud")
	cb := f.credentialsBinding(t, "credentials", secret, "aws")
	f.Send("add", cb)
	secret = fresh(t, secret)
	secret.Finalizers = append(secret.Finalizers, secretBindingFinalizer)
	secret.Labels[secretBindingLabel] = "true"
	require.NoError(t, env.Client.Update(context.Background(), secret))

	f.deleteAndSend(t, cb)
	assert.True(t, gone(t, cb))
	secret = fresh(t, secret)
	assert.Equal(t, []string{secretBindingFinalizer}, secret.Finalizers)
	assert.Equal(t, map[string]string{secretBindingLabel: "true"}, secret.Labels)
}

func TestCredentialsBindingSweepConverges(t *testing.T) {
	f := newFixture(t, credentialsbinding.Function)
	identity := f.workloadIdentity(t, "identity", nil)
	quota := f.quota(t, "trial")
	cb := f.credentialsBinding(t, "binding", identity, "gcp", "trial")
	shoot := f.shoot(t, "shoot", usesCredentialsBinding("binding"))

	f.Sweep("resync")
	assert.Equal(t, []string{"gardener"}, fresh(t, cb).Finalizers)
	assertProtected(t, identity, map[string]string{credentialsBindingLabel: "true"})
	assert.Equal(t, map[string]string{credentialsBindingLabel: "true"}, fresh(t, quota).Labels)

	require.NoError(t, env.Client.Delete(context.Background(), cb))
	f.Sweep("resync")
	assert.False(t, gone(t, cb), "a Shoot uses the binding")
	require.NoError(t, env.Client.Delete(context.Background(), shoot))
	f.Sweep("resync")
	assert.True(t, gone(t, cb))
	assertReleased(t, fresh(t, identity), fresh(t, quota))
}

func TestCredentialsBindingRunsWithItsRBAC(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, credentialsbinding.Function, functiontest.AsFunction())
	identity := f.workloadIdentity(t, "identity", nil)
	internal := create(t, &gardencorev1beta1.InternalSecret{ObjectMeta: metav1.ObjectMeta{Name: "internal", Namespace: f.ns}})
	quota := f.quota(t, "trial")
	viaEvents := f.credentialsBinding(t, "events", identity, "gcp", "trial")
	viaSweep := f.credentialsBinding(t, "sweep", internal, "gcp")
	f.Send("add", viaEvents)
	f.Sweep("resync")
	assertProtected(t, identity, map[string]string{credentialsBindingLabel: "true"})
	assertProtected(t, internal, map[string]string{credentialsBindingLabel: "true", "provider.shoot.gardener.cloud/gcp": "true"})

	shoot := f.shoot(t, "shoot", usesCredentialsBinding("events"))
	f.deleteAndSend(t, viaEvents)
	assert.NotEmpty(t, warnings(t, viaEvents, "ResourceReferenced"))
	// The event again (redelivered): the Warning is counted, on the Event recorded before.
	f.Send("update", viaEvents)
	assert.Equal(t, int32(2), warningCount(t, viaEvents, "ResourceReferenced"))
	f.deleteShoot(t, shoot)
	assert.True(t, gone(t, viaEvents))
	require.NoError(t, env.Client.Delete(ctx, viaSweep))
	f.Sweep("resync")
	assert.True(t, gone(t, viaSweep))
	assertReleased(t, fresh(t, identity), fresh(t, internal), fresh(t, quota))

	c, _, err := env.CountingClient("system:serviceaccount:gardener-knative:credentialsbinding")
	require.NoError(t, err)
	err = c.Update(ctx, fresh(t, identity))
	assert.True(t, apierrors.IsForbidden(err), "the function only patches, got %v", err)
}

func TestCredentialsBindingRequestCost(t *testing.T) {
	f := newFixture(t, credentialsbinding.Function)
	identity := f.workloadIdentity(t, "identity", nil)
	f.quota(t, "trial")
	cb := f.credentialsBinding(t, "binding", identity, "gcp", "trial")
	assert.Equal(t, map[string]int{"get": 3, "patch": 3}, f.Measure(func() { f.Send("add", cb) }),
		"a new binding: GET binding, WorkloadIdentity and Quota metadata, PATCH each")
	assert.Empty(t, f.Measure(func() { f.Send("update", fresh(t, cb)) }), "an update of a protected binding: filtered")
	counts := f.Measure(func() { f.Sweep("resync") })
	assert.Equal(t, map[string]int{"list": 7}, counts, "Shoots, Quotas, Secrets, InternalSecrets, WorkloadIdentities, and one page of bindings held and one streamed")
}
