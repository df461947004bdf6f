package seed_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/seed/secrets"
)

var secretCounter int

// gardenSecret creates a Secret in the garden namespace with the given role ("" for none).
func gardenSecret(t *testing.T, role, value string) *corev1.Secret {
	t.Helper()
	ensureNamespace(t, "garden")
	secretCounter++
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("shared-%d", secretCounter), Namespace: "garden",
		Annotations: map[string]string{"note": value}}, Data: map[string][]byte{"value": []byte(value)}}
	if role != "" {
		s.Labels = map[string]string{"gardener.cloud/role": role}
	}
	require.NoError(t, env.Client.Create(context.Background(), s))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), s) })
	return s
}

// copyOf reads the copy of original in the seed's namespace; nil when there is none.
func copyOf(t *testing.T, seedName string, original *corev1.Secret) *corev1.Secret {
	t.Helper()
	c := &corev1.Secret{}
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: secrets.NamespaceName(seedName), Name: original.Name}, c)
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(t, err)
	return c
}

func TestSecretsEvents(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	shared := gardenSecret(t, "internal-domain", "one")
	kubeconfig := gardenSecret(t, "kubeconfig", "never copied")
	unlabelled := gardenSecret(t, "", "never copied")
	s := newSeed(t)

	h.Send("add", s)
	ns := &corev1.Namespace{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: "seed-" + s.Name}, ns))
	assert.Equal(t, "seed", ns.Labels["gardener.cloud/role"])
	assert.True(t, metav1.IsControlledBy(ns, s), "the namespace is the seed's")
	c := copyOf(t, s.Name, shared)
	require.NotNil(t, c, "the shared secret is copied")
	assert.Equal(t, shared.Data, c.Data)
	assert.Equal(t, shared.Labels, c.Labels)
	assert.Equal(t, shared.Annotations, c.Annotations)
	assert.Nil(t, copyOf(t, s.Name, kubeconfig), "control plane secrets are not shared")
	assert.Nil(t, copyOf(t, s.Name, unlabelled), "secrets without role are not shared")

	t.Run("a repeated event writes nothing", func(t *testing.T) {
		counts := h.Measure(func() { h.Send("add", s) })
		assert.Equal(t, map[string]int{"get": 2, "list": 2}, counts)
	})
	t.Run("an update of the original reaches the copy", func(t *testing.T) {
		shared.Data["value"] = []byte("two")
		shared.Annotations["note"] = "two"
		require.NoError(t, env.Client.Update(ctx, shared))
		h.Send("update", shared)
		c := copyOf(t, s.Name, shared)
		assert.Equal(t, []byte("two"), c.Data["value"])
		assert.Equal(t, "two", c.Annotations["note"])
	})
	t.Run("a new shared secret is copied", func(t *testing.T) {
		added := gardenSecret(t, "alerting", "new")
		h.Send("add", added)
		assert.NotNil(t, copyOf(t, s.Name, added))
	})
	t.Run("the deletion of the original deletes the copy", func(t *testing.T) {
		require.NoError(t, env.Client.Delete(ctx, shared))
		h.Send("delete", shared)
		assert.Nil(t, copyOf(t, s.Name, shared))
	})
	t.Run("a garden secret that is not shared maps to no seed", func(t *testing.T) {
		// Other functions' Secret watches reach this function's Trigger too.
		assert.Equal(t, map[string]int{"get": 1}, h.Measure(func() { h.Send("update", unlabelled) }))
	})
	t.Run("a secret that lost its role loses its copies", func(t *testing.T) {
		alerting := gardenSecret(t, "alerting", "x")
		h.Send("add", alerting)
		require.NotNil(t, copyOf(t, s.Name, alerting))
		alerting.Labels = nil
		require.NoError(t, env.Client.Update(ctx, alerting))
		h.Send("delete", alerting) // what the label-narrowed watch reports
		assert.Nil(t, copyOf(t, s.Name, alerting))
	})
	t.Run("the seed's namespace that lost its role label gets it back", func(t *testing.T) {
		require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: "seed-" + s.Name}, ns))
		delete(ns.Labels, "gardener.cloud/role")
		require.NoError(t, env.Client.Update(ctx, ns))
		h.Sweep(secrets.ResyncSweepName) // namespaces send no events here: the resync sees it
		require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(ns), ns))
		assert.Equal(t, "seed", ns.Labels["gardener.cloud/role"])
	})
	t.Run("secrets of other namespaces are filtered", func(t *testing.T) {
		other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere", Namespace: env.Namespace(t), Labels: map[string]string{"gardener.cloud/role": "alerting"}}}
		require.NoError(t, env.Client.Create(ctx, other))
		assert.Empty(t, h.Measure(func() { h.Send("add", other) }))
	})
}

func TestSecretsNamespaceOfAnother(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	s := newSeed(t)
	foreign := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "seed-" + s.Name}}
	require.NoError(t, env.Client.Create(ctx, foreign))
	shared := gardenSecret(t, "default-domain", "x")

	h.Send("add", s) // terminal: acknowledged, never retried
	assert.Nil(t, copyOf(t, s.Name, shared), "nothing is copied into a namespace the seed does not control")
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(foreign), foreign))
	assert.NotContains(t, foreign.Labels, "gardener.cloud/role", "a namespace of another is left alone")
}

func TestSecretsSweep(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	shared := gardenSecret(t, "global-monitoring", "original")
	missed := newSeed(t) // its creation event was lost
	tampered := newSeed(t)
	h.Send("add", tampered)

	c := copyOf(t, tampered.Name, shared)
	c.Data["value"] = []byte("changed behind the controller's back")
	require.NoError(t, env.Client.Update(ctx, c))
	stale := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "stale-copy", Namespace: "seed-" + tampered.Name, Labels: map[string]string{"gardener.cloud/role": "alerting"}}}
	require.NoError(t, env.Client.Create(ctx, stale))

	h.Sweep(secrets.ResyncSweepName)
	assert.NotNil(t, copyOf(t, missed.Name, shared), "the sweep catches up with a missed Seed")
	assert.Equal(t, []byte("original"), copyOf(t, tampered.Name, shared).Data["value"], "a changed copy is restored")
	assert.Nil(t, copyOf(t, tampered.Name, stale), "a copy without original is deleted")

	t.Run("a copy that lost its role label is taken back", func(t *testing.T) {
		c := copyOf(t, tampered.Name, shared)
		c.Labels = nil
		require.NoError(t, env.Client.Update(ctx, c))
		h.Sweep(secrets.ResyncSweepName)
		assert.Equal(t, shared.Labels, copyOf(t, tampered.Name, shared).Labels)
	})
	t.Run("a sweep with nothing changed writes nothing", func(t *testing.T) {
		counts := h.Measure(func() { h.Sweep(secrets.ResyncSweepName) })
		assert.Equal(t, map[string]int{"list": 3}, counts, "one LIST each of Seeds, seed namespaces and shared Secrets")
	})
}
