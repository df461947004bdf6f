package managedresource_test

import (
	"context"
	"testing"
	"time"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/managedresource"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

// operated asks for a reconcile with Gardener's operation annotation, as an operator does, and
// returns the ManagedResource to send: its event passes the predicate, whatever else changed.
func operated(t *testing.T, mr *resourcesv1alpha1.ManagedResource) *resourcesv1alpha1.ManagedResource {
	t.Helper()
	fresh := get(t, mr)
	patch := client.MergeFrom(fresh.DeepCopy())
	metav1.SetMetaDataAnnotation(&fresh.ObjectMeta, "gardener.cloud/operation", "reconcile")
	require.NoError(t, seed.Client.Patch(context.Background(), fresh, patch))
	return fresh
}

func inShoot(t *testing.T, ns, name string) bool {
	t.Helper()
	err := shootA.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &corev1.ConfigMap{})
	require.True(t, err == nil || apierrors.IsNotFound(err), "%v", err)
	return err == nil
}

// Two replicas: A read the ManagedResource before its deletion began and found its object
// missing; B deleted the objects and removed the finalizer; then A creates the object. The owner
// guard finds the ManagedResource gone and deletes it: nothing stays in the shoot for good
// (issue case 1; before, the object stayed: the sweep lists only ManagedResources, and the
// creation's event is dropped by the drift predicate).
func TestCreateAfterTheDeletionIsUndone(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, shootA)
	b := singleTarget(t)
	_, mr := manifest(t, ns, "late", map[string]string{"objects.yaml": configMap(ns, "late", "a")})
	b.Send("add", mr)
	require.True(t, inShoot(t, ns, "late"))
	require.NoError(t, shootA.Client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "late"}}))

	hook := &testenv.Create{Resource: "configmaps", Name: "late"}
	a := singleTarget(t, functiontest.WithTargetRESTConfig(testenv.Interleave(hook)))
	hook.Before = func() {
		// Meanwhile, B: the ManagedResource is deleted and B completes the deletion.
		require.NoError(t, seed.Client.Delete(ctx, get(t, mr)))
		b.Send("update", get(t, mr))
		require.Eventually(t, func() bool {
			return apierrors.IsNotFound(seed.Client.Get(ctx, client.ObjectKeyFromObject(mr), &resourcesv1alpha1.ManagedResource{}))
		}, 5*time.Second, 50*time.Millisecond)
	}
	a.Send("update", mr)
	assert.False(t, inShoot(t, ns, "late"), "the object created for a deleted ManagedResource is undone")
	assert.Equal(t, 1.0, a.Metric("gardener_knative_owner_guard_total", map[string]string{"outcome": "owner-lost"}))
}

// One reconcile: the ManagedResource gains an object, the reconcile creates it, the deletion
// begins before the reconcile writes its status. status.resources named the new object before it
// was created (write-ahead), and the owner guard finds the deletion: both the old object and the
// new are deleted (issue case 2; before, the retry deleted only the old status.resources).
func TestObjectAddedWhileTheDeletionBeginsIsDeleted(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, shootA)
	secret, mr := manifest(t, ns, "growing", map[string]string{"objects.yaml": configMap(ns, "old", "a")})
	hook := &testenv.Create{Resource: "configmaps", Name: "added"}
	h := singleTarget(t, functiontest.WithTargetRESTConfig(testenv.Interleave(hook)))
	h.Send("add", mr)
	require.True(t, inShoot(t, ns, "old"))

	secret.Data["objects.yaml"] = []byte(docs(configMap(ns, "old", "a"), configMap(ns, "added", "b")))
	require.NoError(t, seed.Client.Update(ctx, secret))
	hook.After = func() {
		var recorded []string
		for _, r := range get(t, mr).Status.Resources {
			recorded = append(recorded, r.Name)
		}
		assert.Contains(t, recorded, "added", "written ahead of its create")
		require.NoError(t, seed.Client.Delete(ctx, get(t, mr)))
	}
	h.Send("update", operated(t, mr))
	require.True(t, hook.Done(), "the reconcile created the added object")
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(seed.Client.Get(ctx, client.ObjectKeyFromObject(mr), &resourcesv1alpha1.ManagedResource{}))
	}, 5*time.Second, 50*time.Millisecond)
	assert.False(t, inShoot(t, ns, "old"))
	assert.False(t, inShoot(t, ns, "added"), "the object created as the deletion began is deleted too")
}

func TestWriteAhead(t *testing.T) {
	ref := func(name string) resourcesv1alpha1.ObjectReference {
		return resourcesv1alpha1.ObjectReference{ObjectReference: corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: name}}
	}
	assert.Nil(t, managedresource.WriteAhead([]resourcesv1alpha1.ObjectReference{ref("a"), ref("b")}, []resourcesv1alpha1.ObjectReference{ref("b")}), "nothing new: no write")
	assert.Equal(t, []resourcesv1alpha1.ObjectReference{ref("a"), ref("c")}, managedresource.WriteAhead([]resourcesv1alpha1.ObjectReference{ref("a")}, []resourcesv1alpha1.ObjectReference{ref("c"), ref("a")}))
}

// Two replicas, two specs: A1 decided on the Secret's older data (an object "dropped" wanted) and
// creates it after A2, on the newer data, found it stale, deleted it and wrote a status without
// it. A1's status write conflicts; it names the object again, so that the reconcile from live
// state that follows deletes it as stale (issue case 3; before, later reconciles computed "stale"
// from A2's status and never deleted it).
func TestObjectOfAnOlderSpecCreatedLateIsDeleted(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, shootA)
	secret, mr := manifest(t, ns, "respec", map[string]string{"objects.yaml": configMap(ns, "kept", "a")})
	a2 := singleTarget(t)
	a2.Send("add", mr)
	require.True(t, inShoot(t, ns, "kept"))

	// The Secret's data changed in place: "dropped" is wanted, then, while A1 creates it, no more.
	secret.Data["objects.yaml"] = []byte(docs(configMap(ns, "kept", "a"), configMap(ns, "dropped", "b")))
	require.NoError(t, seed.Client.Update(ctx, secret))
	hook := &testenv.Create{Resource: "configmaps", Name: "dropped"}
	a1 := singleTarget(t, functiontest.WithTargetRESTConfig(testenv.Interleave(hook)))
	hook.Before = func() {
		fresh := &corev1.Secret{}
		require.NoError(t, seed.Client.Get(ctx, client.ObjectKeyFromObject(secret), fresh))
		fresh.Data["objects.yaml"] = []byte(configMap(ns, "kept", "a"))
		require.NoError(t, seed.Client.Update(ctx, fresh))
		a2.Send("update", operated(t, mr))
	}
	a1.Send("update", operated(t, mr))
	require.True(t, hook.Done(), "A1 created the object of the older spec")
	assert.False(t, inShoot(t, ns, "dropped"), "the object of the older spec is deleted")
	assert.True(t, inShoot(t, ns, "kept"))
	var named []string
	for _, r := range get(t, mr).Status.Resources {
		named = append(named, r.Name)
	}
	assert.Equal(t, []string{"kept"}, named)
}
