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

	"github.com/gardener-knative/gardener-knative/pkg/controller/managedresource"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/tenanttest"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

// targetNamespace creates a namespace of its own in both shoots.
func targetNamespace(t testing.TB) string {
	t.Helper()
	ns := seed.Namespace(t) // a unique name; the seed's copy is unused
	for _, shoot := range []*testenv.Env{shootA, shootB} {
		require.NoError(t, shoot.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	return ns
}

// Per seed, one function applies each shoot namespace's ManagedResources to that shoot, with
// the shoot's own access: tenant A's ManagedResources never reach tenant B's cluster, and
// nothing tenant A's objects say makes the function act on tenant B.
func TestPerSeedAppliesEachTenantToItsOwnShoot(t *testing.T) {
	ctx := context.Background()
	h := functiontest.New(t, seed, managedresource.Function, functiontest.AsFunction(), functiontest.WithTenants(), functiontest.WithConfig(config(t)))
	ns := targetNamespace(t)
	name := "isolation-" + ns
	_, mrA := manifest(t, string(tenantA), name, map[string]string{"objects.yaml": configMap(ns, "only-in-a", "a")})
	_, mrB := manifest(t, string(tenantB), name, map[string]string{"objects.yaml": configMap(ns, "only-in-b", "b")})
	h.Send("add", mrA)
	h.Send("add", mrB)

	require.NoError(t, shootA.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "only-in-a"}, &corev1.ConfigMap{}))
	require.NoError(t, shootB.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "only-in-b"}, &corev1.ConfigMap{}))
	assert.True(t, apierrors.IsNotFound(shootB.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "only-in-a"}, &corev1.ConfigMap{})))
	assert.True(t, apierrors.IsNotFound(shootA.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "only-in-b"}, &corev1.ConfigMap{})))

	// An object in shoot A claiming to belong to tenant B's ManagedResource is refused, terminally.
	forged := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "forged", Labels: map[string]string{"resources.gardener.cloud/managed-by": "gardener"}, Annotations: map[string]string{
		"resources.gardener.cloud/origin": string(tenantB) + "/" + name,
	}}}
	const terminal = "gardener_knative_events_terminal_total"
	before := h.Metric(terminal, nil)
	h.SendTarget("update", forged, tenantA)
	assert.Equal(t, before+1, h.Metric(terminal, nil), "refused and counted")

	// Drift in both shoots is reconciled back by one sweep, a constant number of LISTs per tenant.
	// (A first sweep converges what earlier tests left: a sweep's creates cost a live re-run.)
	h.Sweep("sync")
	for _, drift := range []struct {
		shoot *testenv.Env
		name  string
	}{{shootA, "only-in-a"}, {shootB, "only-in-b"}} {
		cm := &corev1.ConfigMap{}
		require.NoError(t, drift.shoot.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: drift.name}, cm))
		cm.Data["key"] = "edited"
		require.NoError(t, drift.shoot.Client.Update(ctx, cm))
	}
	h.TargetCounter.Reset()
	h.ResetRequests()
	h.Sweep("sync")
	for _, drift := range []struct {
		shoot      *testenv.Env
		name, want string
	}{{shootA, "only-in-a", "a"}, {shootB, "only-in-b", "b"}} {
		cm := &corev1.ConfigMap{}
		require.NoError(t, drift.shoot.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: drift.name}, cm))
		assert.Equal(t, drift.want, cm.Data["key"])
	}
	targetLists := 0
	for _, l := range managedresource.Function.Sweeps[0].Related {
		if l.Cluster == function.Target {
			targetLists++
		}
	}
	assert.Equal(t, 2*targetLists, h.TargetCounter.Total("list"), "one LIST per tenant and related kind, however many objects")
	assert.Equal(t, 2, h.Counter.Of("list", "secrets"), "the ManagedResources' Secrets: one LIST per tenant")
	assert.Zero(t, h.Counter.Of("get", "secrets"), "and no GET per ManagedResource")

	// A ManagedResource outside every tenant's namespace is not this deployment's.
	outside := seed.Namespace(t)
	_, mr := manifest(t, outside, "outside", map[string]string{"objects.yaml": configMap(ns, "nowhere", "x")})
	h.Send("add", mr)
	assert.Empty(t, get(t, mr).Finalizers)
}

// A shoot whose Cluster is not labelled enrolled is gardenlet's own resource manager's, even
// with Gardener's class and finalizer conventions: its ManagedResources are not touched, by
// their events or by a sweep (that none of its Secrets is read, pkg/tenant/clients tests).
func TestPerSeedLeavesTenantsNotEnrolledAlone(t *testing.T) {
	ctx := context.Background()
	const gardenlets tenant.Name = "shoot--p--gardenlets"
	require.NoError(t, seed.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: string(gardenlets)}}))
	cluster, err := tenanttest.Cluster(gardenlets, "generic-token-kubeconfig-1", nil)
	require.NoError(t, err)
	cluster.SetLabels(nil)
	require.NoError(t, seed.Client.Create(ctx, cluster))
	t.Cleanup(func() { assert.NoError(t, seed.Client.Delete(ctx, cluster)) })

	h := functiontest.New(t, seed, managedresource.Function, functiontest.AsFunction(), functiontest.WithTenants(), functiontest.WithConfig(config(t)))
	_, mr := manifest(t, string(gardenlets), "not-ours", map[string]string{"objects.yaml": configMap("default", "not-ours", "x")})
	const filtered = "gardener_knative_events_filtered_total"
	before := h.Metric(filtered, nil)
	h.Send("add", mr)
	assert.Equal(t, before+1, h.Metric(filtered, nil), "skipped as another deployment's")
	h.Sweep("sync")
	live := get(t, mr)
	assert.Empty(t, live.Finalizers)
	assert.Empty(t, live.Status.Conditions)
	assert.Zero(t, live.Status.ObservedGeneration)
}
