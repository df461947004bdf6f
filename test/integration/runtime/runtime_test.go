// Package runtime_test proves the runtime's guarantees against a real kube-apiserver: every
// write path keeps fields our API types do not know, a write based on a stale read conflicts,
// duplicated, reordered and dropped events converge after one sweep, and a function whose garden
// refuses its credentials exits to take the current ones.
package runtime_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	testclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

func namespace(t *testing.T) string { return env.Namespace(t) }

// newerShoot creates a Shoot as a newer gardener-apiserver serves it: with fields in spec, in a
// list element and in status that the pinned API types do not know.
func newerShoot(t *testing.T, ns string) *gardencorev1beta1.Shoot {
	t.Helper()
	ctx := context.Background()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "core.gardener.cloud/v1beta1",
		"kind":       "Shoot",
		"metadata":   map[string]any{"name": "newer", "namespace": ns},
		"spec": map[string]any{
			"region":           "eu-1",
			"fieldOfTheFuture": "kept",
			"provider": map[string]any{"type": "local", "workers": []any{
				map[string]any{"name": "pool", "minimum": int64(1), "maximum": int64(2), "machine": map[string]any{"type": "m"}, "poolFieldOfTheFuture": "kept"},
			}},
		},
	}}
	require.NoError(t, env.Client.Create(ctx, u))
	u.Object["status"] = map[string]any{"statusFieldOfTheFuture": "kept"}
	require.NoError(t, env.Client.Status().Update(ctx, u))
	shoot := &gardencorev1beta1.Shoot{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(u), shoot))
	return shoot
}

func unknownFields(t *testing.T, shoot *gardencorev1beta1.Shoot) []string {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gardencorev1beta1.SchemeGroupVersion.WithKind("Shoot"))
	require.NoError(t, env.Client.Get(context.Background(), client.ObjectKeyFromObject(shoot), u))
	var kept []string
	if v, _, _ := unstructured.NestedString(u.Object, "spec", "fieldOfTheFuture"); v != "" {
		kept = append(kept, "spec")
	}
	workers, _, _ := unstructured.NestedSlice(u.Object, "spec", "provider", "workers")
	if len(workers) > 0 && workers[0].(map[string]any)["poolFieldOfTheFuture"] == "kept" {
		kept = append(kept, "worker")
	}
	if v, _, _ := unstructured.NestedString(u.Object, "status", "statusFieldOfTheFuture"); v != "" {
		kept = append(kept, "status")
	}
	return kept
}

// Every write path of the Writer keeps the fields our types do not know, even when it changes
// the list element that carries one.
func TestWritesKeepFieldsTheTypesDoNotKnow(t *testing.T) {
	ctx := context.Background()
	w := function.NewWriter(env.Client)
	shoot := newerShoot(t, namespace(t))
	all := []string{"spec", "worker", "status"}
	require.Equal(t, all, unknownFields(t, shoot))

	changed, err := w.Patch(ctx, shoot, func() {
		metav1.SetMetaDataLabel(&shoot.ObjectMeta, "patched", "true")
		shoot.Finalizers = append(shoot.Finalizers, "gardener.cloud/reference-protection")
		shoot.Spec.Provider.Workers[0].Maximum = 5
	})
	require.NoError(t, err)
	assert.True(t, changed)
	assert.Equal(t, all, unknownFields(t, shoot), "after Patch")
	assert.Equal(t, int32(5), shoot.Spec.Provider.Workers[0].Maximum, "the object holds the server's answer")

	changed, err = w.PatchStatus(ctx, shoot, func() {
		shoot.Status.Conditions = function.SetCondition(testclock.NewFakePassiveClock(time.Now()), shoot.Status.Conditions, "APIServerAvailable", gardencorev1beta1.ConditionTrue, "Healthy", "ok")
	})
	require.NoError(t, err)
	assert.True(t, changed)
	assert.Equal(t, all, unknownFields(t, shoot), "after PatchStatus")

	changed, err = w.Patch(ctx, shoot, func() {})
	require.NoError(t, err)
	assert.False(t, changed, "a patch that changes nothing is not sent")

	// Delete with a finalizer leaves the object (deletion timestamp set): its fields are intact.
	require.NoError(t, w.Delete(ctx, shoot))
	assert.Equal(t, all, unknownFields(t, shoot), "after Delete")
	_, err = w.Patch(ctx, shoot, func() { shoot.Finalizers = nil })
	assert.True(t, apierrors.IsConflict(err), "the delete changed the object, so the copy read before it is stale: %v", err)
}

// A write based on a stale read conflicts instead of overwriting newer state.
func TestStaleWritesConflict(t *testing.T) {
	ctx := context.Background()
	w := function.NewWriter(env.Client)
	ns := namespace(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: ns}, Data: map[string]string{"v": "1"}}
	require.NoError(t, w.Create(ctx, cm))
	stale := cm.DeepCopy()
	cm.Data["v"] = "2"
	require.NoError(t, env.Client.Update(ctx, cm)) // someone else

	_, err := w.Patch(ctx, stale, func() { stale.Data["other"] = "x" })
	assert.True(t, apierrors.IsConflict(err), "patch: %v", err)
	err = w.Delete(ctx, stale)
	assert.True(t, apierrors.IsConflict(err), "delete: %v", err)
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm))
	assert.Equal(t, map[string]string{"v": "2"}, cm.Data, "the newer state stands")
}

// mirror is a demo function: it copies each labelled ConfigMap's data["value"] into its
// annotation "mirror", records an Event when it does, and has a resync sweep.
var mirror = &function.Function{
	Name: "mirror",
	RBAC: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create"}},
	},
	Reconcilers: []function.Reconciler{{
		Name: "main", For: kinds.ConfigMap,
		New: func(deps function.Deps) (function.Handler, error) {
			return function.HandlerFunc(func(ctx context.Context, req function.Request) error {
				cm := &corev1.ConfigMap{}
				if err := req.Reader.Get(ctx, req.Key, cm); err != nil {
					return err
				}
				changed, err := deps.Source.Writer.Patch(ctx, cm, func() { metav1.SetMetaDataAnnotation(&cm.ObjectMeta, "mirror", cm.Data["value"]) })
				if changed {
					deps.Events.Event(ctx, cm, corev1.EventTypeNormal, "Mirrored", "mirrored "+cm.Data["value"])
				}
				return err
			}), nil
		},
	}},
	Watches: []function.Watch{{Kind: kinds.ConfigMap, Reconciler: "main"}},
	Sweeps: []function.Sweep{{Name: "resync", Schedule: "* * * * *", Reconciler: "main",
		Primary: function.List{Kind: kinds.ConfigMap, LabelSelector: "mirror=true"}}},
}

// Events are duplicated, reordered and dropped; one sweep converges everything to the current
// state, and the function needed no more than its declared RBAC.
func TestDuplicatedReorderedAndDroppedEventsConvergeAfterOneSweep(t *testing.T) {
	ctx := context.Background()
	h := functiontest.New(t, env, mirror, functiontest.AsFunction())
	ns := namespace(t)
	cms := map[string]*corev1.ConfigMap{}
	for _, name := range []string{"duplicated", "reordered", "dropped"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"mirror": "true"}}, Data: map[string]string{"value": "v1"}}
		require.NoError(t, env.Client.Create(ctx, cm))
		cms[name] = cm
	}

	h.Send("add", cms["duplicated"])
	h.Send("add", cms["duplicated"])
	old := cms["reordered"].DeepCopy()
	cms["reordered"].Data["value"] = "v2"
	require.NoError(t, env.Client.Update(ctx, cms["reordered"]))
	h.Send("update", cms["reordered"])
	h.Send("add", old) // the older event arrives last: the function reads the current state
	// "dropped" gets no event at all.

	mirrored := func(name string) string {
		cm := &corev1.ConfigMap{}
		require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cm))
		return cm.Annotations["mirror"]
	}
	assert.Equal(t, "v1", mirrored("duplicated"))
	assert.Equal(t, "v2", mirrored("reordered"))
	assert.Equal(t, "", mirrored("dropped"))

	requests := h.Measure(func() { h.Sweep("resync") })
	assert.Equal(t, "v1", mirrored("dropped"))
	assert.Equal(t, map[string]int{"list": 1, "patch": 1, "create": 1}, requests, "one LIST, a patch and an Event for the one object that changed")

	events := &corev1.EventList{}
	require.NoError(t, env.Client.List(ctx, events, client.InNamespace(ns)))
	var reasons []string
	for _, e := range events.Items {
		assert.Equal(t, "mirror-controller", e.Source.Component)
		assert.Equal(t, "ConfigMap", e.InvolvedObject.Kind)
		reasons = append(reasons, e.InvolvedObject.Name+":"+e.Reason)
	}
	assert.ElementsMatch(t, []string{"duplicated:Mirrored", "reordered:Mirrored", "dropped:Mirrored"}, reasons, "an Event per change, none for duplicates")

	requests = h.Measure(func() { h.Sweep("resync") })
	assert.Equal(t, map[string]int{"list": 1}, requests, "a sweep with nothing to do writes nothing")
}

// A request the declared RBAC does not allow fails as it would in a cluster: terminal,
// acknowledged, counted.
func TestMissingRBACIsTerminal(t *testing.T) {
	ctx := context.Background()
	narrow := *mirror
	narrow.Name = "narrow"
	narrow.RBAC = []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}}
	h := functiontest.New(t, env, &narrow, functiontest.AsFunction())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: namespace(t)}, Data: map[string]string{"value": "v"}}
	require.NoError(t, env.Client.Create(ctx, cm))
	code, body := h.Post(h.Event("add", cm))
	assert.Equal(t, 200, code, "Forbidden cannot pass by retrying: %s", body)
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm))
	assert.Empty(t, cm.Annotations)
	terminal, err := testutil.GatherAndCount(h.Registry, "gardener_knative_events_terminal_total")
	require.NoError(t, err)
	assert.Equal(t, 1, terminal, "counted as terminal")
}

// A CRD-served object that has never had a status (or any object missing a parent the typed
// object renders as {}) can still be patched: the Writer adds the missing parent.
func TestPatchAddsParentsTheServerLacks(t *testing.T) {
	ctx := context.Background()
	w := function.NewWriter(env.Client)
	project := &gardencorev1beta1.Project{ObjectMeta: metav1.ObjectMeta{Name: "no-status-" + namespace(t)}}
	require.NoError(t, env.Client.Create(ctx, project))
	changed, err := w.PatchStatus(ctx, project, func() { project.Status.Phase = gardencorev1beta1.ProjectReady })
	require.NoError(t, err)
	assert.True(t, changed)
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(project), project))
	assert.Equal(t, gardencorev1beta1.ProjectReady, project.Status.Phase)
}

// A repeated Event is counted on the first, as client-go's correlator does, instead of piling up.
func TestRepeatedEventsAreCounted(t *testing.T) {
	ctx := context.Background()
	clk := testclock.NewFakeClock(time.Now())
	recorder := function.NewEventRecorder(env.Client, "test-controller", clk, slog.New(slog.NewTextHandler(io.Discard, nil)))
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: namespace(t)}}
	require.NoError(t, env.Client.Create(ctx, cm))
	recorder.Event(ctx, cm, corev1.EventTypeWarning, "Blocked", "still referenced")
	clk.Step(time.Minute)
	recorder.Event(ctx, cm, corev1.EventTypeWarning, "Blocked", "still referenced")
	recorder.Event(ctx, cm, corev1.EventTypeNormal, "Released", "free")

	events := &corev1.EventList{}
	require.NoError(t, env.Client.List(ctx, events, client.InNamespace(cm.Namespace)))
	counts := map[string]int32{}
	for _, e := range events.Items {
		counts[e.Reason] = e.Count
		assert.Equal(t, "test-controller", e.Source.Component)
		if e.Reason == "Blocked" {
			assert.Equal(t, clk.Now().Unix(), e.LastTimestamp.Unix())
			assert.Equal(t, clk.Now().Add(-time.Minute).Unix(), e.FirstTimestamp.Unix())
		}
	}
	assert.Equal(t, map[string]int32{"Blocked": 2, "Released": 1}, counts)
}
