package managedresource_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/csrapprover"
	"github.com/gardener-knative/gardener-knative/pkg/controller/managedresource"
	"github.com/gardener-knative/gardener-knative/pkg/controller/node"
	"github.com/gardener-knative/gardener-knative/pkg/controller/tokenrequestor"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/tenanttest"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

// Per seed with no configuration at all, the functions are what gardenlet makes a shoot's
// resource manager (the component's ensureConfigMap with the values of DefaultResourceManager):
// origins name the seed's identity (its Cluster's spec.seed.status.clusterIdentity), and the
// token requestor keeps tokens, among them the access tokens the project itself reaches each
// shoot with.
func TestShootRoleDefaults(t *testing.T) {
	ctx := context.Background()
	apply := functiontest.New(t, seed, managedresource.Function, functiontest.AsFunction(), functiontest.WithTenants())
	ns := targetNamespace(t)
	_, mr := manifest(t, string(tenantA), "shoot-role-"+ns, map[string]string{"objects.yaml": configMap(ns, "shoot-role", "a")})
	apply.Send("add", mr)
	cm := &corev1.ConfigMap{}
	require.NoError(t, shootA.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shoot-role"}, cm))
	assert.Equal(t, tenanttest.SeedIdentity+":"+string(tenantA)+"/"+mr.Name, cm.Annotations[resourcesv1alpha1.OriginAnnotation])

	tokens := functiontest.New(t, seed, tokenrequestor.Function, functiontest.AsFunction(), functiontest.WithTenants())
	secret := tokenSecret(t, string(tenantA), "shoot-access-shoot-role", "kube-system", map[string]string{resourcesv1alpha1.ServiceAccountTokenExpirationDuration: "1h"}, nil)
	tokens.Send("add", secret)
	require.NoError(t, seed.Client.Get(ctx, client.ObjectKeyFromObject(secret), secret))
	assert.Equal(t, "system:serviceaccount:kube-system:shoot-access-shoot-role", authenticated(t, shootA, string(secret.Data["token"])), "requested from tenant A's shoot")
	tokens.Clock.Step(time.Hour)
	old := string(secret.Data["token"])
	tokens.Sweep("renew")
	require.NoError(t, seed.Client.Get(ctx, client.ObjectKeyFromObject(secret), secret))
	assert.NotEqual(t, old, string(secret.Data["token"]), "renewed when due")
}

// gardenlet turns the CSR approver and the node-critical-components controller off for a
// workerless shoot: per seed, its tenant is left alone (its events change nothing, its sweeps
// list nothing), while a tenant with workers is served.
func TestWorkerlessTenantIsLeftAlone(t *testing.T) {
	ctx := context.Background()
	workerless := tenanttest.Shoot(tenantB)
	workerless.Spec.Provider.Workers = nil
	setShootObject(t, tenantB, workerless)

	approver := functiontest.New(t, seed, csrapprover.Function, functiontest.AsFunction(), functiontest.WithTenants())
	for _, tc := range []struct {
		tenant  tenant.Name
		shoot   *testenv.Env
		decided bool
	}{{tenantA, shootA, true}, {tenantB, shootB, false}} {
		name := "workerless-" + rand.String(6)
		n := kubeletNode(t, tc.shoot, name, "10.1.0.9")
		machine(t, string(tc.tenant), "machine-"+name, name)
		c := kubeletServing(t, tc.shoot, n)
		approver.SendTarget("add", c, tc.tenant)
		if tc.decided {
			assertDecision(t, tc.shoot, c, certificatesv1.CertificateApproved, kubeletApproved)
			continue
		}
		require.NoError(t, tc.shoot.Client.Get(ctx, client.ObjectKeyFromObject(c), c))
		assert.Empty(t, c.Status.Conditions, "tenant %s is workerless: no decision", tc.tenant)
	}

	critical := functiontest.New(t, seed, node.Function, functiontest.AsFunction(), functiontest.WithTenants())
	tainted := taintedNode(t, shootB, "workerless-tainted")
	t.Cleanup(func() { _ = shootB.Client.Delete(context.Background(), tainted) })
	critical.SendTarget("add", tainted, tenantB)
	// A tainted Node in tenant A too, so that each tenant the sweep reached would cost it every
	// list it declares: the Nodes, and the critical pods and DaemonSets listed on demand.
	clearNodes(t, shootA)
	taintedNode(t, shootA, "with-workers-tainted")
	critical.TargetCounter.Reset()
	critical.Sweep("recheck")
	assert.Contains(t, taints(t, shootB, tainted.Name), criticalTaint, "the workerless tenant's Node keeps its taint")
	listsPerTenant := 1 + len(node.Function.Sweeps[0].Related)
	assert.Equal(t, listsPerTenant, critical.TargetCounter.Total("list"), "the sweep lists tenant A only")
}

// setShootObject replaces the Shoot in the tenant's Cluster until the test ends.
func setShootObject(t testing.TB, tn tenant.Name, shoot *gardencorev1beta1.Shoot) {
	t.Helper()
	ctx := context.Background()
	cluster := &extensionsv1alpha1.Cluster{}
	require.NoError(t, seed.Client.Get(ctx, client.ObjectKey{Name: string(tn)}, cluster))
	before := cluster.Spec.Shoot
	raw, err := json.Marshal(shoot)
	require.NoError(t, err)
	cluster.Spec.Shoot = runtime.RawExtension{Raw: raw}
	require.NoError(t, seed.Client.Update(ctx, cluster))
	t.Cleanup(func() {
		require.NoError(t, seed.Client.Get(ctx, client.ObjectKey{Name: string(tn)}, cluster))
		cluster.Spec.Shoot = before
		require.NoError(t, seed.Client.Update(ctx, cluster))
	})
}
