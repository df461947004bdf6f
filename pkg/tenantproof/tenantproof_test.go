package tenantproof

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gardener-knative/gardener-knative/pkg/tenant"
)

var t0 = time.Date(2026, 12, 7, 6, 0, 0, 0, time.UTC)

func mustKey(t testing.TB, at time.Time) Key {
	t.Helper()
	k, err := NewKey(at)
	require.NoError(t, err)
	return k
}

func TestParsePath(t *testing.T) {
	for _, tc := range []struct {
		path   string
		tenant tenant.Name
		proof  string
		rest   string
		ok     bool
	}{
		{"/shoot--p--s.PROOF/webhooks/high-availability-config", "shoot--p--s", "PROOF", "/webhooks/high-availability-config", true},
		{"/shoot--p--s.PROOF/validate-druid-gardener-cloud-v1alpha1-etcd", "shoot--p--s", "PROOF", "/validate-druid-gardener-cloud-v1alpha1-etcd", true},
		{"/shoot--p--s/webhooks/auth/nodeagent", "shoot--p--s", "", "/webhooks/auth/nodeagent", true}, // no proof: refused by the router
		{"/shoot--p--s./webhooks/x", "shoot--p--s", "", "/webhooks/x", true},
		{"/shoot--p--s.a.b/webhooks/x", "shoot--p--s", "a.b", "/webhooks/x", true}, // no proof has a dot: refused
		{"/webhooks/high-availability-config", "", "", "", false},                  // single-tenant path
		{"/kube-system.PROOF/webhooks/high-availability-config", "", "", "", false},
		{"/garden/webhooks/high-availability-config", "", "", "", false},
		{"/shoot--p--s.PROOF", "", "", "", false},
		{"/shoot--p--s.PROOF/", "", "", "", false},
		{"shoot--p--s/webhooks/x", "", "", "", false},
		{"/Shoot--p--s/webhooks/x", "", "", "", false},
		{"/shoot--p--s%2F/webhooks/x", "", "", "", false},
		{"/shoot--" + strings.Repeat("x", 60) + "/webhooks/x", "", "", "", false}, // longer than a namespace name
		{"//webhooks/x", "", "", "", false},
		{"/.PROOF/webhooks/x", "", "", "", false},
		{"/seed.PROOF/webhooks/validate-crd-deletion", Seed, "PROOF", "/webhooks/validate-crd-deletion", true},
		{"/seed/webhooks/x", Seed, "", "/webhooks/x", true}, // no proof: refused by the router
		{"/seed.PROOF/", "", "", "", false},
		{"/Seed.PROOF/webhooks/x", "", "", "", false},
	} {
		tn, proof, rest, ok := ParsePath(tc.path, tenant.DefaultPrefix)
		assert.Equal(t, tc.ok, ok, tc.path)
		assert.Equal(t, tc.tenant, tn, tc.path)
		assert.Equal(t, tc.proof, proof, tc.path)
		assert.Equal(t, tc.rest, rest, tc.path)
	}
}

// Whatever path arrives, a tenant is only ever the seed (its segment) or a namespace name with
// the prefix, and the path is exactly the tenant, its proof and the rest: no path can address a
// namespace outside the prefix or smuggle a second segment into the tenant.
func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"/shoot--p--s.x/webhooks/x", "/shoot--p--s/webhooks/x", "/webhooks/x", "/shoot--a./", "/shoot--a//", "/shoot--a/../kube-system/x", "/seed.x/webhooks/x", "/seed/x", "", "/", "//"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		tn, proof, rest, ok := ParsePath(path, tenant.DefaultPrefix)
		if !ok {
			if tn != "" || proof != "" || rest != "" {
				t.Fatalf("%q: not a tenant path, yet tenant %q proof %q rest %q", path, tn, proof, rest)
			}
			return
		}
		segment := string(tn)
		if tn == Seed {
			segment = SeedSegment
		} else if !strings.HasPrefix(string(tn), tenant.DefaultPrefix) || len(validation.IsDNS1123Label(string(tn))) > 0 {
			t.Fatalf("%q: tenant %q is no namespace name with prefix %q", path, tn, tenant.DefaultPrefix)
		}
		if !strings.HasPrefix(rest, "/") || len(rest) < 2 || strings.Contains(proof, "/") {
			t.Fatalf("%q: proof %q rest %q are no segment and path", path, proof, rest)
		}
		if joined := "/" + segment + Separator + proof + rest; joined != path && "/"+segment+rest != path {
			t.Fatalf("%q: tenant %q, proof %q and rest %q do not make up the path", path, tn, proof, rest)
		}
	})
}

// A proof is the tenant's under the key: another tenant's, another key's, a changed or cut one
// fail; every key of the set verifies.
func TestProofs(t *testing.T) {
	a, b := mustKey(t, t0), mustKey(t, t0.Add(time.Hour))
	keys := Keys{b, a}
	assert.True(t, keys.Verify("shoot--p--a", a.Proof("shoot--p--a")))
	assert.True(t, keys.Verify("shoot--p--a", b.Proof("shoot--p--a")))
	assert.Len(t, a.Proof("shoot--p--a"), proofLength)
	assert.NotEqual(t, a.Proof("shoot--p--a"), b.Proof("shoot--p--a"))
	assert.False(t, keys.Verify("shoot--p--b", a.Proof("shoot--p--a")), "A's proof is not B's")
	assert.False(t, keys.Verify("shoot--p--a", mustKey(t, t0).Proof("shoot--p--a")), "another seed's key")
	assert.False(t, keys.Verify("shoot--p--a", a.Proof("shoot--p--a")[:proofLength-1]))
	assert.False(t, keys.Verify("shoot--p--a", ""))
	assert.False(t, Keys{}.Verify("shoot--p--a", a.Proof("shoot--p--a")))
	// The tenant's name is bound whole: a prefix or extension of it is another tenant.
	assert.False(t, keys.Verify("shoot--p--a2", a.Proof("shoot--p--a")))
	// The seed's proof proves the seed alone, and no tenant's proves the seed.
	assert.True(t, keys.Verify(Seed, a.Proof(Seed)))
	assert.False(t, keys.Verify("shoot--p--a", a.Proof(Seed)))
	assert.False(t, keys.Verify(Seed, a.Proof("shoot--p--a")))
	assert.Len(t, a.Proof(Seed), seedProofLength)
	assert.Empty(t, validation.IsDNS1123Subdomain(SeedSegment+Separator+a.Proof(Seed)), "a Service's path segment")
	path := SeedPath(a, "/webhooks/x")
	tn, proof, rest, ok := ParsePath(path, tenant.DefaultPrefix)
	assert.True(t, ok && tn == Seed && rest == "/webhooks/x" && keys.Verify(tn, proof), path)
}

func TestSecretRoundTrip(t *testing.T) {
	a, b := mustKey(t, t0), mustKey(t, t0.Add(time.Hour))
	keys, err := FromSecret(Secret("ns", Keys{a, b}))
	require.NoError(t, err)
	require.Len(t, keys, 2)
	assert.Equal(t, b.ID(), keys[0].ID(), "newest first")
	assert.True(t, keys.Verify("shoot--p--a", a.Proof("shoot--p--a")))

	_, err = FromSecret(&corev1.Secret{Data: map[string][]byte{"ca.crt": []byte("x")}})
	assert.ErrorContains(t, err, "not a key")
	_, err = FromSecret(&corev1.Secret{Data: map[string][]byte{"key-1": []byte("short")}})
	assert.ErrorContains(t, err, "has 5 bytes")
}

// A new key signs only once every server has had the time to read it; the first key of a seed
// signs at once.
func TestSigning(t *testing.T) {
	_, ok := Keys{}.Signing(t0)
	assert.False(t, ok)
	old, fresh := mustKey(t, t0), mustKey(t, t0.Add(30*24*time.Hour))
	keys := Keys{fresh, old}
	s, _ := keys.Signing(fresh.Made.Add(PromotionDelay - time.Second))
	assert.Equal(t, old.ID(), s.ID(), "the new key is only accepted yet")
	s, _ = keys.Signing(fresh.Made.Add(PromotionDelay))
	assert.Equal(t, fresh.ID(), s.ID())
	s, _ = Keys{fresh}.Signing(fresh.Made)
	assert.Equal(t, fresh.ID(), s.ID(), "the seed's first key")
}

// Rotate adds a key every rotation and keeps each for two, so that a proof signed with the
// previous key is accepted for a whole rotation after the next one signs.
func TestRotate(t *testing.T) {
	const rotation = 30 * 24 * time.Hour
	keys, changed, err := Rotate(nil, t0, rotation)
	require.NoError(t, err)
	assert.True(t, changed)
	require.Len(t, keys, 1)
	first := keys[0]

	keys, changed, err = Rotate(keys, t0.Add(rotation-time.Second), rotation)
	require.NoError(t, err)
	assert.False(t, changed)
	assert.Len(t, keys, 1)

	keys, changed, err = Rotate(keys, t0.Add(rotation), rotation)
	require.NoError(t, err)
	assert.True(t, changed)
	require.Len(t, keys, 2)
	second := keys[0]
	assert.Equal(t, first.ID(), keys[1].ID())

	// Two rotations after the first key: the third arrives; the first is dropped only now.
	keys, changed, err = Rotate(keys, t0.Add(2*rotation), rotation)
	require.NoError(t, err)
	assert.True(t, changed)
	require.Len(t, keys, 2)
	assert.Equal(t, second.ID(), keys[1].ID())
	assert.False(t, keys.Verify("shoot--p--a", first.Proof("shoot--p--a")))

	// Long idle (no rotation for three periods): the old signing key stays until the new one
	// signs, so that nothing signed is left without a key.
	idle, _, err := Rotate(Keys{first}, t0.Add(5*rotation), rotation)
	require.NoError(t, err)
	require.Len(t, idle, 2)
	assert.True(t, idle.Verify("shoot--p--a", first.Proof("shoot--p--a")))
	idle, _, err = Rotate(idle, t0.Add(5*rotation+PromotionDelay), rotation)
	require.NoError(t, err)
	assert.Len(t, idle, 1, "once the new key signs, the expired one goes")
}

func TestURL(t *testing.T) {
	k := mustKey(t, t0)
	u, err := URL("https://grm-webhooks-tls.gardener-knative.svc/shoot--project--name/webhooks/x", "shoot--p--a", k, "")
	require.NoError(t, err)
	assert.Equal(t, "https://grm-webhooks-tls.gardener-knative.svc/shoot--p--a."+k.Proof("shoot--p--a")+"/webhooks/x", u)
	// Signing again, with another key, replaces the proof.
	k2 := mustKey(t, t0.Add(time.Hour))
	u, err = URL(u, "shoot--p--a", k2, "https://127.0.0.1:9443")
	require.NoError(t, err)
	assert.Equal(t, "https://127.0.0.1:9443/shoot--p--a."+k2.Proof("shoot--p--a")+"/webhooks/x", u)

	_, err = URL("https://x/webhooks/x", "shoot--p--a", k, "")
	assert.ErrorContains(t, err, "addresses no tenant")
	_, err = URL("https://x/shoot--p--a/webhooks/x", "shoot--p--a", Key{}, "")
	assert.ErrorIs(t, err, ErrNoKey)
}

// The ring reads the keys again after RefreshInterval, and at once (once a second at most) when
// a proof matches none: a key made since is accepted at once, a flood of wrong proofs costs at
// most one read a second.
func TestRing(t *testing.T) {
	a := mustKey(t, t0)
	reads := 0
	var fail error
	c := fake.NewClientBuilder().WithObjects(Secret("ns", Keys{a})).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			reads++
			if fail != nil {
				return fail
			}
			return c.Get(ctx, key, obj, opts...)
		},
	}).Build()
	clk := clocktesting.NewFakePassiveClock(t0)
	ring := NewRing(c, "ns", clk)
	ctx := context.Background()

	ok, err := ring.Verify(ctx, "shoot--p--a", a.Proof("shoot--p--a"))
	require.NoError(t, err)
	assert.True(t, ok)
	for range 100 {
		ok, err = ring.Verify(ctx, "shoot--p--b", a.Proof("shoot--p--a"))
		require.NoError(t, err)
		assert.False(t, ok)
	}
	assert.Equal(t, 1, reads, "wrong proofs within a second read nothing more")

	b := mustKey(t, t0.Add(time.Minute))
	require.NoError(t, c.Update(ctx, Secret("ns", Keys{b, a})))
	clk.SetTime(t0.Add(2 * time.Second))
	ok, err = ring.Verify(ctx, "shoot--p--a", b.Proof("shoot--p--a"))
	require.NoError(t, err)
	assert.True(t, ok, "a new key is read on the first proof that needs it")
	assert.Equal(t, 2, reads)

	// An unreachable seed keeps the keys held.
	fail = errors.New("the seed is unreachable")
	clk.SetTime(t0.Add(time.Minute))
	ok, err = ring.Verify(ctx, "shoot--p--a", a.Proof("shoot--p--a"))
	require.NoError(t, err)
	assert.True(t, ok)

	// With no key held, an unreadable Secret is an error, not a refusal.
	_, err = NewRing(c, "ns", clk).Verify(ctx, "shoot--p--a", a.Proof("shoot--p--a"))
	assert.ErrorContains(t, err, "the seed is unreachable")
	// No Secret: no key, every proof refused.
	fail = nil
	ok, err = NewRing(c, "elsewhere", clk).Verify(ctx, "shoot--p--a", a.Proof("shoot--p--a"))
	require.NoError(t, err)
	assert.False(t, ok)
}

func TestSigningKey(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().Build()
	first, err := SigningKey(ctx, c, "ns", t0)
	require.NoError(t, err)
	again, err := SigningKey(ctx, c, "ns", t0.Add(time.Hour))
	require.NoError(t, err)
	assert.Equal(t, first.Proof("shoot--p--a"), again.Proof("shoot--p--a"), "made once, then read")
}

// BenchmarkVerify is what the proof costs a request: the proof checked against the two keys a
// server holds through a rotation, the newer one matching last (the worst case).
func BenchmarkVerify(b *testing.B) {
	older, newer := mustKey(b, t0), mustKey(b, t0.Add(time.Hour))
	keys := Keys{older, newer}
	proof := newer.Proof("shoot--project--name")
	b.ReportAllocs()
	for b.Loop() {
		if !keys.Verify("shoot--project--name", proof) {
			b.Fatal("refused")
		}
	}
}
