package extensionclusterrole

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/scheme"
)

func TestIsExtensionServiceAccount(t *testing.T) {
	for _, tc := range []struct {
		name, namespace string
		want            bool
	}{
		{"anything", "seed-aws", true},
		{"extension-shoot--foo", "garden", true},
		{"extension-shoot--foo", "garden-dev", true},
		{"foo", "garden", false},
		{"extension-shoot--foo", "kube-system", false},
		{"anything", "default", false},
	} {
		assert.Equal(t, tc.want, IsExtensionServiceAccount(tc.name, tc.namespace), "%s/%s", tc.namespace, tc.name)
	}
}

func TestServiceAccountSelector(t *testing.T) {
	s, err := ServiceAccountSelector(map[string]string{"authorization.gardener.cloud/extensions-serviceaccount-selector": `{"matchLabels":{"a":"b"}}`})
	require.NoError(t, err)
	assert.True(t, s.Matches(labels.Set{"a": "b"}))
	assert.False(t, s.Matches(labels.Set{"a": "c"}))
	_, err = ServiceAccountSelector(nil)
	assert.EqualError(t, err, "no service account selector annotations present")
	_, err = ServiceAccountSelector(map[string]string{"authorization.gardener.cloud/extensions-serviceaccount-selector": `{`})
	assert.ErrorContains(t, err, "failed unmarshalling extensions service account selector")
}

func TestSubjectsAndBinding(t *testing.T) {
	sa := func(namespace, name string) client.Object {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	}
	subjects := Subjects([]client.Object{sa("seed-b", "x"), sa("default", "y"), sa("seed-a", "z"), sa("seed-a", "a"), sa("garden", "extension-shoot--q")})
	assert.Equal(t, []rbacv1.Subject{
		{Kind: "ServiceAccount", Namespace: "garden", Name: "extension-shoot--q"},
		{Kind: "ServiceAccount", Namespace: "seed-a", Name: "a"},
		{Kind: "ServiceAccount", Namespace: "seed-a", Name: "z"},
		{Kind: "ServiceAccount", Namespace: "seed-b", Name: "x"},
	}, subjects)

	role := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "r", UID: "u"}}
	binding := &rbacv1.ClusterRoleBinding{}
	DesiredBinding(binding, role, subjects)
	require.Len(t, binding.OwnerReferences, 1)
	assert.True(t, *binding.OwnerReferences[0].Controller)
	assert.False(t, *binding.OwnerReferences[0].BlockOwnerDeletion)
	assert.Equal(t, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "r"}, binding.RoleRef)
}

// A key names a ClusterRole; only the ClusterRole as read decides whether it is bound. A matching
// extension ServiceAccount exists in every case, so a labelled ClusterRole would be bound to it.
func TestReconcileChecksTheLabelOnTheLiveClusterRole(t *testing.T) {
	ctx := context.Background()
	const selector = `{"matchLabels":{"extension":"foo"}}`
	role := func(labels map[string]string) *rbacv1.ClusterRole {
		return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{
			Name: "extension-foo", UID: "uid-1", Labels: labels,
			Annotations: map[string]string{v1beta1constants.LabelAuthorizationExtensionsServiceAccountSelector: selector},
		}}
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "seed-aws", Name: "extension-foo", Labels: map[string]string{"extension": "foo"}}}
	key := client.ObjectKey{Name: "extension-foo"}
	reconcile := func(t *testing.T, c client.Client, w function.Writer) {
		t.Helper()
		r := &Reconciler{Writer: w, Log: slog.New(slog.DiscardHandler)}
		require.NoError(t, r.Reconcile(ctx, function.Request{Key: key, Reader: c, Trigger: function.ByEvent}))
	}

	t.Run("labelled: bound", func(t *testing.T) {
		c := fake.NewClientBuilder().WithScheme(scheme.Gardener).WithObjects(role(map[string]string{v1beta1constants.LabelAuthorizationCustomExtensionsPermissions: "true"}), sa).Build()
		reconcile(t, c, function.NewWriter(c))
		binding := &rbacv1.ClusterRoleBinding{}
		require.NoError(t, c.Get(ctx, key, binding))
		assert.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "seed-aws", Name: "extension-foo"}}, binding.Subjects)
	})

	for name, labels := range map[string]map[string]string{
		"never labelled":    nil,
		"labelled not true": {v1beta1constants.LabelAuthorizationCustomExtensionsPermissions: "false"},
	} {
		t.Run(name+": nothing bound", func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme.Gardener).WithObjects(role(labels), sa).Build()
			reconcile(t, c, noWrites{t})
			err := c.Get(ctx, key, &rbacv1.ClusterRoleBinding{})
			assert.True(t, apierrors.IsNotFound(err), "no ClusterRoleBinding: %v", err)
		})
	}

	t.Run("label lost: the binding is left as it is, as GCM does", func(t *testing.T) {
		stale := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "extension-foo"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "extension-foo"},
		}
		c := fake.NewClientBuilder().WithScheme(scheme.Gardener).WithObjects(role(nil), sa, stale).Build()
		before := &rbacv1.ClusterRoleBinding{}
		require.NoError(t, c.Get(ctx, key, before))
		reconcile(t, c, noWrites{t})
		after := &rbacv1.ClusterRoleBinding{}
		require.NoError(t, c.Get(ctx, key, after))
		assert.Equal(t, before, after)
	})
}

// The binding is read before the ServiceAccounts are listed: the subjects written are never older
// than the binding the write is conditional on, so that a concurrent reconcile's newer subjects
// make this one's write conflict instead of being overwritten.
func TestBindingIsReadBeforeTheServiceAccounts(t *testing.T) {
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{
		Name: "extension-foo", UID: "uid-1", Labels: map[string]string{v1beta1constants.LabelAuthorizationCustomExtensionsPermissions: "true"},
		Annotations: map[string]string{v1beta1constants.LabelAuthorizationExtensionsServiceAccountSelector: `{"matchLabels":{"extension":"foo"}}`},
	}}
	c := fake.NewClientBuilder().WithScheme(scheme.Gardener).WithObjects(role).Build()
	var reads []string
	recording := recordingReader{Reader: c, reads: &reads}
	r := &Reconciler{Writer: function.NewWriter(c), Log: slog.New(slog.DiscardHandler)}
	require.NoError(t, r.Reconcile(context.Background(), function.Request{Key: client.ObjectKey{Name: "extension-foo"}, Reader: recording, Trigger: function.ByEvent}))
	assert.Equal(t, []string{"get *v1.PartialObjectMetadata", "get *v1.ClusterRoleBinding", "list *v1.PartialObjectMetadataList"}, reads)
}

type recordingReader struct {
	client.Reader
	reads *[]string
}

func (r recordingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	*r.reads = append(*r.reads, fmt.Sprintf("get %T", obj))
	return r.Reader.Get(ctx, key, obj, opts...)
}

func (r recordingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	*r.reads = append(*r.reads, fmt.Sprintf("list %T", list))
	return r.Reader.List(ctx, list, opts...)
}

// noWrites fails the test on any write.
type noWrites struct{ t *testing.T }

func (w noWrites) Create(_ context.Context, obj client.Object) error {
	w.t.Errorf("unexpected create of %T %s", obj, obj.GetName())
	return nil
}

func (w noWrites) Patch(_ context.Context, obj client.Object, _ func()) (bool, error) {
	w.t.Errorf("unexpected patch of %T %s", obj, obj.GetName())
	return false, nil
}

func (w noWrites) Touch(_ context.Context, obj client.Object) error {
	w.t.Errorf("unexpected touch of %T %s", obj, obj.GetName())
	return nil
}

func (w noWrites) PatchStatus(_ context.Context, obj client.Object, _ func()) (bool, error) {
	w.t.Errorf("unexpected status patch of %T %s", obj, obj.GetName())
	return false, nil
}

func (w noWrites) PatchSubResource(_ context.Context, obj client.Object, subResource string, _ func()) (bool, error) {
	w.t.Errorf("unexpected %s patch of %T %s", subResource, obj, obj.GetName())
	return false, nil
}

func (w noWrites) Delete(_ context.Context, obj client.Object, _ ...client.DeleteOption) error {
	w.t.Errorf("unexpected delete of %T %s", obj, obj.GetName())
	return nil
}
