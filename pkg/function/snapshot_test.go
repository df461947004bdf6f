package function

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
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
	assert.Len(t, held.objects, 3)

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
