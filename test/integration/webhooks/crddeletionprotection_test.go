package webhooks_test

import (
	"context"
	"strings"
	"testing"

	rmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/webhook/crddeletionprotection"
)

func init() {
	register(crddeletionprotection.Webhook, func(c *rmv1alpha1.ResourceManagerConfiguration) {
		c.Webhooks.CRDDeletionProtection.Enabled = true
	})
}

const unconfirmedDeletion = `must have a "confirmation.gardener.cloud/deletion" annotation to delete`

// assertUnconfirmed checks that a deletion was refused for want of confirmation.
func assertUnconfirmed(t *testing.T, err error, msgAndArgs ...any) {
	t.Helper()
	require.Error(t, err, msgAndArgs...)
	assert.True(t, apierrors.IsForbidden(err), "%v", err)
	assert.ErrorContains(t, err, unconfirmedDeletion, msgAndArgs...)
}

// confirm annotates obj as confirmed for deletion.
func confirm(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	annotateDeletion(t, c, obj, "true")
}

// annotateDeletion sets the confirmation annotation of obj to value.
func annotateDeletion(t *testing.T, c client.Client, obj client.Object, value string) {
	t.Helper()
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[crddeletionprotection.ConfirmationAnnotation] = value
	obj.SetAnnotations(annotations)
	require.NoError(t, c.Patch(context.Background(), obj, patch))
}

// confirmAndDelete removes obj, if it is still there, as a test's cleanup.
func confirmAndDelete(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	ctx := context.Background()
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); apierrors.IsNotFound(err) || obj.GetDeletionTimestamp() != nil {
		// Gone, or going: a CRD's deletion waits for its finalizer, and a confirmation patch
		// would race its disappearance.
		return
	}
	confirm(t, c, obj)
	if err := c.Delete(ctx, obj); !apierrors.IsNotFound(err) {
		assert.NoError(t, err)
	}
}

// protectionCRD is a CustomResourceDefinition of the test, deletion-protected or not.
func protectionCRD(kind string, protected bool, labels map[string]string) *apiextensionsv1.CustomResourceDefinition {
	const group = "crd-deletion-protection.test"
	plural := strings.ToLower(kind) + "s"
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group, Labels: map[string]string{}},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, ListKind: kind + "List", Plural: plural, Singular: strings.ToLower(kind)},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}},
			}},
		},
	}
	for k, v := range labels {
		crd.Labels[k] = v
	}
	if protected {
		crd.Labels[crddeletionprotection.ProtectedLabel] = "true"
	}
	return crd
}

// The DELETECOLLECTION check reads every protected CRD of the cluster, so this test creates and
// removes all of them in sequence.
func TestCRDDeletionProtectionOfCRDs(t *testing.T) {
	ctx := context.Background()
	c := extensionsClient(t)

	unprotected := protectionCRD("Unprotected", false, nil)
	require.NoError(t, c.Create(ctx, unprotected))
	require.NoError(t, c.Delete(ctx, unprotected), "CRDs without the label are not protected")

	protected := protectionCRD("Protected", true, nil)
	require.NoError(t, c.Create(ctx, protected))
	t.Cleanup(func() { confirmAndDelete(t, c, protected) })
	assertUnconfirmed(t, c.Delete(ctx, protected))
	annotateDeletion(t, c, protected, "false")
	assertUnconfirmed(t, c.Delete(ctx, protected))
	confirm(t, c, protected)
	require.NoError(t, c.Delete(ctx, protected))

	collection := map[string]string{"test": "crd-deletion-protection-collection"}
	first, second := protectionCRD("First", true, collection), protectionCRD("Second", true, collection)
	for _, crd := range []*apiextensionsv1.CustomResourceDefinition{first, second} {
		require.NoError(t, c.Create(ctx, crd))
		t.Cleanup(func() { confirmAndDelete(t, c, crd) })
	}
	confirm(t, c, first)
	assertUnconfirmed(t, c.DeleteAllOf(ctx, &apiextensionsv1.CustomResourceDefinition{}, client.MatchingLabels(collection)))
	for _, crd := range []*apiextensionsv1.CustomResourceDefinition{first, second} {
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(crd), crd))
		assert.Nil(t, crd.DeletionTimestamp, "%s: nothing of a refused collection goes", crd.Name)
	}
	confirm(t, c, second)
	require.NoError(t, c.DeleteAllOf(ctx, &apiextensionsv1.CustomResourceDefinition{}, client.MatchingLabels(collection)))
}

func TestCRDDeletionProtectionOfExtensionResources(t *testing.T) {
	ctx := context.Background()
	c := extensionsClient(t)
	ns := targetNamespace(t, nil)
	for _, obj := range extensionObjects(ns) {
		require.NoError(t, c.Create(ctx, obj), "%T", obj)
		t.Cleanup(func() { confirmAndDelete(t, c, obj) })
		if _, ok := obj.(*extensionsv1alpha1.Bastion); ok {
			// Registered by Gardener, but not protected by its handler.
			require.NoError(t, c.Delete(ctx, obj))
			continue
		}
		assertUnconfirmed(t, c.Delete(ctx, obj), "%T", obj)
		confirm(t, c, obj)
		require.NoError(t, c.Delete(ctx, obj), "%T", obj)
	}

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: ns}}
	require.NoError(t, c.Create(ctx, cm))
	require.NoError(t, c.Delete(ctx, cm), "other resources are not protected")
}

// A DELETECOLLECTION passes only when every object of the kind in the namespace is confirmed,
// and deletes nothing otherwise.
func TestCRDDeletionProtectionOfCollections(t *testing.T) {
	ctx := context.Background()
	c := extensionsClient(t)
	ns := targetNamespace(t, nil)
	infra := pick[*extensionsv1alpha1.Infrastructure](extensionObjects(ns))
	first, second := infra.DeepCopy(), infra.DeepCopy()
	first.Name, second.Name = "first", "second"
	etcd := extEtcd(ns, "etcd-main", ns+"--uid/etcd-main")
	for _, obj := range []client.Object{first, second, etcd} {
		require.NoError(t, c.Create(ctx, obj))
		t.Cleanup(func() { confirmAndDelete(t, c, obj) })
	}

	confirm(t, c, first)
	err := c.DeleteAllOf(ctx, &extensionsv1alpha1.Infrastructure{}, client.InNamespace(ns))
	assertUnconfirmed(t, err)
	assert.ErrorContains(t, err, "Infrastructure "+ns+"/second")
	for _, obj := range []*extensionsv1alpha1.Infrastructure{first, second} {
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(obj), obj), "%s: nothing of a refused collection goes", obj.Name)
	}
	confirm(t, c, second)
	require.NoError(t, c.DeleteAllOf(ctx, &extensionsv1alpha1.Infrastructure{}, client.InNamespace(ns)))
	list := &extensionsv1alpha1.InfrastructureList{}
	require.NoError(t, c.List(ctx, list, client.InNamespace(ns)))
	assert.Empty(t, list.Items)

	etcds := &unstructured.Unstructured{}
	etcds.SetGroupVersionKind(etcd.GroupVersionKind())
	assertUnconfirmed(t, c.DeleteAllOf(ctx, etcds, client.InNamespace(ns)))
	confirm(t, c, etcd)
	require.NoError(t, c.DeleteAllOf(ctx, etcds, client.InNamespace(ns)))
}

// As Gardener registers it, extension resources are protected in every namespace, kube-system
// included.
func TestCRDDeletionProtectionInKubeSystem(t *testing.T) {
	ctx := context.Background()
	c := extensionsClient(t)
	infra := pick[*extensionsv1alpha1.Infrastructure](extensionObjects(metav1.NamespaceSystem))
	infra.Name = "kube-system-protected"
	require.NoError(t, c.Create(ctx, infra))
	t.Cleanup(func() { confirmAndDelete(t, c, infra) })
	assertUnconfirmed(t, c.Delete(ctx, infra))
}
