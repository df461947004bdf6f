package cluster_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/tenantproof"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/projectedtokenmount"
)

// The kube-apiserver calls the webhooks through their registrations in config/, by their
// cluster-local URLs over TLS (Knative's ingress), on real requests.

// protectedCRD creates a CRD labelled for deletion protection.
func protectedCRD(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	group := fmt.Sprintf("e%d.cluster.gardener-knative.io", time.Now().UnixNano()%1000000)
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + group, Labels: map[string]string{"gardener.cloud/deletion-protected": "true"}},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}}}},
		},
	}
	require.NoError(t, c.Create(context.Background(), crd))
	t.Cleanup(func() {
		_ = confirmDeletion(crd)
		_ = c.Delete(context.Background(), crd)
	})
	return crd
}

// deleteRefused deletes a protected CRD without confirmation: crd-deletion-protection must refuse.
func deleteRefused(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	err := c.Delete(context.Background(), crd)
	require.Error(t, err, "a protected CRD was deleted without confirmation")
	require.Contains(t, err.Error(), "confirmation.gardener.cloud/deletion")
}

// The seed's registrations, which config/ ships without paths, call the server below the seed's
// proof (written by webhookcertificates), the only seed path a multi-tenant server answers.
func TestCRDDeletionProtection(t *testing.T) {
	ctx := context.Background()
	registration := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "gardener-knative-crd-deletion-protection"}, registration))
	for _, w := range registration.Webhooks {
		path := ptr.Deref(w.ClientConfig.Service.Path, "")
		require.True(t, strings.HasPrefix(path, "/"+tenantproof.SeedSegment+tenantproof.Separator), "%s: path %q", w.Name, path)
	}
	crd := protectedCRD(t)
	deleteRefused(t, crd)
	require.NoError(t, confirmDeletion(crd))
	require.NoError(t, c.Delete(ctx, crd), "a confirmed deletion is allowed")
}

// confirmDeletion annotates a CRD as Gardener asks before its deletion (a merge patch: the CRD's
// status changes while it becomes established).
func confirmDeletion(crd *apiextensionsv1.CustomResourceDefinition) error {
	patch := []byte(`{"metadata":{"annotations":{"confirmation.gardener.cloud/deletion":"true"}}}`)
	return c.Patch(context.Background(), crd, client.RawPatch(types.MergePatchType, patch))
}

// A Pod created in a shoot-like namespace is mutated: its ServiceAccount mounts no token, so
// projected-token-mount adds a projected token volume (a server-side dry run: the kube-apiserver
// calls mutating webhooks for it, and no pod starts).
func TestProjectedTokenMount(t *testing.T) {
	assertTokenMounted(t, c, tokenMountPod(t, "m"))
}

// tokenMountPod makes a shoot-like namespace (removed after the test) with a ServiceAccount that
// mounts no token, and returns a Pod of that account, not created: one projected-token-mount
// (a fail-closed webhook of grm-webhooks) must mutate.
func tokenMountPod(t *testing.T, prefix string) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("shoot--e2e--%s%d", prefix, time.Now().Unix()%100000),
		Labels: map[string]string{"gardener.cloud/role": "shoot"}}}
	require.NoError(t, c.Create(ctx, ns))
	t.Cleanup(func() { _ = c.Delete(ctx, ns) })
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "no-automount", Namespace: ns.Name}, AutomountServiceAccountToken: ptr.To(false)}
	require.NoError(t, c.Create(ctx, sa))
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns.Name},
		Spec:       corev1.PodSpec{ServiceAccountName: sa.Name, Containers: []corev1.Container{{Name: "c", Image: "127.0.0.1:25000/pause:1"}}},
	}
}

// assertTokenMounted creates pod (a server-side dry run) through cl's kube-apiserver, whose
// projected-token-mount webhook must add the projected token volume. The webhook's
// ServiceAccount cache may not know the pod's account yet; the admission is retried until it
// does, as a controller would.
func assertTokenMounted(t *testing.T, cl client.Client, pod *corev1.Pod) {
	t.Helper()
	eventually(t, time.Minute, "pod mutated", func() error {
		p := pod.DeepCopy()
		if err := cl.Create(context.Background(), p, client.DryRunAll); err != nil {
			return err
		}
		for _, v := range p.Spec.Volumes {
			if v.Name == projectedtokenmount.VolumeName && v.Projected != nil {
				return nil
			}
		}
		return fmt.Errorf("no %s volume in %v", projectedtokenmount.VolumeName, p.Spec.Volumes)
	})
}

// assertNodeAgentAuthorizer asks cl's kube-apiserver, on real SubjectAccessReviews, whether a node
// agent may create CertificateSigningRequests (allowed) and delete a Secret (denied).
func assertNodeAgentAuthorizer(t *testing.T, cl client.Client) {
	t.Helper()
	review := func(attrs authorizationv1.ResourceAttributes) *authorizationv1.SubjectAccessReview {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "gardener.cloud:node-agent:machine:m1", Groups: []string{"gardener.cloud:node-agents", "system:authenticated"}, ResourceAttributes: &attrs,
		}}
		require.NoError(t, cl.Create(context.Background(), sar))
		return sar
	}
	// A tenant the authorizer found unknown (asked before its enrollment was complete) stays
	// unknown for the tenant clients' UnknownTTL (10 s) and gets no opinion until then, in each
	// of the authorizer's pods apart (two: min-scale 2): wait until both answers are decisions.
	var csr, secret *authorizationv1.SubjectAccessReview
	took := eventually(t, 30*time.Second, "the CSR review allowed and the Secret's denied", func() error {
		csr = review(authorizationv1.ResourceAttributes{Verb: "create", Group: "certificates.k8s.io", Resource: "certificatesigningrequests"})
		secret = review(authorizationv1.ResourceAttributes{Verb: "delete", Resource: "secrets", Namespace: "kube-system", Name: "x"})
		if !csr.Status.Allowed || !secret.Status.Denied {
			return fmt.Errorf("create CSR: %+v; delete a Secret: %+v", csr.Status, secret.Status)
		}
		return nil
	})
	t.Logf("create CSR allowed and a Secret's deletion denied after %s", took.Round(time.Millisecond))
	t.Logf("create CSR: allowed (%s); delete Secret kube-system/x: denied (%s)", csr.Status.Reason, secret.Status.Reason)
}
