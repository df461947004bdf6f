package chart

import (
	"context"
	"encoding/base64"
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	"github.com/gardener-knative/gardener-knative/pkg/controller/controllerinstallation/chart/ocitest"
)

func TestURL(t *testing.T) {
	for _, tc := range []struct {
		oci  gardencorev1beta1.OCIRepository
		want string
	}{
		{gardencorev1beta1.OCIRepository{Ref: ptr.To("oci://r.io/x:1"), Repository: ptr.To("ignored"), Tag: ptr.To("2")}, "r.io/x:1"},
		{gardencorev1beta1.OCIRepository{Repository: ptr.To("r.io/x"), Tag: ptr.To("1.0.0")}, "r.io/x:1.0.0"},
		{gardencorev1beta1.OCIRepository{Repository: ptr.To("r.io/x"), Tag: ptr.To("1.0.0"), Digest: ptr.To("sha256:abc")}, "r.io/x@sha256:abc"},
		{gardencorev1beta1.OCIRepository{Repository: ptr.To("r.io/x")}, ""},
	} {
		assert.Equal(t, tc.want, URL(&tc.oci))
	}
}

func TestKeychain(t *testing.T) {
	auth := base64.StdEncoding.EncodeToString([]byte("user:pass"))
	chain, err := keychainFor([]byte(`{"auths":{"https://r.io/":{"auth":"` + auth + `"},"other.io/team/repo":{"username":"u","password":"p"}}}`))
	require.NoError(t, err)
	resolve := func(ref string) *authn.AuthConfig {
		r, err := name.ParseReference(ref)
		require.NoError(t, err)
		a, err := chain.Resolve(r.Context())
		require.NoError(t, err)
		cfg, err := a.Authorization()
		require.NoError(t, err)
		return cfg
	}
	assert.Equal(t, &authn.AuthConfig{Username: "user", Password: "pass"}, resolve("r.io/charts/x:1"), "by registry")
	assert.Equal(t, &authn.AuthConfig{Username: "u", Password: "p"}, resolve("other.io/team/repo:1"), "by repository")
	assert.Equal(t, &authn.AuthConfig{}, resolve("third.io/charts/x:1"), "anonymous")

	_, err = keychainFor([]byte("not json"))
	assert.Error(t, err)
}

func TestCacheEvictsLeastRecentlyUsed(t *testing.T) {
	c := newCache(10)
	c.add("a", []byte("aaaa"))
	c.add("b", []byte("bbbb"))
	_, ok := c.get("a") // a is now the most recently used
	require.True(t, ok)
	c.add("c", []byte("cccc"))
	_, ok = c.get("b")
	assert.False(t, ok, "b was the least recently used")
	_, ok = c.get("a")
	assert.True(t, ok)
	c.add("huge", make([]byte, 11))
	_, ok = c.get("huge")
	assert.False(t, ok, "larger than the bound: never held")
	assert.Equal(t, 2, c.len())
}

func TestPullFromRegistry(t *testing.T) {
	registry := ocitest.Start("robot", "pw")
	defer registry.Close()
	archive, err := ocitest.ConfigMapChart("c", "1.0.0")
	require.NoError(t, err)
	ref, digest, err := registry.Push(archive, "c", "1.0.0")
	require.NoError(t, err)
	asked := 0
	credentials := func(context.Context) ([]byte, error) { asked++; return registry.DockerConfigJSON(), nil }
	p := NewPuller(1 << 20)
	ctx := context.Background()

	pulled, err := p.Pull(ctx, &gardencorev1beta1.OCIRepository{Ref: ptr.To(ref)}, credentials)
	require.NoError(t, err)
	assert.Equal(t, archive, pulled.Archive)
	assert.Equal(t, digest, pulled.Digest)
	assert.Equal(t, 1, p.Cached())

	before := registry.Requests()
	pulled, err = p.Pull(ctx, &gardencorev1beta1.OCIRepository{Repository: ptr.To(registry.Host + "/charts/c"), Tag: ptr.To("9.9.9"), Digest: ptr.To(digest)}, credentials)
	require.NoError(t, err)
	assert.Equal(t, archive, pulled.Archive)
	assert.Zero(t, registry.Requests()-before, "a cached digest needs no request")
	assert.Equal(t, 1, asked, "nor the credentials")

	_, err = p.Pull(ctx, &gardencorev1beta1.OCIRepository{Ref: ptr.To(ref)}, func(context.Context) ([]byte, error) { return nil, nil })
	assert.ErrorContains(t, err, "401", "anonymous")
	_, err = p.Pull(ctx, &gardencorev1beta1.OCIRepository{Ref: ptr.To("not a reference")}, credentials)
	assert.ErrorContains(t, err, "invalid OCI reference")
	_, err = p.Pull(ctx, &gardencorev1beta1.OCIRepository{}, credentials)
	assert.Error(t, err)
}
