package runtime_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// childFunction creates, for each primary ConfigMap not being deleted, a ConfigMap
// "<name>-child"; between its read of the primary and its create, between (if set) runs what a
// concurrent reconcile does meanwhile.
func childFunction(between *func(primary *corev1.ConfigMap), writeStatusAfter bool) *function.Function {
	return &function.Function{
		Name: "child",
		RBAC: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "create", "patch", "delete"}}},
		Reconcilers: []function.Reconciler{{
			Name: "main", For: kinds.ConfigMap,
			New: func(deps function.Deps) (function.Handler, error) {
				return function.HandlerFunc(func(ctx context.Context, req function.Request) error {
					primary := &corev1.ConfigMap{}
					if err := req.Reader.Get(ctx, req.Key, primary); err != nil {
						return client.IgnoreNotFound(err)
					}
					if primary.DeletionTimestamp != nil || primary.Labels["role"] != "primary" {
						return nil
					}
					if *between != nil {
						(*between)(primary)
						*between = nil
					}
					child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: req.Key.Namespace, Name: req.Key.Name + "-child"}}
					if err := deps.Source.Writer.Create(ctx, child); client.IgnoreAlreadyExists(err) != nil {
						return err
					}
					if writeStatusAfter {
						_, err := deps.Source.Writer.Patch(ctx, primary, func() { metav1.SetMetaDataAnnotation(&primary.ObjectMeta, "child", child.Name) })
						return err
					}
					return nil
				}), nil
			},
		}},
		Watches: []function.Watch{{Kind: kinds.ConfigMap, Reconciler: "main"}},
	}
}

func primaryConfigMap(t *testing.T, ns string) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "primary", Labels: map[string]string{"role": "primary"}}}
	require.NoError(t, env.Client.Create(context.Background(), cm))
	return cm
}

func childExists(t *testing.T, ns string) bool {
	t.Helper()
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "primary-child"}, &corev1.ConfigMap{})
	require.True(t, err == nil || apierrors.IsNotFound(err), "%v", err)
	return err == nil
}

// The owner guard: a reconcile that read its primary before the primary was deleted creates its
// child after that; the runtime checks the primary once, finds it gone, deletes the child and
// reconciles the key again, which finds nothing to do. Nothing created outlives its owner. A
// primary that stays costs the one check; a conditional write on the primary after the create
// proves it unchanged and costs none.
func TestOwnerGuard(t *testing.T) {
	ctx := context.Background()
	var between func(*corev1.ConfigMap)
	h := functiontest.New(t, env, childFunction(&between, false), functiontest.AsFunction())

	ns := namespace(t)
	primary := primaryConfigMap(t, ns)
	between = func(p *corev1.ConfigMap) { require.NoError(t, env.Client.Delete(ctx, p)) }
	h.Send("add", primary)
	assert.False(t, childExists(t, ns), "the child of a deleted owner is undone")
	assert.Equal(t, 1.0, h.Metric("gardener_knative_owner_guard_total", map[string]string{"outcome": "owner-lost"}))

	// An owner that stays: one metadata-only GET after the create.
	ns = namespace(t)
	primary = primaryConfigMap(t, ns)
	h.ResetRequests()
	h.Send("add", primary)
	assert.True(t, childExists(t, ns))
	assert.Equal(t, 2, h.Requests("get"), "the primary read, and once checked after the create")
	assert.Equal(t, 1.0, h.Metric("gardener_knative_owner_guard_total", map[string]string{"outcome": "owner-kept"}))

	// Replaced: deleted and created again under the same name while the reconcile ran.
	ns = namespace(t)
	primary = primaryConfigMap(t, ns)
	between = func(p *corev1.ConfigMap) {
		require.NoError(t, env.Client.Delete(ctx, p))
		primaryConfigMap(t, ns).Labels = nil
	}
	h.Send("add", primary)
	assert.Equal(t, 2.0, h.Metric("gardener_knative_owner_guard_total", map[string]string{"outcome": "owner-lost"}), "a new UID is another owner")
	assert.True(t, childExists(t, ns), "the new primary's reconcile, from live state, creates its own child")
}

// A conditional write on the primary after the create proves it unchanged: no check.
func TestOwnerGuardProvenByAWrite(t *testing.T) {
	var between func(*corev1.ConfigMap)
	h := functiontest.New(t, env, childFunction(&between, true), functiontest.AsFunction())
	ns := namespace(t)
	primary := primaryConfigMap(t, ns)
	h.ResetRequests()
	h.Send("add", primary)
	assert.True(t, childExists(t, ns))
	assert.Equal(t, 1, h.Requests("get"), "the primary read only")
	assert.Zero(t, h.Metric("gardener_knative_owner_guard_total", nil))
}

// A sweep's reconcile that wants to create decides again from live reads first.
func TestSweepsNeverCreateFromASnapshot(t *testing.T) {
	var between func(*corev1.ConfigMap)
	ns := namespace(t)
	fn := childFunction(&between, true)
	fn.Sweeps = []function.Sweep{{Name: "resync", Schedule: "* * * * *", Reconciler: "main", Primary: function.List{Kind: kinds.ConfigMap, Namespace: ns}}}
	h := functiontest.New(t, env, fn, functiontest.AsFunction())
	primaryConfigMap(t, ns)
	h.ResetRequests()
	h.Sweep("resync")
	assert.True(t, childExists(t, ns), "created after a live read")
	assert.Equal(t, 1, h.Requests("get"), "the primary read live once, for the create")
}
