package binding

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/scheme"
)

// secretBindingKind is testKind with the SecretBinding's accessors, for reconciles on a fake client.
var secretBindingKind = func() Kind {
	k := testKind
	k.New = func() client.Object { return &gardencorev1beta1.SecretBinding{} }
	k.NewList = func() client.ObjectList { return &gardencorev1beta1.SecretBindingList{} }
	k.Decode = func(obj client.Object) Binding {
		sb := obj.(*gardencorev1beta1.SecretBinding)
		b := Binding{Key: client.ObjectKeyFromObject(sb), Deleting: sb.DeletionTimestamp != nil, Credentials: Reference{
			GroupVersionKind: corev1.SchemeGroupVersion.WithKind("Secret"),
			Key:              KeyInNamespace(sb.Namespace, sb.SecretRef.Namespace, sb.SecretRef.Name),
		}, ProviderTypes: []string{"aws"}}
		for _, q := range sb.Quotas {
			b.Quotas = append(b.Quotas, KeyInNamespace(sb.Namespace, q.Namespace, q.Name))
		}
		return b
	}
	return k
}()

type recordedEvents []string

func (r *recordedEvents) Event(_ context.Context, obj client.Object, eventType, reason, message string) {
	*r = append(*r, fmt.Sprintf("%s %s %s: %s", eventType, reason, obj.GetName(), message))
}

func (r *recordedEvents) Eventf(ctx context.Context, obj client.Object, eventType, reason, format string, args ...any) {
	r.Event(ctx, obj, eventType, reason, fmt.Sprintf(format, args...))
}

func newSecretBinding(name string, quotas ...string) *gardencorev1beta1.SecretBinding {
	sb := &gardencorev1beta1.SecretBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "garden-a"}}
	sb.SecretRef.Name = "cloud"
	for _, q := range quotas {
		sb.Quotas = append(sb.Quotas, corev1.ObjectReference{Name: q, Namespace: "garden"})
	}
	return sb
}

func reconcile(t *testing.T, c client.Client, events *recordedEvents, name string) error {
	t.Helper()
	r := &Reconciler{Kind: secretBindingKind, Writer: function.NewWriter(c), Live: c, Events: events, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	return r.Reconcile(context.Background(), function.Request{Key: function.Key{Namespace: "garden-a", Name: name}, Reader: c, Trigger: function.ByEvent})
}

func get[T client.Object](t *testing.T, c client.Client, obj T) T {
	t.Helper()
	require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj))
	return obj
}

func TestReconcileProtectsAndReleases(t *testing.T) {
	ctx := context.Background()
	cloud := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cloud", Namespace: "garden-a", Finalizers: []string{"gardener.cloud/gardener"}}}
	quota := &gardencorev1beta1.Quota{ObjectMeta: metav1.ObjectMeta{Name: "trial", Namespace: "garden"}}
	shoot := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: "shoot", Namespace: "garden-a"}}
	shoot.Spec.SecretBindingName = ptr.To("b")
	c := fake.NewClientBuilder().WithScheme(scheme.Gardener).WithObjects(newSecretBinding("b", "trial"), cloud, quota, shoot).Build()
	var events recordedEvents

	require.NoError(t, reconcile(t, c, &events, "b"))
	assert.Equal(t, []string{Finalizer}, get(t, c, newSecretBinding("b")).Finalizers)
	cloud = get(t, c, cloud)
	assert.Equal(t, []string{"gardener.cloud/testbinding"}, cloud.Finalizers, "the legacy finalizer is replaced")
	assert.Equal(t, map[string]string{"reference.gardener.cloud/testbinding": "true", "provider.shoot.gardener.cloud/aws": "true"}, cloud.Labels)
	assert.Equal(t, map[string]string{"reference.gardener.cloud/testbinding": "true"}, get(t, c, quota).Labels)

	// Deletion waits for the Shoot that uses the binding, and says so.
	require.NoError(t, c.Delete(ctx, newSecretBinding("b")))
	require.NoError(t, reconcile(t, c, &events, "b"))
	assert.Equal(t, []string{Finalizer}, get(t, c, newSecretBinding("b")).Finalizers)
	assert.Equal(t, []string{"Warning ResourceReferenced b: Cannot delete SecretBinding, because the following Shoots are still referencing it: [garden-a/shoot]"}, []string(events))

	// Once the Shoot is gone, everything is released and the binding goes.
	require.NoError(t, c.Delete(ctx, shoot))
	require.NoError(t, reconcile(t, c, &events, "b"))
	cloud = get(t, c, cloud)
	assert.Empty(t, cloud.Finalizers)
	assert.Empty(t, cloud.Labels)
	assert.Empty(t, get(t, c, quota).Labels)
	err := c.Get(ctx, client.ObjectKeyFromObject(newSecretBinding("b")), &gardencorev1beta1.SecretBinding{})
	assert.True(t, client.IgnoreNotFound(err) == nil && err != nil, "the binding is gone, got %v", err)

	// A duplicate event finds nothing.
	require.NoError(t, reconcile(t, c, &events, "b"))
}

func TestReleaseKeepsWhatOtherBindingsNeed(t *testing.T) {
	ctx := context.Background()
	cloud := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cloud", Namespace: "garden-a"}}
	quota := &gardencorev1beta1.Quota{ObjectMeta: metav1.ObjectMeta{Name: "trial", Namespace: "garden"}}
	c := fake.NewClientBuilder().WithScheme(scheme.Gardener).WithObjects(newSecretBinding("b", "trial"), newSecretBinding("other", "trial"), cloud, quota).Build()
	var events recordedEvents
	require.NoError(t, reconcile(t, c, &events, "b"))
	require.NoError(t, reconcile(t, c, &events, "other"))

	require.NoError(t, c.Delete(ctx, newSecretBinding("b")))
	require.NoError(t, reconcile(t, c, &events, "b"))
	cloud = get(t, c, cloud)
	assert.Equal(t, []string{"gardener.cloud/testbinding"}, cloud.Finalizers, "the other binding still references the secret")
	assert.Contains(t, cloud.Labels, "reference.gardener.cloud/testbinding")
	assert.Contains(t, get(t, c, quota).Labels, "reference.gardener.cloud/testbinding")
	assert.Empty(t, events)
}

func TestReconcileMissingReferences(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(scheme.Gardener).WithObjects(newSecretBinding("b")).Build()
	var events recordedEvents
	err := reconcile(t, c, &events, "b")
	assert.ErrorContains(t, err, "reading credentials Secret garden-a/cloud", "the Secret may yet be created: the event is retried")

	sb := newSecretBinding("unsupported")
	c = fake.NewClientBuilder().WithScheme(scheme.Gardener).WithObjects(sb).Build()
	k := secretBindingKind
	k.Credentials = []CredentialsKind{identity}
	r := &Reconciler{Kind: k, Writer: function.NewWriter(c), Live: c, Events: &events, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	err = r.Reconcile(context.Background(), function.Request{Key: client.ObjectKeyFromObject(sb), Reader: c, Trigger: function.ByEvent})
	assert.ErrorContains(t, err, "a SecretBinding cannot reference this kind")
}

// A binding created while another one's release runs (after the release listed the bindings,
// before it unprotected their credentials) found the credentials protected and changed nothing:
// the release lists the bindings once more, live, and protects them again.
func TestReleaseProtectsAgainForABindingCreatedMeanwhile(t *testing.T) {
	ctx := context.Background()
	cloud := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cloud", Namespace: "garden-a"}}
	quota := &gardencorev1beta1.Quota{ObjectMeta: metav1.ObjectMeta{Name: "trial", Namespace: "garden"}}
	c := fake.NewClientBuilder().WithScheme(scheme.Gardener).WithObjects(newSecretBinding("b", "trial"), cloud, quota).Build()
	var events recordedEvents
	require.NoError(t, reconcile(t, c, &events, "b"))
	require.NoError(t, c.Delete(ctx, newSecretBinding("b")))

	// The release read the bindings before the new one existed (a snapshot, or a list a moment
	// too early); the new one exists by the time the release has unprotected the credentials.
	stale := fake.NewClientBuilder().WithScheme(scheme.Gardener).WithObjects(get(t, c, newSecretBinding("b"))).Build()
	require.NoError(t, c.Create(ctx, newSecretBinding("new", "trial")))
	r := &Reconciler{Kind: secretBindingKind, Writer: function.NewWriter(c), Live: c, Events: &events, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	require.NoError(t, r.release(ctx, function.Request{Reader: stale, Trigger: function.ByEvent}, get(t, c, newSecretBinding("b")), secretBindingKind.Decode(get(t, c, newSecretBinding("b")))))

	cloud = get(t, c, cloud)
	assert.Equal(t, []string{"gardener.cloud/testbinding"}, cloud.Finalizers, "protected again for the new binding")
	assert.Contains(t, cloud.Labels, "reference.gardener.cloud/testbinding")
	assert.Contains(t, get(t, c, quota).Labels, "reference.gardener.cloud/testbinding")
}
