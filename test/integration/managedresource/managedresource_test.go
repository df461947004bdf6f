package managedresource_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/gardener-knative/gardener-knative/pkg/controller/managedresource"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func deployment(namespace string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: ` + namespace + `
  annotations:
    resources.gardener.cloud/preserve-replicas: "true"
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx
`
}

// A ManagedResource's objects, from every key of its Secrets (Brotli-compressed too), are
// created in the target with the origin, the managed-by label and the injected labels (pod
// templates too); its status lists them with the data's checksum, and ResourcesApplied says so.
func TestAppliesObjectsAndReportsThem(t *testing.T) {
	ctx := context.Background()
	h := singleTarget(t)
	ns := namespace(t, shootA)
	var compressed bytes.Buffer
	w := brotli.NewWriter(&compressed)
	_, _ = w.Write([]byte(configMap(ns, "compressed", "b")))
	require.NoError(t, w.Close())
	_, mr := manifest(t, ns, "app", map[string]string{
		"objects.yaml": docs(configMap(ns, "plain", "a"), deployment(ns)),
		"data.yaml.br": compressed.String(),
	}, func(mr *resourcesv1alpha1.ManagedResource) {
		mr.Spec.InjectLabels = map[string]string{"injected": "yes"}
	})

	h.Send("add", mr)

	cm := &corev1.ConfigMap{}
	require.NoError(t, shootA.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "plain"}, cm))
	assert.Equal(t, ns+"/app", cm.Annotations[resourcesv1alpha1.OriginAnnotation])
	assert.Equal(t, "gardener", cm.Labels[resourcesv1alpha1.ManagedBy])
	assert.Equal(t, "yes", cm.Labels["injected"])
	require.NoError(t, shootA.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "compressed"}, &corev1.ConfigMap{}))
	d := &appsv1.Deployment{}
	require.NoError(t, shootA.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, d))
	assert.Equal(t, "yes", d.Spec.Template.Labels["injected"], "labels are injected into pod templates")

	got := get(t, mr)
	assert.Contains(t, got.Finalizers, "resources.gardener.cloud/gardener-resource-manager")
	assert.Len(t, got.Status.Resources, 3)
	assert.Equal(t, got.Generation, got.Status.ObservedGeneration)
	assert.NotEmpty(t, ptr.Deref(got.Status.SecretsDataChecksum, ""))
	status, reason, _ := condition(got, "ResourcesApplied")
	assert.Equal(t, "True", status)
	assert.Equal(t, resourcesv1alpha1.ConditionApplySucceeded, reason)
	status, reason, _ = condition(got, "ResourcesHealthy")
	assert.Equal(t, "Unknown", status, "the health checks are pending for a new set of resources")
	assert.Equal(t, resourcesv1alpha1.ConditionChecksPending, reason)

	// A reconcile with nothing changed writes nothing, in either cluster. (The first one after
	// the objects were created patches the Deployment once, without a change: its manifest
	// leaves out what the API server defaults. The server's answer keeps its resourceVersion,
	// and the function does not send the same patch of the same version again.)
	h.Send("update", mr)
	h.ResetRequests()
	h.TargetCounter.Reset()
	h.Send("update", mr)
	for _, verb := range []string{"create", "update", "patch", "delete"} {
		assert.Zero(t, h.Requests(verb), "source %s", verb)
		assert.Zero(t, h.TargetCounter.Total(verb), "target %s", verb)
	}

	// Manual changes are reconciled back: on the object's own event.
	cm.Data["key"] = "changed by hand"
	require.NoError(t, shootA.Client.Update(ctx, cm))
	h.SendTarget("update", cm, "")
	require.NoError(t, shootA.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm))
	assert.Equal(t, "a", cm.Data["key"])

	// preserve-replicas keeps what someone else scaled the Deployment to.
	d.Spec.Replicas = ptr.To(int32(5))
	require.NoError(t, shootA.Client.Update(ctx, d))
	h.ResetRequests()
	h.Sweep("sync")
	require.NoError(t, shootA.Client.Get(ctx, client.ObjectKeyFromObject(d), d))
	assert.Equal(t, int32(5), *d.Spec.Replicas)
	// A sweep that runs once (a single target) lists no Secrets, which would read every
	// namespace's: it reads its ManagedResources' Secrets.
	assert.Zero(t, h.Counter.Of("list", "secrets"))
	assert.Positive(t, h.Counter.Of("get", "secrets"))
}

// Objects no longer described are deleted, unless they keep themselves; objects now of mode
// Ignore are released (no origin), not deleted.
func TestRemovedObjectsAreDeletedOrReleased(t *testing.T) {
	ctx := context.Background()
	h := singleTarget(t)
	ns := namespace(t, shootA)
	kept := configMap(ns, "kept", "k")
	kept = kept[:len("apiVersion: v1\nkind: ConfigMap\nmetadata:\n")] + "  annotations:\n    resources.gardener.cloud/keep-object: \"true\"\n" + kept[len("apiVersion: v1\nkind: ConfigMap\nmetadata:\n"):]
	secret, mr := manifest(t, ns, "app", map[string]string{"objects.yaml": docs(configMap(ns, "stays", "a"), configMap(ns, "goes", "b"), configMap(ns, "released", "c"), kept)})
	h.Send("add", mr)

	released := configMap(ns, "released", "c")
	released = released[:len("apiVersion: v1\nkind: ConfigMap\nmetadata:\n")] + "  annotations:\n    resources.gardener.cloud/mode: Ignore\n" + released[len("apiVersion: v1\nkind: ConfigMap\nmetadata:\n"):]
	secret.Data = map[string][]byte{"objects.yaml": []byte(docs(configMap(ns, "stays", "a"), released))}
	require.NoError(t, seed.Client.Update(ctx, secret))
	h.Sweep("sync") // data changed in place is the sync's

	err := shootA.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "goes"}, &corev1.ConfigMap{})
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
	require.NoError(t, shootA.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "kept"}, &corev1.ConfigMap{}), "keep-object keeps it")
	cm := &corev1.ConfigMap{}
	require.NoError(t, shootA.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "released"}, cm))
	assert.NotContains(t, cm.Annotations, resourcesv1alpha1.OriginAnnotation, "released, no longer managed")
	assert.Len(t, get(t, mr).Status.Resources, 1)
}

// With the garbage collector on, a garbage-collectable ConfigMap or Secret no longer described
// is left for the collector (which deletes it once nothing references it); with it off, and for
// any other object, it is deleted as usual.
func TestGarbageCollectableObjectsAreLeftToTheCollector(t *testing.T) {
	ctx := context.Background()
	collectable := func(kind, ns, name string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: %s\nmetadata:\n  name: %s\n  namespace: %s\n  labels:\n    resources.gardener.cloud/garbage-collectable-reference: \"true\"\n", kind, name, ns)
	}
	for _, collectorOn := range []bool{true, false} {
		cfg := config(t)
		cfg.GarbageCollectorEnabled = collectorOn
		h := singleTarget(t, functiontest.WithConfig(cfg))
		ns := namespace(t, shootA)
		secret, mr := manifest(t, ns, "app", map[string]string{"objects.yaml": docs(configMap(ns, "plain", "a"),
			collectable("ConfigMap", ns, "collectable-cm"), collectable("Secret", ns, "collectable-secret"), configMap(ns, "stays", "b"))})
		h.Send("add", mr)
		secret.Data = map[string][]byte{"objects.yaml": []byte(configMap(ns, "stays", "b"))}
		require.NoError(t, seed.Client.Update(ctx, secret))
		h.Sweep("sync")

		err := shootA.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "plain"}, &corev1.ConfigMap{})
		assert.True(t, apierrors.IsNotFound(err), "collector on: %t: %v", collectorOn, err)
		errCM := shootA.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "collectable-cm"}, &corev1.ConfigMap{})
		errSecret := shootA.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "collectable-secret"}, &corev1.Secret{})
		if collectorOn {
			assert.NoError(t, errCM, "left to the collector")
			assert.NoError(t, errSecret, "left to the collector")
		} else {
			assert.True(t, apierrors.IsNotFound(errCM), "%v", errCM)
			assert.True(t, apierrors.IsNotFound(errSecret), "%v", errSecret)
		}
		assert.Len(t, get(t, mr).Status.Resources, 1)
	}
}

// A Secret whose content is no object yields a condition with the reason; the rest is applied.
func TestInvalidContentIsReported(t *testing.T) {
	ctx := context.Background()
	h := singleTarget(t)
	ns := namespace(t, shootA)
	_, mr := manifest(t, ns, "broken", map[string]string{"objects.yaml": docs(configMap(ns, "fine", "a"), "this: [is not\n")})
	h.Send("add", mr)
	status, reason, message := condition(get(t, mr), "ResourcesApplied")
	assert.Equal(t, "False", status)
	assert.Equal(t, resourcesv1alpha1.ConditionDecodingFailed, reason)
	assert.Contains(t, message, "Could not decode resource at index 1 in 'objects.yaml'")
	require.NoError(t, shootA.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fine"}, &corev1.ConfigMap{}))
}

// An ignored ManagedResource is skipped (its conditions say so); its deletion is still handled,
// and deleting a ManagedResource deletes its objects, then its finalizer goes.
func TestIgnoreAndDeletion(t *testing.T) {
	ctx := context.Background()
	h := singleTarget(t)
	ns := namespace(t, shootA)
	_, mr := manifest(t, ns, "app", map[string]string{"objects.yaml": configMap(ns, "obj", "a")})
	h.Send("add", mr)

	mr = get(t, mr)
	mr.Annotations = map[string]string{resourcesv1alpha1.Ignore: "true"}
	require.NoError(t, seed.Client.Update(ctx, mr))
	h.Send("update", mr)
	status, reason, _ := condition(get(t, mr), "ResourcesApplied")
	assert.Equal(t, "True", status)
	assert.Equal(t, resourcesv1alpha1.ConditionManagedResourceIgnored, reason)

	require.NoError(t, seed.Client.Delete(ctx, mr))
	h.Send("update", get(t, mr))
	err := shootA.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "obj"}, &corev1.ConfigMap{})
	assert.True(t, apierrors.IsNotFound(err), "deleted with the ManagedResource: %v", err)
	err = seed.Client.Get(ctx, client.ObjectKeyFromObject(mr), &resourcesv1alpha1.ManagedResource{})
	assert.True(t, apierrors.IsNotFound(err), "the finalizer is gone: %v", err)
}

// keepObjects leaves the objects when the ManagedResource goes.
func TestKeepObjects(t *testing.T) {
	ctx := context.Background()
	h := singleTarget(t)
	ns := namespace(t, shootA)
	_, mr := manifest(t, ns, "app", map[string]string{"objects.yaml": configMap(ns, "obj", "a")},
		func(mr *resourcesv1alpha1.ManagedResource) { mr.Spec.KeepObjects = ptr.To(true) })
	h.Send("add", mr)
	require.NoError(t, seed.Client.Delete(ctx, mr))
	h.Send("update", get(t, mr))
	require.NoError(t, shootA.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "obj"}, &corev1.ConfigMap{}))
}

// A ManagedResource of another class is not this deployment's.
func TestOtherClassIsLeftAlone(t *testing.T) {
	ctx := context.Background()
	h := singleTarget(t)
	ns := namespace(t, shootA)
	_, mr := manifest(t, ns, "seed-class", map[string]string{"objects.yaml": configMap(ns, "obj", "a")},
		func(mr *resourcesv1alpha1.ManagedResource) { mr.Spec.Class = ptr.To("seed") })
	h.Send("add", mr)
	err := shootA.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "obj"}, &corev1.ConfigMap{})
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
	assert.Empty(t, get(t, mr).Finalizers)
}

// A ManagedResource whose class changes is handed over as in Gardener: the instance of the new
// class waits while the old class's finalizer is there; the old class's instance deletes what it
// applied and removes its finalizer; then the new class's applies it again.
func TestClassChangeHandsOver(t *testing.T) {
	ctx := context.Background()
	old := singleTarget(t)
	seedClass := config(t)
	seedClass.ResourceClass = "seed"
	newer := singleTarget(t, functiontest.WithConfig(seedClass))
	ns := namespace(t, shootA)
	_, mr := manifest(t, ns, "moving", map[string]string{"objects.yaml": configMap(ns, "obj", "a")})
	old.Send("add", mr)
	obj := client.ObjectKey{Namespace: ns, Name: "obj"}
	require.NoError(t, shootA.Client.Get(ctx, obj, &corev1.ConfigMap{}))
	assert.Equal(t, []string{defaultFinalizer}, get(t, mr).Finalizers)

	moved := get(t, mr)
	moved.Spec.Class = ptr.To("seed")
	require.NoError(t, seed.Client.Update(ctx, moved))
	newer.Send("update", get(t, mr))
	assert.Equal(t, []string{defaultFinalizer}, get(t, mr).Finalizers, "the new class waits for the old one's cleanup")

	old.Send("update", get(t, mr))
	err := shootA.Client.Get(ctx, obj, &corev1.ConfigMap{})
	assert.True(t, apierrors.IsNotFound(err), "the old class deletes what it applied: %v", err)
	assert.Empty(t, get(t, mr).Finalizers)

	newer.Send("update", get(t, mr))
	require.NoError(t, shootA.Client.Get(ctx, obj, &corev1.ConfigMap{}))
	assert.Equal(t, []string{defaultFinalizer + "-seed"}, get(t, mr).Finalizers)
}

// sourceClientConnection.namespaces confines a deployment to those namespaces of the source: a
// ManagedResource elsewhere is not its own (nothing applied, no finalizer).
func TestNamespaceNotServedIsLeftAlone(t *testing.T) {
	ctx := context.Background()
	cfg := config(t)
	cfg.Namespaces = []string{"somewhere-else"}
	h := singleTarget(t, functiontest.WithConfig(cfg))
	ns := namespace(t, shootA)
	_, mr := manifest(t, ns, "app", map[string]string{"objects.yaml": configMap(ns, "obj", "a")})
	h.Send("add", mr)
	h.Sweep("sync")
	err := shootA.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "obj"}, &corev1.ConfigMap{})
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
	assert.Empty(t, get(t, mr).Finalizers)
}

// alwaysUpdate writes every object on every reconcile, even when nothing changed, so that
// admission sees it again; without it, a reconcile with nothing changed writes nothing.
func TestAlwaysUpdate(t *testing.T) {
	cfg := config(t)
	cfg.AlwaysUpdate = true
	h := singleTarget(t, functiontest.WithConfig(cfg))
	ns := namespace(t, shootA)
	_, _ = manifest(t, ns, "app", map[string]string{"objects.yaml": docs(configMap(ns, "a", "1"), configMap(ns, "b", "2"))})
	h.Sweep("sync")
	h.TargetCounter.Reset()
	h.Sweep("sync")
	assert.GreaterOrEqual(t, h.TargetCounter.Total("patch"), 2, "both objects written again")
}

// Seed mode (neither TARGET_KUBECONFIG nor MULTI_TENANT): the seed is the target, as for GRM's
// instance in the seed's garden namespace; a manual change there arrives as an event of the one
// cluster (cluster=source) and is reconciled back. (The function then writes the seed with its
// own identity, which an operator grants what GRM's seed instance may do: served as admin here.)
func TestSeedMode(t *testing.T) {
	ctx := context.Background()
	cfg := config(t)
	cfg.ResourceClass = "seed"
	h := functiontest.New(t, seed, managedresource.Function, functiontest.WithConfig(cfg))
	require.Equal(t, function.SeedMode, h.Server.Mode())
	ns := seed.Namespace(t)
	_, mr := manifest(t, ns, "seed-app", map[string]string{"objects.yaml": configMap(ns, "in-the-seed", "a")},
		func(mr *resourcesv1alpha1.ManagedResource) { mr.Spec.Class = ptr.To("seed") })
	h.Send("add", mr)
	cm := &corev1.ConfigMap{}
	require.NoError(t, seed.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "in-the-seed"}, cm))
	assert.Contains(t, get(t, mr).Finalizers, "resources.gardener.cloud/gardener-resource-manager-seed")

	cm.Data["key"] = "edited"
	require.NoError(t, seed.Client.Update(ctx, cm))
	h.Send("update", cm) // the source's event of the target's kind
	require.NoError(t, seed.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm))
	assert.Equal(t, "a", cm.Data["key"])
}

// TestOriginNamesTheClusterIdentity: with clusterID "<cluster>", the origin of the objects
// applied begins with the source cluster's identity, which the function reads from
// kube-system/cluster-identity there, as Gardener's resource manager does.
func TestOriginNamesTheClusterIdentity(t *testing.T) {
	ctx := context.Background()
	identity := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: "cluster-identity"},
		Data: map[string]string{"cluster-identity": "seed-identity"}}
	require.NoError(t, seed.Client.Create(ctx, identity))
	t.Cleanup(func() { _ = seed.Client.Delete(context.Background(), identity) })
	cfg := config(t)
	cfg.ClusterID = "<cluster>"
	h := singleTarget(t, functiontest.WithConfig(cfg))
	ns := namespace(t, shootA)
	_, mr := manifest(t, ns, "identified", map[string]string{"objects.yaml": configMap(ns, "identified", "a")})

	h.Send("add", mr)

	cm := &corev1.ConfigMap{}
	require.NoError(t, shootA.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "identified"}, cm))
	assert.Equal(t, "seed-identity:"+ns+"/identified", cm.Annotations[resourcesv1alpha1.OriginAnnotation])
}

// defaultFinalizer is the default class's finalizer (Gardener's); another class appends "-<class>".
const defaultFinalizer = "resources.gardener.cloud/gardener-resource-manager"
