package multitenant_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/clients"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/webhook/projectedtokenmount"
)

// serviceAccount creates kube-system/<name> in the shoot until the test ends.
func serviceAccount(t *testing.T, s *shoot, name string, automount bool) {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: name}, AutomountServiceAccountToken: &automount}
	require.NoError(t, s.env.Client.Create(context.Background(), sa))
	t.Cleanup(func() { assert.NoError(t, s.env.Client.Delete(context.Background(), sa)) })
}

// tokenPod is a kube-system pod of the ServiceAccount; the shoot registration matches kube-system.
func tokenPod(serviceAccount string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, GenerateName: "multitenant-"},
		Spec:       corev1.PodSpec{ServiceAccountName: serviceAccount, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
}

// createPod creates the pod in the shoot (dry run: nothing to clean up) and tells whether the
// seed's webhook mounted the projected token.
func createPod(s *shoot, serviceAccount string) (mounted bool, err error) {
	p := tokenPod(serviceAccount)
	if err := s.env.Client.Create(context.Background(), p, client.DryRunAll); err != nil {
		return false, err
	}
	for _, v := range p.Spec.Volumes {
		if v.Name == projectedtokenmount.VolumeName {
			return true, nil
		}
	}
	return false, nil
}

// Each shoot's kube-apiserver calls the one server at its own tenant path, and the webhook
// reads that shoot's ServiceAccounts: the same name means different things in A and B, and a
// ServiceAccount of B does not exist for A.
func TestEachShootIsAdmittedWithItsOwnState(t *testing.T) {
	serviceAccount(t, shootA, "only-in-a", false)
	serviceAccount(t, shootB, "only-in-b", false)
	serviceAccount(t, shootA, "in-both", false) // A opts out of automount: the webhook mounts
	serviceAccount(t, shootB, "in-both", true)  // B automounts: the webhook leaves the pod alone

	// The kube-apiservers learn of new webhook configurations asynchronously.
	require.Eventually(t, func() bool { m, err := createPod(shootA, "only-in-a"); return err == nil && m }, 30*time.Second, 100*time.Millisecond, "shoot A's webhook is never called")
	require.Eventually(t, func() bool { m, err := createPod(shootB, "only-in-b"); return err == nil && m }, 30*time.Second, 100*time.Millisecond, "shoot B's webhook is never called")

	mounted, err := createPod(shootA, "in-both")
	require.NoError(t, err)
	assert.True(t, mounted, "A's in-both opts out of automount")
	mounted, err = createPod(shootB, "in-both")
	require.NoError(t, err)
	assert.False(t, mounted, "B's in-both automounts: B's ServiceAccount was read, not A's")

	_, err = createPod(shootA, "only-in-b")
	require.Error(t, err, "a ServiceAccount of shoot B does not exist for shoot A")
	assert.Contains(t, err.Error(), `"only-in-b" not found`)
	_, err = createPod(shootB, "only-in-a")
	require.Error(t, err, "a ServiceAccount of shoot A does not exist for shoot B")
	assert.Contains(t, err.Error(), `"only-in-a" not found`)
}

// A shoot's node agents are authorized by the seed's server at the shoot's tenant path: the
// shoot's kube-apiserver asks it and follows its answer.
func TestEachShootAsksTheAuthorizerAtItsTenantPath(t *testing.T) {
	ctx := context.Background()
	for _, s := range []*shoot{shootA, shootB} {
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "gardener.cloud:node-agent:machine:m", Groups: []string{"gardener.cloud:node-agents"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "configmaps", Namespace: "kube-system", Name: "c"},
		}}
		require.NoError(t, s.env.Client.Create(ctx, review))
		assert.False(t, review.Status.Allowed, "%s: node agents may not read ConfigMaps", s.tenant)
		assert.True(t, review.Status.Denied, "%s: the authorizer denies, the kube-apiserver reports it: %+v", s.tenant, review.Status)
	}
}

// serverClient calls the webhook server as a kube-apiserver would, trusting its CA.
func serverClient(t testing.TB) *http.Client {
	t.Helper()
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(serving.LocalServingCAData))
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}, Timeout: 15 * time.Second}
}

// admissionReviewBody is the AdmissionReview a kube-apiserver sends for a pod of the
// ServiceAccount.
func admissionReviewBody(t testing.TB, serviceAccount string) []byte {
	t.Helper()
	pod, err := json.Marshal(tokenPod(serviceAccount))
	require.NoError(t, err)
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID: "uid-1", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
			Namespace: metav1.NamespaceSystem, Operation: admissionv1.Create, UserInfo: authenticationv1.UserInfo{Username: "test"},
			Object: runtime.RawExtension{Raw: pod},
		},
	})
	require.NoError(t, err)
	return body
}

// review POSTs body to the server at path and decodes the answer into out.
func review(t testing.TB, c *http.Client, path string, body []byte, out any) {
	t.Helper()
	resp, err := c.Post("https://"+servingAddr()+path, "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(out))
}

// A tenant the seed holds no access for is answered clearly: admission webhooks fail the call
// with the reason, the authorizer has no opinion (an evaluation error).
func TestUnknownTenants(t *testing.T) {
	ctx := context.Background()
	// A control-plane namespace whose Cluster names a kubeconfig, but without access Secret.
	incomplete := "shoot--test--no-access"
	require.NoError(t, seed.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: incomplete}}))

	c := serverClient(t)
	for _, tn := range []tenant.Name{"shoot--test--nowhere", tenant.Name(incomplete)} {
		// The call fails with the reason: the kube-apiserver applies the registration's failure
		// policy (TestUnknownTenantThroughTheShoot).
		resp, err := c.Post("https://"+servingAddr()+tenantPath(tn, projectedtokenmount.Path), "application/json", bytes.NewReader(admissionReviewBody(t, "default")))
		require.NoError(t, err)
		var status metav1.Status
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&status))
		resp.Body.Close()
		assert.Equal(t, http.StatusForbidden, resp.StatusCode, tn)
		assert.Equal(t, metav1.StatusReasonForbidden, status.Reason)
		assert.Contains(t, status.Message, `unknown tenant "`+string(tn)+`"`)

		sar, err := json.Marshal(authorizationv1.SubjectAccessReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "authorization.k8s.io/v1", Kind: "SubjectAccessReview"},
			Spec: authorizationv1.SubjectAccessReviewSpec{User: "gardener.cloud:node-agent:machine:m", Groups: []string{"gardener.cloud:node-agents"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "nodes", Name: "n"}},
		})
		require.NoError(t, err)
		var authz authorizationv1.SubjectAccessReview
		review(t, c, tenantPath(tn, authorizerPath), sar, &authz)
		assert.False(t, authz.Status.Allowed, tn)
		assert.False(t, authz.Status.Denied, "%s: no opinion", tn)
		assert.Contains(t, authz.Status.EvaluationError, `unknown tenant "`+string(tn)+`"`)
	}

	// Paths that name no tenant of this server are not found, not a tenant's.
	for _, path := range []string{"/kube-system" + projectedtokenmount.Path, "/shoot--test--a/webhooks/unknown", "/shoot--test--a"} {
		resp, err := c.Post("https://"+servingAddr()+path, "application/json", bytes.NewReader(admissionReviewBody(t, "default")))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusNotFound, resp.StatusCode, path)
	}
}

// A request of tenant A is answered with A's client only: its ctx names A, and the server
// holds one client per tenant.
func TestTenantClientsAreSeparate(t *testing.T) {
	ctx := context.Background()
	a, err := tenants.Client(ctx, shootA.tenant)
	require.NoError(t, err)
	b, err := tenants.Client(ctx, shootB.tenant)
	require.NoError(t, err)
	assert.NotSame(t, a, b)

	// The routing reader of the webhooks reads the cluster of the ctx's tenant.
	reader := clients.NewRouting(seed.Client, tenants)
	serviceAccount(t, shootB, "routed", true)
	sa := &corev1.ServiceAccount{}
	require.NoError(t, reader.Get(tenant.With(ctx, shootB.tenant), client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: "routed"}, sa))
	err = reader.Get(tenant.With(ctx, shootA.tenant), client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: "routed"}, sa)
	assert.True(t, err != nil && client.IgnoreNotFound(err) == nil, "A does not see B's ServiceAccount: %v", err)
	err = reader.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: "routed"}, sa)
	assert.True(t, err != nil && client.IgnoreNotFound(err) == nil, "the seed (no tenant) does not see it either: %v", err)
}

// runsNode creates the Machine in the shoot's control-plane namespace of the seed that runs the
// Node, and the Node in the shoot, both deleted when the test ends.
func runsNode(t *testing.T, s *shoot, machineName, nodeName string) {
	t.Helper()
	ctx := context.Background()
	machine := &unstructured.Unstructured{}
	machine.SetAPIVersion("machine.sapcloud.io/v1alpha1")
	machine.SetKind("Machine")
	machine.SetNamespace(string(s.tenant))
	machine.SetName(machineName)
	machine.SetLabels(map[string]string{"node": nodeName})
	require.NoError(t, seed.Client.Create(ctx, machine))
	t.Cleanup(func() { assert.NoError(t, seed.Client.Delete(context.Background(), machine)) })
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}
	require.NoError(t, s.env.Client.Create(ctx, node))
	t.Cleanup(func() { assert.NoError(t, s.env.Client.Delete(context.Background(), node)) })
}

// The node-agent authorizer reads a node agent's Machine in its tenant's control-plane
// namespace of the seed and its Node in its tenant's shoot: the same machine name is a
// different Node in each shoot.
func TestNodeAgentsAreAuthorizedByTheirTenantsMachine(t *testing.T) {
	ctx := context.Background()
	for _, s := range []*shoot{shootA, shootB} {
		runsNode(t, s, "machine-1", "node-of-"+string(s.tenant))
	}
	getNode := func(s *shoot, node string) authorizationv1.SubjectAccessReviewStatus {
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "gardener.cloud:node-agent:machine:machine-1", Groups: []string{"gardener.cloud:node-agents"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "nodes", Name: node},
		}}
		require.NoError(t, s.env.Client.Create(ctx, review))
		return review.Status
	}
	assert.True(t, getNode(shootA, "node-of-shoot--test--a").Allowed, "A's machine-1 runs A's node")
	assert.True(t, getNode(shootB, "node-of-shoot--test--b").Allowed, "B's machine-1 runs B's node")
	assert.False(t, getNode(shootA, "node-of-shoot--test--b").Allowed, "A's machine-1 is not B's")
	assert.False(t, getNode(shootB, "node-of-shoot--test--a").Allowed, "B's machine-1 is not A's")
}
