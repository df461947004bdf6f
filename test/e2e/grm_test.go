package e2e

import (
	"context"
	"testing"
	"time"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/landscape"
)

// GRM per seed, on events alone, through the real cluster sources: a ManagedResource created in
// the seed's namespace of the landscape's shoot (tenant shoot--local--demo) is applied into the
// shoot; a manual edit there reaches the function through the target source (its watchers of
// that tenant, the tenant extension) and is reverted; the health function reports it
// healthy; deleting the ManagedResource deletes its objects from the shoot.
func TestManagedResourceAppliedIntoTheShootOnEvents(t *testing.T) {
	ctx := context.Background()
	seed, shoot := land.Env.Client, land.Shoot.Client
	startSources(t, noSweeps())

	name := "e2e-" + utilrand.String(5)
	ns := string(landscape.Tenant)
	manifest := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  namespace: default\ndata:\n  key: desired\n"
	require.NoError(t, seed.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{"objects.yaml": []byte(manifest)}}))
	mr := &resourcesv1alpha1.ManagedResource{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       resourcesv1alpha1.ManagedResourceSpec{SecretRefs: []corev1.LocalObjectReference{{Name: name}}},
	}
	require.NoError(t, seed.Create(ctx, mr))
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
	// The source's watch of ManagedResources may start after the creation: touch it until then.
	touchUntil(t, mr, annotateOperation(mr), func() bool { return exists(shoot, cm) }, "the ManagedResource is applied into the shoot")

	// A manual edit in the shoot is reverted on its own event; the target source's watches
	// start one by one after the tenant is discovered, so the edit is repeated until one is seen.
	reverted := func() bool {
		got := &corev1.ConfigMap{}
		return shoot.Get(ctx, client.ObjectKeyFromObject(cm), got) == nil && got.Data["key"] == "desired"
	}
	for i := 0; ; i++ {
		require.Less(t, i, 60, "a manual edit in the shoot was reverted within 30s")
		require.NoError(t, shoot.Get(ctx, client.ObjectKeyFromObject(cm), cm))
		cm.Data["key"] = "edited by hand"
		require.NoError(t, shoot.Update(ctx, cm))
		if eventually(reverted, 500*time.Millisecond) {
			break
		}
	}

	require.True(t, eventually(func() bool {
		got := &resourcesv1alpha1.ManagedResource{}
		if seed.Get(ctx, client.ObjectKeyFromObject(mr), got) != nil {
			return false
		}
		for _, c := range got.Status.Conditions {
			if c.Type == resourcesv1alpha1.ResourcesHealthy && c.Status == "True" {
				return true
			}
		}
		return false
	}, 30*time.Second), "the health function reports the ManagedResource healthy")

	require.NoError(t, seed.Delete(ctx, mr))
	require.True(t, eventually(func() bool {
		return apierrors.IsNotFound(shoot.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})) &&
			apierrors.IsNotFound(seed.Get(ctx, client.ObjectKeyFromObject(mr), &resourcesv1alpha1.ManagedResource{}))
	}, 30*time.Second), "deleting the ManagedResource deletes its objects, then its finalizer goes")
}

// annotateOperation touches a ManagedResource with Gardener's operation annotation: an event
// its predicate lets through.
func annotateOperation(obj client.Object) func(int) {
	return func(int) { obj.SetAnnotations(map[string]string{"gardener.cloud/operation": "reconcile"}) }
}
