// Package seed_test serves the seed function in-process (functiontest) against a real
// kube-apiserver and etcd, and sends it the CloudEvents its sources would.
package seed_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/seed"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	// A garden's kube-apiserver may enforce that whoever makes an object block its owner's
	// deletion may update the owner's finalizers: the seed namespaces block their Seed's, so the
	// tests run with that check on, and its checks are written down for hack/leastprivilege.
	testenv.MainWith(m, &env, testenv.Options{APIServerArgs: map[string]string{
		"enable-admission-plugins": "OwnerReferencesPermissionEnforcement",
	}, AuthorizationLog: true})
}

// start is where every harness's fake clock starts: Leases and conditions are written relative
// to it.
var start = time.Now().UTC().Truncate(time.Second)

// newHarness serves the seed function as its own ServiceAccount at start.
func newHarness(t testing.TB, options ...functiontest.Option) *functiontest.Harness {
	t.Helper()
	return functiontest.New(t, env, seed.Function, append([]functiontest.Option{functiontest.AsFunction(), functiontest.At(start)}, options...)...)
}

// withThresholds serves the function with Gardener's periods and the given condition thresholds.
func withThresholds(backupBuckets, extensions time.Duration) functiontest.Option {
	return functiontest.WithConfig(&seed.Config{MonitorPeriod: 40 * time.Second, ShootMonitorPeriod: 200 * time.Second,
		BackupBucketsReadyThreshold: backupBuckets, ExtensionsReadyThreshold: extensions})
}

var seedCounter atomic.Int64

// newSeed creates a Seed of a name unique in the package, with the given conditions (gardenlet
// reported before when there are any), and deletes it when the test ends: Seeds are
// cluster-scoped, and every sweep sees every Seed.
func newSeed(t testing.TB, conditions ...gardencorev1beta1.Condition) *gardencorev1beta1.Seed {
	t.Helper()
	ctx := context.Background()
	s := &gardencorev1beta1.Seed{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("it-%d", seedCounter.Add(1))}}
	s.Spec.Provider.Type = "local"
	require.NoError(t, env.Client.Create(ctx, s))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), s) })
	if len(conditions) > 0 {
		s.Status.Conditions = conditions
		require.NoError(t, env.Client.Status().Update(ctx, s))
	}
	return s
}

// gardenletReady is the condition a healthy gardenlet reports.
func gardenletReady(at time.Time) gardencorev1beta1.Condition {
	return gardencorev1beta1.Condition{Type: gardencorev1beta1.GardenletReady, Status: gardencorev1beta1.ConditionTrue, Reason: "GardenletReady",
		Message: "Gardenlet is posting ready status.", LastTransitionTime: metav1.NewTime(at), LastUpdateTime: metav1.NewTime(at)}
}

// ensureNamespace creates a namespace of a fixed name once.
func ensureNamespace(t testing.TB, name string) {
	t.Helper()
	require.NoError(t, client.IgnoreAlreadyExists(env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})))
}

// renewLease creates or renews the gardenlet Lease of seed at renewed.
func renewLease(t testing.TB, seedName string, renewed time.Time) *coordinationv1.Lease {
	t.Helper()
	ctx := context.Background()
	ensureNamespace(t, gardencorev1beta1.GardenerSeedLeaseNamespace)
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: seedName, Namespace: gardencorev1beta1.GardenerSeedLeaseNamespace}}
	err := env.Client.Get(ctx, client.ObjectKeyFromObject(lease), lease)
	if client.IgnoreNotFound(err) != nil {
		require.NoError(t, err)
	}
	lease.Spec.HolderIdentity = &seedName
	lease.Spec.RenewTime = &metav1.MicroTime{Time: renewed}
	if err != nil {
		require.NoError(t, env.Client.Create(ctx, lease))
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), lease) })
	} else {
		require.NoError(t, env.Client.Update(ctx, lease))
	}
	return lease
}

func getSeed(t testing.TB, name string) *gardencorev1beta1.Seed {
	t.Helper()
	s := &gardencorev1beta1.Seed{}
	require.NoError(t, env.Client.Get(context.Background(), client.ObjectKey{Name: name}, s))
	return s
}

func condition(t testing.TB, seedName string, conditionType gardencorev1beta1.ConditionType) *gardencorev1beta1.Condition {
	t.Helper()
	for _, c := range getSeed(t, seedName).Status.Conditions {
		if c.Type == conditionType {
			return &c
		}
	}
	return nil
}
