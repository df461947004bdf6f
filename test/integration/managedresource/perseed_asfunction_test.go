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
	"github.com/gardener-knative/gardener-knative/pkg/controller/health"
	"github.com/gardener-knative/gardener-knative/pkg/controller/managedresource"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
)

// Per seed, as their own ServiceAccounts: health reports on a tenant's ManagedResource by event
// and by its per-tenant sweep, and the garbage collector's per-tenant sweep collects in each
// tenant's shoot, both reaching the shoots through the seed's Clusters and access Secrets.
func TestPerSeedHealthAndGarbageCollectorAsFunctions(t *testing.T) {
	ctx := context.Background()
	ns := targetNamespace(t)
	name := "health-" + ns
	apply := functiontest.New(t, seed, managedresource.Function, functiontest.AsFunction(), functiontest.WithTenants(), functiontest.WithConfig(config(t)))
	_, mr := manifest(t, string(tenantA), name, map[string]string{"objects.yaml": configMap(ns, "cfg", "a")})
	apply.Send("add", mr)
	mr = get(t, mr)

	h := functiontest.New(t, seed, health.Function, functiontest.AsFunction(), functiontest.WithTenants(), functiontest.WithConfig(healthConfig(t)))
	h.Send("update", mr)
	status, reason, message := condition(get(t, mr), "ResourcesHealthy")
	assert.Equal(t, "True", status, message)
	assert.Equal(t, "ResourcesHealthy", reason)

	require.NoError(t, shootA.Client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cfg"}}))
	h.Sweep(health.Health)
	status, _, _ = condition(get(t, mr), "ResourcesHealthy")
	assert.Equal(t, "False", status, "the per-tenant sweep finds the object gone")

	label := map[string]string{"resources.gardener.cloud/garbage-collectable-reference": "true"}
	require.NoError(t, shootB.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "unused", Labels: label}}))
	cfg, err := functiontest.LoadConfig[garbagecollector.Config](garbagecollector.Function)
	require.NoError(t, err)
	cfg.Enabled, cfg.MinimumObjectLifetime = true, 0
	gc := functiontest.New(t, seed, garbagecollector.Function, functiontest.AsFunction(), functiontest.WithTenants(), functiontest.WithConfig(cfg))
	gc.Sweep("collect")
	assert.True(t, apierrors.IsNotFound(shootB.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "unused"}, &corev1.ConfigMap{})), "collected in tenant B's shoot")
}
