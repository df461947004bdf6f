package function

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gardener-knative/gardener-knative/pkg/scheme"
)

var leaseKind = NewKind(coordinationv1.SchemeGroupVersion, "Lease", "leases")

// A list confined to one namespace is read with that namespace and its own page size; reads
// beyond the namespace are not answered "not found" from the snapshot but go to the API server.
func TestNamespacedListWithItsOwnPageSize(t *testing.T) {
	lease := func(ns, name string) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	var lists []*client.ListOptions
	live := 0
	c := fake.NewClientBuilder().WithScheme(scheme.Gardener).
		WithObjects(lease("seeds", "a"), lease("seeds", "b"), lease("seeds", "c"), lease("kube-system", "a")).
		WithInterceptorFuncs(interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				live++
				return c.Get(ctx, key, obj, opts...)
			},
			List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				o := (&client.ListOptions{}).ApplyOptions(opts)
				lists = append(lists, o)
				if o.Limit == 0 { // the sweep pages its LISTs; a read through the snapshot does not
					live++
				}
				return c.List(ctx, list, opts...)
			},
		}).Build()

	l := List{Kind: leaseKind, Namespace: "seeds", PageSize: 1000}
	held := newListed(l, 0)
	require.NoError(t, listPages(context.Background(), c, scheme.Gardener, l, 2, func(items []client.Object) error {
		for _, item := range items {
			held.add(item)
		}
		return nil
	}))
	require.Len(t, lists, 1, "one page: the list's own page size wins over the runtime's")
	assert.Equal(t, int64(1000), lists[0].Limit)
	assert.Equal(t, "seeds", lists[0].Namespace)
	assert.Equal(t, 3, held.len())

	snap := &snapshot{live: c, scheme: scheme.Gardener, related: map[schema.GroupKind]*listed{leaseKind.GroupKind(): held}}
	ctx := context.Background()
	require.NoError(t, snap.Get(ctx, client.ObjectKey{Namespace: "seeds", Name: "b"}, &coordinationv1.Lease{}))
	assert.Equal(t, 0, live, "inside the namespace: from the snapshot")
	require.NoError(t, snap.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "a"}, &coordinationv1.Lease{}), "outside it: live, and found")
	assert.Equal(t, 1, live)

	inside := &coordinationv1.LeaseList{}
	require.NoError(t, snap.List(ctx, inside, client.InNamespace("seeds")))
	assert.Len(t, inside.Items, 3)
	assert.Equal(t, 1, live)
	everywhere := &coordinationv1.LeaseList{}
	require.NoError(t, snap.List(ctx, everywhere))
	assert.Len(t, everywhere.Items, 4, "a list beyond the namespace reads the API server")
	assert.Equal(t, 2, live)
}

// A KeysOnly list holds each object's key and its indexes, nothing else: reads by key, namespace
// and index answer metadata with the key alone, and reads that would need more are refused.
func TestKeysOnlyListHoldsKeysAndIndexes(t *testing.T) {
	lease := func(ns, name, holder string) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"a": "b"}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}
	}
	holder := func(obj client.Object) []string { return []string{*obj.(*coordinationv1.Lease).Spec.HolderIdentity} }
	l := List{Kind: leaseKind, KeysOnly: true, Annotations: []string{"keep"}, Indexes: map[string]IndexFunc{"spec.holderIdentity": holder}}
	held := newListed(l, 0)
	annotated := lease("y", "b", "h2")
	annotated.Annotations = map[string]string{"keep": "yes", "drop": "no"}
	for _, obj := range []client.Object{lease("x", "a", "h1"), annotated, lease("x", "c", "h1")} {
		held.add(obj)
	}
	assert.Nil(t, held.objects, "no objects held")
	assert.Equal(t, []Key{{Namespace: "x", Name: "a"}, {Namespace: "y", Name: "b"}, {Namespace: "x", Name: "c"}}, held.keys(), "the server's order")

	snap := &snapshot{live: fake.NewClientBuilder().WithScheme(scheme.Gardener).Build(), scheme: scheme.Gardener, related: map[schema.GroupKind]*listed{leaseKind.GroupKind(): held}}
	ctx := context.Background()
	got := &metav1.PartialObjectMetadata{}
	got.SetGroupVersionKind(leaseKind.GroupVersionKind)
	require.NoError(t, snap.Get(ctx, client.ObjectKey{Namespace: "y", Name: "b"}, got))
	assert.Equal(t, "b", got.Name)
	assert.Empty(t, got.Labels, "only the key is held")
	assert.Equal(t, map[string]string{"keep": "yes"}, got.Annotations, "and the declared annotations")
	for _, key := range held.keys() {
		assert.NoError(t, snap.Get(ctx, key, got), "found by key")
		assert.Equal(t, key, client.ObjectKeyFromObject(got))
	}
	assert.True(t, apierrors.IsNotFound(snap.Get(ctx, client.ObjectKey{Namespace: "x", Name: "b"}, got)), "a key not listed")
	require.Error(t, snap.Get(ctx, client.ObjectKey{Namespace: "y", Name: "b"}, &coordinationv1.Lease{}), "not readable in full")

	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(leaseKind.GroupVersion().WithKind("LeaseList"))
	require.NoError(t, snap.List(ctx, list, client.MatchingFields{"spec.holderIdentity": "h1"}))
	assert.Len(t, list.Items, 2)
	require.NoError(t, snap.List(ctx, list, client.InNamespace("y")))
	require.Len(t, list.Items, 1)
	assert.Equal(t, "b", list.Items[0].Name)
	assert.Equal(t, "Lease", list.Items[0].Kind)
	assert.ErrorContains(t, snap.List(ctx, list, client.MatchingLabels{"a": "b"}), "holds only its keys")
	assert.Error(t, snap.List(ctx, &coordinationv1.LeaseList{}), "not listable in full")
}

// An on-demand list is read only when a reconcile first lists the kind, then answers every later
// list from what it holds: a kind confined to a namespace (or cluster-scoped) whole, once, and a
// list beyond that namespace goes to the API server without it; any other namespaced kind one
// namespace at a time. Gets of the kind are not answered from it.
func TestOnDemandListsWhenFirstAsked(t *testing.T) {
	lease := func(ns, name string) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	var lists []string
	gets := 0
	c := fake.NewClientBuilder().WithScheme(scheme.Gardener).
		WithObjects(lease("kube-system", "a"), lease("kube-system", "b"), lease("other", "c")).
		WithInterceptorFuncs(interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				gets++
				return c.Get(ctx, key, obj, opts...)
			},
			List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				lists = append(lists, (&client.ListOptions{}).ApplyOptions(opts).Namespace)
				return c.List(ctx, list, opts...)
			},
		}).Build()
	ctx := context.Background()

	for _, tc := range []struct {
		name string
		list List
		// ask are the namespaces the reconciles list in, one after the other.
		ask []string
		// listed are the namespaces of the LISTs sent; found how many objects each ask answers.
		listed []string
		found  []int
	}{
		{name: "confined to a namespace", list: List{Kind: leaseKind, Namespace: "kube-system", OnDemand: true},
			ask: []string{"other", "kube-system", "kube-system"}, listed: []string{"other", "kube-system"}, found: []int{1, 2, 2}},
		{name: "one namespace at a time", list: List{Kind: leaseKind, OnDemand: true},
			ask: []string{"kube-system", "other", "kube-system"}, listed: []string{"kube-system", "other"}, found: []int{2, 1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lists, gets = nil, 0
			snap := &snapshot{live: c, scheme: scheme.Gardener, related: map[schema.GroupKind]*listed{}}
			snap.listOnDemand(tc.list, 100)
			require.NoError(t, snap.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "a"}, &coordinationv1.Lease{}))
			assert.Equal(t, 1, gets, "a Get goes to the API server")
			assert.Empty(t, lists, "and lists nothing")
			for i, ns := range tc.ask {
				got := &coordinationv1.LeaseList{}
				require.NoError(t, snap.List(ctx, got, client.InNamespace(ns)))
				assert.Len(t, got.Items, tc.found[i], "ask %d in %s", i, ns)
			}
			assert.Equal(t, tc.listed, lists, "each namespace listed once, in the order asked (beyond a confined list's namespace: live, alone)")
		})
	}

	t.Run("a cluster-scoped kind", func(t *testing.T) {
		lists = nil
		nodes := fake.NewClientBuilder().WithScheme(scheme.Gardener).
			WithObjects(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2"}}).
			WithInterceptorFuncs(interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				lists = append(lists, "cluster")
				return c.List(ctx, list, opts...)
			}}).Build()
		snap := &snapshot{live: nodes, scheme: scheme.Gardener, related: map[schema.GroupKind]*listed{}}
		snap.listOnDemand(List{Kind: NewClusterKind(corev1.SchemeGroupVersion, "Node", "nodes"), OnDemand: true}, 100)
		assert.Empty(t, lists, "nothing before the first ask")
		for range 3 {
			got := &corev1.NodeList{}
			require.NoError(t, snap.List(ctx, got))
			assert.Len(t, got.Items, 2)
		}
		assert.Equal(t, []string{"cluster"}, lists, "one LIST for the sweep")
	})
}
