package multitenant_test

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/tenant/webhookaccess"
	"github.com/gardener-knative/gardener-knative/pkg/tenantproof"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/projectedtokenmount"
)

// unproven is how many tenant requests the server refused for a proof that is not the tenant's.
func unproven(t *testing.T) float64 {
	t.Helper()
	families, err := serverReg.Gather()
	require.NoError(t, err)
	total := 0.0
	for _, f := range families {
		if f.GetName() != "gardener_knative_webhook_tenant_refusals_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == "unproven" {
					total += m.GetCounter().GetValue()
				}
			}
		}
	}
	return total
}

// A shoot admin of A copies A's own registration (as the enrolment rendered it) and points it at
// tenant B: the only proof they hold is A's. A's kube-apiserver calls the server at B's path, and
// the fail-closed webhook rejects A's Pod with the refusal: no answer computed from B's cluster
// (whether B has the Pod's ServiceAccount, which would mount a token) reaches A. The same without
// any proof, as registrations rendered before tenant proofs were. And the same for the seed's own
// answers (the seed's path, the bare path of registrations from before the seed's proof).
func TestACopiedRegistrationCannotReachAnotherTenant(t *testing.T) {
	ctx := context.Background()
	// The Pod's ServiceAccount exists in B alone and opts out of automount: were B's answer given,
	// the Pod would get a projected token.
	serviceAccount(t, shootB, "only-in-b", false)

	own := &admissionregistrationv1.MutatingWebhookConfiguration{}
	require.NoError(t, shootA.env.Client.Get(ctx, client.ObjectKey{Name: "gardener-knative-projected-token-mount"}, own))
	ownURL, err := url.Parse(*own.Webhooks[0].ClientConfig.URL)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(ownURL.Path, "/"+string(shootA.tenant)+tenantproof.Separator), "the enrolment rendered A's proof: %s", ownURL.Path)
	aProof := strings.TrimPrefix(strings.SplitN(ownURL.Path, "/", 3)[1], string(shootA.tenant)+tenantproof.Separator)

	for name, forged := range map[string]struct{ path, refusal string }{
		"with-a-proof": {"/" + string(shootB.tenant) + tenantproof.Separator + aProof + projectedtokenmount.Path, "does not prove tenant " + string(shootB.tenant)},
		"without":      {"/" + string(shootB.tenant) + projectedtokenmount.Path, "does not prove tenant " + string(shootB.tenant)},
		// The seed's own answers: at its path with A's proof, and at the bare path.
		"seed-with-a-proof": {"/" + tenantproof.SeedSegment + tenantproof.Separator + aProof + projectedtokenmount.Path, "does not prove the seed"},
		"seed-bare":         {projectedtokenmount.Path, "serves the seed at /" + tenantproof.SeedSegment + tenantproof.Separator + "<proof>" + projectedtokenmount.Path + " only"},
	} {
		t.Run(name, func(t *testing.T) {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "forged-" + name}}
			require.NoError(t, shootA.env.Client.Create(ctx, ns))
			registration := own.DeepCopy()
			registration.ObjectMeta = metav1.ObjectMeta{Name: "forged-" + name}
			u := *ownURL
			u.Path = forged.path
			registration.Webhooks[0].Name = name + ".forged.test"
			registration.Webhooks[0].ClientConfig.URL = new(u.String())
			registration.Webhooks[0].NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns.Name}}
			registration.Webhooks[0].ObjectSelector = nil
			require.NoError(t, shootA.env.Client.Create(ctx, registration))
			t.Cleanup(func() {
				assert.NoError(t, shootA.env.Client.Delete(context.Background(), registration))
				assert.NoError(t, shootA.env.Client.Delete(context.Background(), ns))
			})

			before := unproven(t)
			pod := tokenPod("only-in-b")
			pod.Namespace = ns.Name
			var createErr error
			require.Eventually(t, func() bool {
				createErr = shootA.env.Client.Create(ctx, pod.DeepCopy(), client.DryRunAll)
				return createErr != nil && strings.Contains(createErr.Error(), forged.refusal)
			}, 30*time.Second, 100*time.Millisecond, "the fail-closed webhook rejects with the refusal: %v", createErr)
			assert.Greater(t, unproven(t), before, "counted as unproven")
		})
	}
}

// A SubjectAccessReview for tenant B, or for the seed, from a caller that is not B's (or the
// seed's) kube-apiserver (it holds A's proof) gets no opinion, whatever it asks; B's own proof
// gets B's answer.
func TestAForgedReviewForAnotherTenantHasNoOpinion(t *testing.T) {
	sar, err := json.Marshal(authorizationv1.SubjectAccessReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "authorization.k8s.io/v1", Kind: "SubjectAccessReview"},
		Spec: authorizationv1.SubjectAccessReviewSpec{User: "gardener.cloud:node-agent:machine:m", Groups: []string{"gardener.cloud:node-agents"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "configmaps", Namespace: "kube-system", Name: "c"}},
	})
	require.NoError(t, err)
	c := serverClient(t)
	forged := "/" + string(shootB.tenant) + tenantproof.Separator + proofKey.Proof(shootA.tenant) + authorizerPath
	var answer authorizationv1.SubjectAccessReview
	review(t, c, forged, sar, &answer)
	assert.False(t, answer.Status.Allowed)
	assert.False(t, answer.Status.Denied, "no opinion")
	assert.Contains(t, answer.Status.EvaluationError, "does not prove tenant "+string(shootB.tenant))
	assert.Empty(t, answer.Status.Reason, "nothing of B's answer")

	// Nor does a caller with A's proof, or none, get the seed's answers.
	for _, path := range []string{"/" + tenantproof.SeedSegment + tenantproof.Separator + proofKey.Proof(shootA.tenant) + authorizerPath, authorizerPath} {
		answer = authorizationv1.SubjectAccessReview{}
		review(t, c, path, sar, &answer)
		assert.False(t, answer.Status.Allowed || answer.Status.Denied, "no opinion at %s", path)
		assert.NotEmpty(t, answer.Status.EvaluationError, path)
	}

	answer = authorizationv1.SubjectAccessReview{}
	review(t, c, tenantPath(shootB.tenant, authorizerPath), sar, &answer)
	assert.Empty(t, answer.Status.EvaluationError, "B's own proof is answered")
	assert.True(t, answer.Status.Denied, "the authorizer's own answer for B: %+v", answer.Status)
}

// The servers reach a shoot with their own identity there (config/shoot/access-grm-webhooks.yaml,
// which every test of this suite is served with): it reads what the webhooks read and writes
// nothing; it reads Secrets only in kube-system (the node-agent authorizer's).
func TestTheServersIdentityInAShootOnlyReads(t *testing.T) {
	ctx := context.Background()
	user := "system:serviceaccount:" + metav1.NamespaceSystem + ":" + webhookaccess.ServiceAccountName
	may := func(verb, group, resource, namespace string) bool {
		t.Helper()
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: group, Resource: resource, Namespace: namespace},
		}}
		require.NoError(t, shootA.env.Client.Create(ctx, review))
		return review.Status.Allowed
	}
	for _, read := range []struct{ verb, group, resource, namespace string }{
		{"get", "", "namespaces", ""}, {"get", "", "serviceaccounts", "default"}, {"get", "", "pods", "default"},
		{"list", "", "nodes", ""}, {"list", "autoscaling", "horizontalpodautoscalers", "default"},
		{"get", "certificates.k8s.io", "certificatesigningrequests", ""}, {"list", "", "secrets", metav1.NamespaceSystem},
	} {
		assert.True(t, may(read.verb, read.group, read.resource, read.namespace), "%+v", read)
	}
	for _, denied := range []struct{ verb, group, resource, namespace string }{
		{"get", "", "secrets", "default"}, {"list", "", "secrets", ""}, {"create", "", "pods", "default"},
		{"delete", "", "nodes", ""}, {"patch", "", "serviceaccounts", "default"}, {"create", "", "serviceaccounts/token", "kube-system"},
		{"update", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", ""}, {"escalate", "rbac.authorization.k8s.io", "clusterroles", ""},
		{"create", "", "secrets", metav1.NamespaceSystem},
	} {
		assert.False(t, may(denied.verb, denied.group, denied.resource, denied.namespace), "%+v", denied)
	}
}
