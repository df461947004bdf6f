package stale

import (
	"context"
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	securityv1alpha1 "github.com/gardener/gardener/pkg/apis/security/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gardener-knative/gardener-knative/pkg/scheme"
)

// newFakeClient is a fake client with the indexes the sweep's related lists declare, so that it
// answers InUseBy's Lists as the snapshot does.
func newFakeClient(objs ...client.Object) *fake.ClientBuilder {
	b := fake.NewClientBuilder().WithScheme(scheme.Gardener).WithObjects(objs...).WithStatusSubresource(&gardencorev1beta1.Project{}).
		WithInterceptorFuncs(interceptor.Funcs{List: metadataFromTyped})
	for _, l := range Related {
		obj, err := scheme.Gardener.New(l.Kind.GroupVersionKind)
		if err != nil {
			panic(err)
		}
		for name, index := range l.Indexes {
			b = b.WithIndex(obj, name, client.IndexerFunc(index))
		}
	}
	return b
}

// metadataFromTyped answers a metadata-only List from the typed one, as the snapshot does: the
// fake evaluates an index on the objects it returns, and a metadata-only object lacks the spec
// the binding indexes read.
func metadataFromTyped(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
	pl, ok := list.(*metav1.PartialObjectMetadataList)
	if !ok {
		return c.List(ctx, list, opts...)
	}
	obj, err := scheme.Gardener.New(pl.GroupVersionKind())
	if err != nil {
		return err
	}
	typed := obj.(client.ObjectList)
	if err := c.List(ctx, typed, opts...); err != nil {
		return err
	}
	pl.Items = nil
	return meta.EachListItem(typed, func(o runtime.Object) error {
		item := o.(client.Object)
		pl.Items = append(pl.Items, metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: item.GetNamespace(), Name: item.GetName()}})
		return nil
	})
}

const ns = "garden-dev"

func shoot(namespace, name string, mutate ...func(*gardencorev1beta1.Shoot)) *gardencorev1beta1.Shoot {
	s := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	for _, m := range mutate {
		m(s)
	}
	return s
}

func usingSecretBinding(name string) func(*gardencorev1beta1.Shoot) {
	return func(s *gardencorev1beta1.Shoot) { s.Spec.SecretBindingName = ptr.To(name) }
}

func usingCredentialsBinding(name string) func(*gardencorev1beta1.Shoot) {
	return func(s *gardencorev1beta1.Shoot) { s.Spec.CredentialsBindingName = ptr.To(name) }
}

func secretBinding(namespace, name, secretNamespace string, quotas ...corev1.ObjectReference) *gardencorev1beta1.SecretBinding {
	return &gardencorev1beta1.SecretBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		SecretRef:  corev1.SecretReference{Namespace: secretNamespace, Name: "secret"},
		Quotas:     quotas,
	}
}

func credentialsBinding(namespace, name string, ref corev1.ObjectReference, quotas ...corev1.ObjectReference) *securityv1alpha1.CredentialsBinding {
	return &securityv1alpha1.CredentialsBinding{
		ObjectMeta:     metav1.ObjectMeta{Namespace: namespace, Name: name},
		CredentialsRef: ref,
		Quotas:         quotas,
	}
}

var (
	secretIn = func(namespace string) corev1.ObjectReference {
		return corev1.ObjectReference{APIVersion: "v1", Kind: "Secret", Namespace: namespace, Name: "secret"}
	}
	internalSecretIn = func(namespace string) corev1.ObjectReference {
		return corev1.ObjectReference{APIVersion: "core.gardener.cloud/v1beta1", Kind: "InternalSecret", Namespace: namespace, Name: "secret"}
	}
	workloadIdentityIn = func(namespace string) corev1.ObjectReference {
		return corev1.ObjectReference{APIVersion: "security.gardener.cloud/v1alpha1", Kind: "WorkloadIdentity", Namespace: namespace, Name: "identity"}
	}
	quotaIn = func(namespace string) corev1.ObjectReference {
		return corev1.ObjectReference{Namespace: namespace, Name: "quota"}
	}
)

func TestInUseBy(t *testing.T) {
	backupEntry := &gardencorev1beta1.BackupEntry{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "entry"}}
	for _, tc := range []struct {
		name    string
		objects []client.Object
		want    string
	}{
		{name: "nothing"},
		{name: "a Shoot in the namespace", objects: []client.Object{shoot(ns, "s")}, want: "Shoots"},
		{name: "a Shoot elsewhere", objects: []client.Object{shoot("garden-other", "s")}},
		{name: "a BackupEntry in the namespace", objects: []client.Object{backupEntry}, want: "BackupEntries"},
		{
			name: "a Secret of the namespace whose SecretBinding a Shoot elsewhere uses",
			objects: []client.Object{
				secretBinding("garden-other", "binding", ns),
				shoot("garden-other", "s", usingSecretBinding("binding")),
			},
			want: "Secrets",
		},
		{
			name:    "a Secret of the namespace whose SecretBinding no Shoot uses",
			objects: []client.Object{secretBinding("garden-other", "binding", ns), shoot("garden-other", "s", usingSecretBinding("another"))},
		},
		{
			name: "a SecretBinding of the same name in another namespace does not count",
			objects: []client.Object{
				secretBinding("garden-other", "binding", ns),
				shoot("garden-third", "s", usingSecretBinding("binding")),
			},
		},
		{
			name: "a Secret of the namespace whose CredentialsBinding a Shoot uses",
			objects: []client.Object{
				credentialsBinding("garden-other", "binding", secretIn(ns)),
				shoot("garden-other", "s", usingCredentialsBinding("binding")),
			},
			want: "Secrets",
		},
		{
			name: "an InternalSecret of the namespace whose CredentialsBinding a Shoot uses",
			objects: []client.Object{
				credentialsBinding("garden-other", "binding", internalSecretIn(ns)),
				shoot("garden-other", "s", usingCredentialsBinding("binding")),
			},
			want: "InternalSecrets",
		},
		{
			name: "a WorkloadIdentity of the namespace whose CredentialsBinding a Shoot uses",
			objects: []client.Object{
				credentialsBinding("garden-other", "binding", workloadIdentityIn(ns)),
				shoot("garden-other", "s", usingCredentialsBinding("binding")),
			},
			want: "WorkloadIdentities",
		},
		{
			name: "credentials of an unknown kind do not count",
			objects: []client.Object{
				credentialsBinding("garden-other", "binding", corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "c"}),
				shoot("garden-other", "s", usingCredentialsBinding("binding")),
			},
		},
		{
			name: "a Shoot using a CredentialsBinding by the name of a SecretBinding does not count",
			objects: []client.Object{
				secretBinding("garden-other", "binding", ns),
				shoot("garden-other", "s", usingCredentialsBinding("binding")),
			},
		},
		{
			name: "a Quota of the namespace whose SecretBinding a Shoot uses",
			objects: []client.Object{
				secretBinding("garden-other", "binding", "garden-other", quotaIn(ns)),
				shoot("garden-other", "s", usingSecretBinding("binding")),
			},
			want: "Quotas",
		},
		{
			name: "a Quota of the namespace whose CredentialsBinding a Shoot uses",
			objects: []client.Object{
				credentialsBinding("garden-other", "binding", secretIn("garden-other"), quotaIn("garden-other"), quotaIn(ns)),
				shoot("garden-other", "s", usingCredentialsBinding("binding")),
			},
			want: "Quotas",
		},
		{
			name: "a Quota of the namespace whose binding no Shoot uses",
			objects: []client.Object{
				secretBinding("garden-other", "binding", "garden-other", quotaIn(ns)),
				credentialsBinding("garden-other", "binding", secretIn("garden-other"), quotaIn(ns)),
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeClient(tc.objects...).Build()
			got, err := InUseBy(context.Background(), c, ns)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// gardener-apiserver defaults a binding's unset reference namespaces to the binding's own.
func TestIndexesDefaultReferenceNamespaces(t *testing.T) {
	sb := secretBinding(ns, "binding", "", corev1.ObjectReference{Name: "quota"}, quotaIn("garden-other"), quotaIn("garden-other"))
	assert.Equal(t, []string{ns}, secretBindingCredentialsNamespace(sb))
	assert.Equal(t, []string{ns, "garden-other"}, secretBindingQuotaNamespaces(sb))

	cb := credentialsBinding(ns, "binding", corev1.ObjectReference{APIVersion: "v1", Kind: "Secret", Name: "secret"}, corev1.ObjectReference{Name: "quota"})
	assert.Equal(t, []string{ns}, credentialsBindingCredentialsNamespace(cb))
	assert.Equal(t, []string{ns}, credentialsBindingQuotaNamespaces(cb))
}

func TestShootIndexes(t *testing.T) {
	s := shoot(ns, "s", usingSecretBinding("sb"), usingCredentialsBinding("cb"))
	assert.Equal(t, []string{ns + "/sb"}, secretBindingUse(s))
	assert.Equal(t, []string{ns + "/cb"}, credentialsBindingUse(s))
	assert.Empty(t, secretBindingUse(shoot(ns, "s")))
	assert.Empty(t, credentialsBindingUse(shoot(ns, "s")))
}
