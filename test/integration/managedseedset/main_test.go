// Package managedseedset_test serves the managedseedset function in-process (functiontest)
// against one real kube-apiserver and etcd and sends it the CloudEvents its sources would,
// playing gardenlet's part (Shoot, ManagedSeed and Seed status) in between.
package managedseedset_test

import (
	"context"
	"fmt"
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	seedmanagementv1alpha1 "github.com/gardener/gardener/pkg/apis/seedmanagement/v1alpha1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/managedseedset"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	// A garden's kube-apiserver may enforce that whoever creates an object that blocks its
	// owner's deletion may update the owner's finalizers: the replicas' Shoots and ManagedSeeds
	// do, so the tests run with that check on, and its checks are written down for
	// hack/leastprivilege.
	testenv.MainWith(m, &env, testenv.Options{APIServerArgs: map[string]string{
		"enable-admission-plugins": "OwnerReferencesPermissionEnforcement",
	}, AuthorizationLog: true})
}

// garden is the namespace ManagedSeedSets and ManagedSeeds live in.
const garden = v1beta1constants.GardenNamespace

type fixture struct {
	*functiontest.Harness
}

func newFixture(t testing.TB, options ...functiontest.Option) *fixture {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: garden}}
	require.NoError(t, client.IgnoreAlreadyExists(env.Client.Create(context.Background(), ns)))
	options = append([]functiontest.Option{functiontest.WithConfig(&managedseedset.Config{MaxShootRetries: 3}), functiontest.AsFunction()}, options...)
	return &fixture{Harness: functiontest.New(t, env, managedseedset.Function, options...)}
}

// newSet creates a set named name with the given replica count, selecting (and templating) the
// label app=<name>.
func newSet(t testing.TB, name string, replicas int32) *seedmanagementv1alpha1.ManagedSeedSet {
	t.Helper()
	labels := map[string]string{"app": name}
	set := &seedmanagementv1alpha1.ManagedSeedSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: garden, Labels: labels}}
	set.Spec.Replicas = &replicas
	set.Spec.Selector = metav1.LabelSelector{MatchLabels: labels}
	set.Spec.ShootTemplate.Labels = labels
	set.Spec.ShootTemplate.Spec.CloudProfileName = ptr.To("aws")
	set.Spec.ShootTemplate.Spec.Region = "eu-west-1"
	set.Spec.ShootTemplate.Spec.DNS = &gardencorev1beta1.DNS{Domain: ptr.To("replica-name.seeds.example.com")}
	set.Spec.Template.Labels = labels
	set.Spec.Template.Spec.Gardenlet.Config = runtime.RawExtension{Raw: []byte(fmt.Sprintf(
		`{"apiVersion":"gardenlet.config.gardener.cloud/v1alpha1","kind":"GardenletConfiguration","seedConfig":{"metadata":{"labels":{"app":%q}},"spec":{"ingress":{"domain":"ingress.replica-name.seeds.example.com"}}}}`, name))}
	require.NoError(t, env.Client.Create(context.Background(), set))
	t.Cleanup(func() { removeSet(t, set) })
	return set
}

// removeSet deletes a test's set and its replicas, finalizers and all, so that the next test's
// sweeps meet only their own set.
func removeSet(t testing.TB, set *seedmanagementv1alpha1.ManagedSeedSet) {
	ctx := context.Background()
	selector := client.MatchingLabels{"app": set.Name}
	lists := []client.ObjectList{&gardencorev1beta1.ShootList{}, &seedmanagementv1alpha1.ManagedSeedList{}, &gardencorev1beta1.SeedList{}, &seedmanagementv1alpha1.ManagedSeedSetList{}}
	for _, list := range lists {
		require.NoError(t, env.Client.List(ctx, list, selector))
		items, err := meta.ExtractList(list)
		require.NoError(t, err)
		for _, item := range items {
			obj := item.(client.Object)
			obj.SetFinalizers(nil)
			if err := env.Client.Update(ctx, obj); !apierrors.IsNotFound(err) {
				require.NoError(t, err)
			}
			require.NoError(t, client.IgnoreNotFound(env.Client.Delete(ctx, obj)))
		}
	}
}

func getSet(t testing.TB, name string) *seedmanagementv1alpha1.ManagedSeedSet {
	t.Helper()
	set := &seedmanagementv1alpha1.ManagedSeedSet{}
	require.NoError(t, env.Client.Get(context.Background(), client.ObjectKey{Namespace: garden, Name: name}, set))
	return set
}

func getShoot(t testing.TB, name string) *gardencorev1beta1.Shoot {
	t.Helper()
	shoot := &gardencorev1beta1.Shoot{}
	require.NoError(t, env.Client.Get(context.Background(), client.ObjectKey{Namespace: garden, Name: name}, shoot))
	return shoot
}

func getManagedSeed(t testing.TB, name string) *seedmanagementv1alpha1.ManagedSeed {
	t.Helper()
	ms := &seedmanagementv1alpha1.ManagedSeed{}
	require.NoError(t, env.Client.Get(context.Background(), client.ObjectKey{Namespace: garden, Name: name}, ms))
	return ms
}

func exists(t testing.TB, obj client.Object) bool {
	t.Helper()
	err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
	if apierrors.IsNotFound(err) {
		return false
	}
	require.NoError(t, err)
	return true
}

// shootReconciled plays gardenlet: the Shoot's latest spec was created successfully.
func shootReconciled(t testing.TB, name string) *gardencorev1beta1.Shoot {
	t.Helper()
	shoot := getShoot(t, name)
	shoot.Status.ObservedGeneration = shoot.Generation
	shoot.Status.LastOperation = &gardencorev1beta1.LastOperation{Type: gardencorev1beta1.LastOperationTypeCreate, State: gardencorev1beta1.LastOperationStateSucceeded, Progress: 100, LastUpdateTime: metav1.Now()}
	require.NoError(t, env.Client.Status().Update(context.Background(), shoot))
	return shoot
}

// shootHealth plays GCM's shoot status label controller.
func shootHealth(t testing.TB, name, health string) *gardencorev1beta1.Shoot {
	t.Helper()
	shoot := getShoot(t, name)
	metav1.SetMetaDataLabel(&shoot.ObjectMeta, v1beta1constants.ShootStatus, health)
	require.NoError(t, env.Client.Update(context.Background(), shoot))
	return shoot
}

// managedSeedRegistered plays gardenlet's ManagedSeed controller.
func managedSeedRegistered(t testing.TB, name string) *seedmanagementv1alpha1.ManagedSeed {
	t.Helper()
	ms := getManagedSeed(t, name)
	ms.Status.ObservedGeneration = ms.Generation
	ms.Status.Conditions = []gardencorev1beta1.Condition{{Type: seedmanagementv1alpha1.SeedRegistered, Status: gardencorev1beta1.ConditionTrue, Reason: "SeedRegistered", LastTransitionTime: metav1.Now(), LastUpdateTime: metav1.Now()}}
	require.NoError(t, env.Client.Status().Update(context.Background(), ms))
	return ms
}

// readySeed plays the registered gardenlet: its Seed, labelled as the set selects, ready.
func readySeed(t testing.TB, name string, labels map[string]string) *gardencorev1beta1.Seed {
	t.Helper()
	ctx := context.Background()
	seed := &gardencorev1beta1.Seed{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	require.NoError(t, env.Client.Create(ctx, seed))
	seed.Status.ObservedGeneration = seed.Generation
	seed.Status.Conditions = []gardencorev1beta1.Condition{
		{Type: gardencorev1beta1.GardenletReady, Status: gardencorev1beta1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Now(), LastUpdateTime: metav1.Now()},
		{Type: gardencorev1beta1.SeedSystemComponentsHealthy, Status: gardencorev1beta1.ConditionTrue, Reason: "Healthy", LastTransitionTime: metav1.Now(), LastUpdateTime: metav1.Now()},
	}
	require.NoError(t, env.Client.Status().Update(ctx, seed))
	return seed
}

// events lists the reasons of the Events recorded on the set.
func events(t testing.TB, set *seedmanagementv1alpha1.ManagedSeedSet) []string {
	t.Helper()
	list := &corev1.EventList{}
	require.NoError(t, env.Client.List(context.Background(), list, client.InNamespace(garden)))
	var reasons []string
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == "ManagedSeedSet" && e.InvolvedObject.Name == set.Name {
			reasons = append(reasons, e.Reason)
		}
	}
	return reasons
}

func getShootKey(name string) *gardencorev1beta1.Shoot {
	return &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: garden}}
}

func getManagedSeedKey(name string) *seedmanagementv1alpha1.ManagedSeed {
	return &seedmanagementv1alpha1.ManagedSeed{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: garden}}
}

// newTenantShoot creates a Shoot of a project scheduled on seed.
func newTenantShoot(t testing.TB, name, seed string) *gardencorev1beta1.Shoot {
	t.Helper()
	shoot := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: env.Namespace(t)}}
	shoot.Spec.SeedName = ptr.To(seed)
	require.NoError(t, env.Client.Create(context.Background(), shoot))
	return shoot
}
