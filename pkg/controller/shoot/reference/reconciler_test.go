package reference

import (
	"context"
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

// A Shoot created while a release runs (after the release listed the Shoots, before it removed
// the finalizer of what no Shoot referenced then) found the object protected and changed nothing:
// the release lists the Shoots once more, live, and protects it again.
func TestReleaseProtectsAgainForAShootCreatedMeanwhile(t *testing.T) {
	ctx := context.Background()
	const ns = "garden-a"
	dns := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dns", Finalizers: []string{Finalizer}}}
	old := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "old"}}
	newer := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "newer"}}
	newer.Spec.DNS = &gardencorev1beta1.DNS{Providers: []gardencorev1beta1.DNSProvider{{SecretName: ptr.To("dns")}}}
	live := fake.NewClientBuilder().WithScheme(scheme.Gardener).WithObjects(dns, old, newer).Build()
	// What the reconcile listed: the Shoots before the newer one, the Secret as it was.
	stale := fake.NewClientBuilder().WithScheme(scheme.Gardener).WithObjects(dns.DeepCopy(), old.DeepCopy()).Build()

	r := &Reconciler{Writer: function.NewWriter(live), Live: live, Log: slog.New(slog.DiscardHandler)}
	require.NoError(t, r.Reconcile(ctx, function.Request{Key: client.ObjectKey{Name: ns}, Reader: stale, Trigger: function.BySweep}))
	got := &corev1.Secret{}
	require.NoError(t, live.Get(ctx, client.ObjectKeyFromObject(dns), got))
	assert.Contains(t, got.Finalizers, Finalizer, "protected again for the newer Shoot")
}
