package grm

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gardener-knative/gardener-knative/pkg/tenant"
)

// SeedIdentity is each tenant's seed identity per seed, and the source's own elsewhere.
func TestSeedIdentity(t *testing.T) {
	source := fake.NewClientBuilder().WithObjects(&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: "cluster-identity"},
		Data:       map[string]string{"cluster-identity": "the-source"},
	}).Build()
	id := NewClusterIdentity(SeedIdentity, source)

	ctx := tenant.WithSettings(tenant.With(context.Background(), "shoot--p--a"), &tenant.Settings{ClusterID: "seed-of-a"})
	got, err := id.Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, "seed-of-a", got)

	got, err = id.Get(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "the-source", got)

	// Without the ConfigMap, as "<default>": no identity.
	got, err = NewClusterIdentity(SeedIdentity, fake.NewClientBuilder().Build()).Get(context.Background())
	require.NoError(t, err)
	assert.Empty(t, got)

	// A configured value is every tenant's.
	got, err = NewClusterIdentity("fixed", source).Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, "fixed", got)
}
