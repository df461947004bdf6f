package seed

import (
	"context"
	"testing"

	"github.com/gardener/gardener/pkg/apis/core"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gardener-knative/gardener-knative/pkg/scheme"
)

// TestGardenReadsAsReaderSource: the Garden listed once answers Read for every seed exactly as
// the field-selected reads of one seed do.
func TestGardenReadsAsReaderSource(t *testing.T) {
	ctx := context.Background()
	seedA, seedB := testSeed(), testSeed()
	seedA.Name, seedB.Name = "a", "b"
	shoot := func(name, spec, status string) *gardencorev1beta1.Shoot {
		s := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "garden-p"}}
		if spec != "" {
			s.Spec.SeedName = ptr.To(spec)
		}
		if status != "" {
			s.Status.SeedName = ptr.To(status)
		}
		return s
	}
	ci := func(name, seed string) *gardencorev1beta1.ControllerInstallation {
		c := &gardencorev1beta1.ControllerInstallation{ObjectMeta: metav1.ObjectMeta{Name: name}}
		c.Spec.RegistrationRef.Name = "r"
		c.Spec.SeedRef = &corev1.ObjectReference{Name: seed}
		return c
	}
	entry := &gardencorev1beta1.BackupEntry{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "garden-p"}}
	entry.Spec.SeedName, entry.Spec.BucketName = ptr.To("a"), "bucket-b"
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "internal", Namespace: "seed-a",
		Labels:      map[string]string{"gardener.cloud/role": "internal-domain"},
		Annotations: map[string]string{"dns.gardener.cloud/provider": "p", "dns.gardener.cloud/domain": "d"}}}
	otherSecret := secret.DeepCopy()
	otherSecret.Namespace = "seed-b"
	registration := registration("r", "", res{Kind: "ControlPlane", Type: "aws"})

	objects := []client.Object{seedA, seedB, &registration,
		shoot("on-a", "a", "a"), shoot("to-b", "b", "a"), shoot("unscheduled", "", ""), shoot("on-b", "b", ""),
		ci("ci-a", "a"), ci("ci-b", "b"),
		bucket("bucket-a", "a", "s3"), bucket("bucket-b", "b", "gcs"), entry, secret, otherSecret,
	}
	c := fake.NewClientBuilder().WithScheme(scheme.Gardener).WithObjects(objects...).
		WithIndex(&gardencorev1beta1.Shoot{}, core.ShootSeedName, indexSpecSeedName).
		WithIndex(&gardencorev1beta1.Shoot{}, core.ShootStatusSeedName, indexStatusSeedName).
		WithIndex(&gardencorev1beta1.BackupBucket{}, core.BackupBucketSeedName, indexSpecSeedName).
		WithIndex(&gardencorev1beta1.BackupEntry{}, core.BackupEntrySeedName, indexSpecSeedName).
		WithIndex(&gardencorev1beta1.ControllerInstallation{}, core.SeedRefName, indexSeedRefName).
		Build()

	garden, err := LoadGarden(ctx, c)
	require.NoError(t, err)
	require.Len(t, garden.Seeds, 2)
	for _, seed := range []*gardencorev1beta1.Seed{seedA, seedB} {
		live, err := Read(ctx, ReaderSource{Reader: c}, seed)
		require.NoError(t, err)
		listed, err := Read(ctx, garden, seed)
		require.NoError(t, err)
		assert.ElementsMatch(t, names(live.Shoots), names(listed.Shoots), seed.Name)
		assert.ElementsMatch(t, names(live.Installations), names(listed.Installations), seed.Name)
		assert.ElementsMatch(t, keysOf(live.Buckets), keysOf(listed.Buckets), seed.Name)
		assert.Equal(t, live.InternalDomain, listed.InternalDomain, seed.Name)
		assert.Equal(t, len(live.Entries), len(listed.Entries), seed.Name)
	}
	state, _ := Read(ctx, garden, seedA)
	assert.ElementsMatch(t, []string{"on-a", "to-b"}, names(state.Shoots), "spec or status")
	assert.ElementsMatch(t, []string{"bucket-a", "bucket-b"}, keysOf(state.Buckets), "its own and its entry's")
}

func names[T any, PT interface {
	*T
	client.Object
}](items []T) []string {
	var out []string
	for i := range items {
		out = append(out, PT(&items[i]).GetName())
	}
	return out
}

func keysOf(m map[string]*gardencorev1beta1.BackupBucket) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
