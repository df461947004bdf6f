package managedresource_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/garbagecollector"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
)

// The garbage collector deletes the collectable ConfigMaps and Secrets nothing references any
// more, once older than the minimum lifetime; it costs nothing when it is off.
func TestGarbageCollector(t *testing.T) {
	ctx := context.Background()
	cfg, err := functiontest.LoadConfig[garbagecollector.Config](garbagecollector.Function)
	require.NoError(t, err)
	require.False(t, cfg.Enabled, "off unless configured, as in Gardener")
	off := functiontest.New(t, seed, garbagecollector.Function, functiontest.WithTarget(shootA), functiontest.WithConfig(cfg))
	off.TargetCounter.Reset()
	off.Sweep("collect")
	assert.Zero(t, off.TargetCounter.Total(""), "a tick of a collector that is off costs no request")

	ns := namespace(t, shootA)
	label := map[string]string{"resources.gardener.cloud/garbage-collectable-reference": "true"}
	for _, name := range []string{"in-use", "unused"} {
		require.NoError(t, shootA.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: label}}))
	}
	require.NoError(t, shootA.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "unused-secret", Labels: label}}))
	require.NoError(t, shootA.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "not-collectable"}}))
	require.NoError(t, shootA.Client.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "user", Annotations: map[string]string{"reference.resources.gardener.cloud/configmap-0123abcd": "in-use"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
	}))

	cfg.Enabled = true
	on := functiontest.New(t, seed, garbagecollector.Function, functiontest.WithTarget(shootA), functiontest.WithConfig(cfg))
	on.Sweep("collect")
	require.NoError(t, shootA.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "unused"}, &corev1.ConfigMap{}), "younger than the minimum lifetime (10m)")

	cfg.MinimumObjectLifetime = 0
	on = functiontest.New(t, seed, garbagecollector.Function, functiontest.WithTarget(shootA), functiontest.WithConfig(cfg))
	on.Sweep("collect")
	assert.True(t, apierrors.IsNotFound(shootA.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "unused"}, &corev1.ConfigMap{})))
	assert.True(t, apierrors.IsNotFound(shootA.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "unused-secret"}, &corev1.Secret{})))
	require.NoError(t, shootA.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "in-use"}, &corev1.ConfigMap{}), "a Pod references it")
	require.NoError(t, shootA.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "not-collectable"}, &corev1.ConfigMap{}))
}
