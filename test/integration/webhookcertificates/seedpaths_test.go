package webhookcertificates_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/webhookcertificates"
	"github.com/gardener-knative/gardener-knative/pkg/tenantproof"
	"github.com/gardener-knative/gardener-knative/sources"
)

// paths are the paths of a registration's webhooks ("" for none).
func paths(t *testing.T, obj *admissionregistrationv1.MutatingWebhookConfiguration) []string {
	t.Helper()
	require.NoError(t, env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj))
	var out []string
	for _, w := range obj.Webhooks {
		p := ""
		if w.ClientConfig.Service.Path != nil {
			p = *w.ClientConfig.Service.Path
		}
		out = append(out, p)
	}
	return out
}

// A seed registration, as config/seed/ ships it, names no path and says each webhook's in its
// annotation: the function writes it below the seed's proof, with the seed's first key when there
// is none yet; after a `ko apply` took it away (an upgrade from bare paths), again; once a newer
// key signs, with that key. A webhook the annotation does not name keeps its path.
func TestSeedRegistrationsCarryTheSeedsProof(t *testing.T) {
	ctx := context.Background()
	f := newHarness(t)
	keysSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: sources.Namespace, Name: tenantproof.SecretName}}
	require.NoError(t, client.IgnoreNotFound(env.Client.Delete(ctx, keysSecret)))
	t.Cleanup(func() { _ = env.Client.Delete(ctx, keysSecret) })

	m := mutatingFor(t, "certs-seed-paths", "seed-paths-tls", map[string]string{
		webhookcertificates.AnnotationSeedPaths: `{"a.example.com": "/webhooks/a"}`,
	})
	unpath := []byte(`{"webhooks":[{"name":"a.example.com","clientConfig":{"service":{"path":null}}}]}`)
	require.NoError(t, env.Client.Patch(ctx, m, client.RawPatch(types.StrategicMergePatchType, unpath)))
	require.Equal(t, []string{"", "/webhooks/x"}, paths(t, m))

	f.Send("add", m)
	keys := proofKeys(t)
	require.Len(t, keys, 1, "the seed's first key, made by the function")
	first, _ := keys.Signing(f.Clock.Now())
	assert.Equal(t, []string{tenantproof.SeedPath(first, "/webhooks/a"), "/webhooks/x"}, paths(t, m))
	ring := tenantproof.NewRing(env.Client, sources.Namespace, f.Clock)
	seed, proof, rest, ok := tenantproof.ParsePath(paths(t, m)[0], "shoot--")
	require.True(t, ok)
	proven, err := ring.Verify(ctx, seed, proof)
	require.NoError(t, err)
	assert.True(t, proven && seed == tenantproof.Seed && rest == "/webhooks/a", "the servers take it as the seed's")

	// `ko apply` of a config/ that named the bare path before, then none: the path goes, the
	// registration's event brings it back.
	require.NoError(t, env.Client.Patch(ctx, m, client.RawPatch(types.StrategicMergePatchType, unpath)))
	f.Send("update", m)
	assert.Equal(t, tenantproof.SeedPath(first, "/webhooks/a"), paths(t, m)[0])

	// shootcabundle's rotation adds a key; once it signs, the sweep signs the seed's paths with it.
	f.Clock.Step(time.Hour)
	next, err := tenantproof.NewKey(f.Clock.Now())
	require.NoError(t, err)
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(keysSecret), keysSecret))
	keysSecret.Data = tenantproof.Keys{next, first}.Data()
	require.NoError(t, env.Client.Update(ctx, keysSecret))
	f.Sweep(webhookcertificates.ResyncMutating)
	assert.Equal(t, tenantproof.SeedPath(first, "/webhooks/a"), paths(t, m)[0], "not signed with a key a server may not know yet")
	f.Clock.Step(tenantproof.PromotionDelay)
	f.Sweep(webhookcertificates.ResyncMutating)
	assert.Equal(t, tenantproof.SeedPath(next, "/webhooks/a"), paths(t, m)[0], "signed with the newer key")
	assert.Equal(t, "/webhooks/x", paths(t, m)[1])

	// An annotation that is no map of paths changes nothing and is not retried.
	bad := mutatingFor(t, "certs-seed-paths-bad", "seed-paths-tls", map[string]string{webhookcertificates.AnnotationSeedPaths: `["/webhooks/a"]`})
	terminal := func() float64 {
		return f.Metric("gardener_knative_events_total", map[string]string{"outcome": "terminal"})
	}
	before := terminal()
	f.Send("add", bad)
	assert.Equal(t, before+1, terminal(), "acknowledged as a terminal failure")
	assert.Equal(t, []string{"/webhooks/x", "/webhooks/x"}, paths(t, bad))
}
