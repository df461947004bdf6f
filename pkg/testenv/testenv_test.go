package testenv_test

import (
	"context"
	"testing"

	operationsv1alpha1 "github.com/gardener/gardener/pkg/apis/operations/v1alpha1"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

// The stand-in CRDs must offer the field selectors gardener-apiserver offers, or mappers that
// rely on them would pass here and fail against a real garden cluster (or the reverse).
func TestBastionFieldSelector(t *testing.T) {
	env, err := testenv.Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = env.Stop() })
	ctx := context.Background()
	for _, name := range []string{"a", "b"} {
		b := &operationsv1alpha1.Bastion{ObjectMeta: metav1.ObjectMeta{Name: "bastion-" + name, Namespace: "default"}}
		b.Spec.ShootRef.Name = "shoot-" + name
		require.NoError(t, env.Client.Create(ctx, b))
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(operationsv1alpha1.SchemeGroupVersion.WithKind("BastionList"))
	require.NoError(t, env.Client.List(ctx, list, client.InNamespace("default"), client.MatchingFields{"spec.shootRef.name": "shoot-b"}))
	require.Len(t, list.Items, 1)
	require.Equal(t, "bastion-b", list.Items[0].Name)
}
