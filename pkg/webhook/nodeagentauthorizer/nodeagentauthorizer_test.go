package nodeagentauthorizer

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gardener-knative/gardener-knative/pkg/scheme"
	"github.com/gardener-knative/gardener-knative/pkg/webhook"
)

const (
	user      = "gardener.cloud:node-agent:machine:machine-1"
	machineNS = "shoot--project--shoot"
)

func machine(name, node, secret string) *unstructured.Unstructured {
	m := &unstructured.Unstructured{}
	m.SetGroupVersionKind(machineGVK)
	m.SetNamespace(machineNS)
	m.SetName(name)
	if node != "" {
		m.SetLabels(map[string]string{"node": node})
	}
	_ = unstructured.SetNestedField(m.Object, secret, "spec", "nodeTemplate", "metadata", "labels", "worker.gardener.cloud/gardener-node-agent-secret-name")
	return m
}

func newAuthorizer(t testing.TB) (*Authorizer, *int) {
	t.Helper()
	machineReads := 0
	source := fake.NewClientBuilder().WithScheme(scheme.Gardener).
		WithObjects(machine("machine-1", "node-1", "gardener-node-agent-pool-a"), machine("machine-unjoined", "", "")).
		WithInterceptorFuncs(interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			machineReads++
			return c.Get(ctx, key, obj, opts...)
		}}).Build()
	target := fake.NewClientBuilder().WithScheme(scheme.Gardener).WithObjects(
		&certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "own"}, Spec: certificatesv1.CertificateSigningRequestSpec{Username: user}},
		&certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "foreign"}, Spec: certificatesv1.CertificateSigningRequestSpec{Username: "someone"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "machine-gardenadm", Labels: map[string]string{"worker.gardener.cloud/gardener-node-agent-secret-name": "gardener-node-agent-pool-b"}}},
	).Build()
	clk := testclock.NewFakeClock(time.Now())
	return New(source, target, ptr.To(machineNS), clk, Config{MachineCacheTTL: time.Minute, MachineCacheSize: 10}), &machineReads
}

func review(user string, groups []string, verb, group, resource, subresource, namespace, name string) authorizationv1.SubjectAccessReviewSpec {
	return authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups, ResourceAttributes: &authorizationv1.ResourceAttributes{
		Verb: verb, Group: group, Resource: resource, Subresource: subresource, Namespace: namespace, Name: name,
	}}
}

var agents = []string{"gardener.cloud:node-agents", "system:authenticated"}

func TestRulesTable(t *testing.T) {
	a, _ := newAuthorizer(t)
	for _, tc := range []struct {
		name string
		spec authorizationv1.SubjectAccessReviewSpec
		want webhook.Decision
	}{
		// Who is a node agent.
		{"other users: no opinion", review("alice", agents, "get", "", "nodes", "", "", "node-1"), webhook.NoOpinion},
		{"node-agent name without the group: no opinion", review(user, []string{"system:authenticated"}, "get", "", "nodes", "", "", "node-1"), webhook.NoOpinion},
		{"node-agent without machine name", review("gardener.cloud:node-agent:machine:", agents, "get", "", "nodes", "", "", "node-1"), webhook.Deny},
		{"non-resource request", authorizationv1.SubjectAccessReviewSpec{User: user, Groups: agents, NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/healthz", Verb: "get"}}, webhook.Deny},
		{"other resources", review(user, agents, "get", "", "configmaps", "", "kube-system", "x"), webhook.Deny},
		{"pods are not in the table", review(user, agents, "list", "", "pods", "", "", ""), webhook.Deny},

		// CertificateSigningRequests: get, create.
		{"create any CSR", review(user, agents, "create", "certificates.k8s.io", "certificatesigningrequests", "", "", ""), webhook.Allow},
		{"get own CSR", review(user, agents, "get", "certificates.k8s.io", "certificatesigningrequests", "", "", "own"), webhook.Allow},
		{"get foreign CSR", review(user, agents, "get", "certificates.k8s.io", "certificatesigningrequests", "", "", "foreign"), webhook.Deny},
		{"get missing CSR", review(user, agents, "get", "certificates.k8s.io", "certificatesigningrequests", "", "", "missing"), webhook.Deny},
		{"list CSRs", review(user, agents, "list", "certificates.k8s.io", "certificatesigningrequests", "", "", ""), webhook.Deny},
		{"CSR approval subresource", review(user, agents, "update", "certificates.k8s.io", "certificatesigningrequests", "approval", "", "own"), webhook.Deny},

		// Events: create, patch, in both groups.
		{"create core event", review(user, agents, "create", "", "events", "", "default", ""), webhook.Allow},
		{"patch events.k8s.io event", review(user, agents, "patch", "events.k8s.io", "events", "", "kube-system", "e"), webhook.Allow},
		{"delete event", review(user, agents, "delete", "", "events", "", "default", "e"), webhook.Deny},

		// Leases: own lease in kube-system.
		{"get own lease", review(user, agents, "get", "coordination.k8s.io", "leases", "", "kube-system", "gardener-node-agent-node-1"), webhook.Allow},
		{"update own lease", review(user, agents, "update", "coordination.k8s.io", "leases", "", "kube-system", "gardener-node-agent-node-1"), webhook.Allow},
		{"create lease in kube-system", review(user, agents, "create", "coordination.k8s.io", "leases", "", "kube-system", ""), webhook.Allow},
		{"list leases in kube-system", review(user, agents, "list", "coordination.k8s.io", "leases", "", "kube-system", ""), webhook.Allow},
		{"watch own lease", review(user, agents, "watch", "coordination.k8s.io", "leases", "", "kube-system", "gardener-node-agent-node-1"), webhook.Allow},
		{"update another node's lease", review(user, agents, "update", "coordination.k8s.io", "leases", "", "kube-system", "gardener-node-agent-node-2"), webhook.Deny},
		{"own lease name in another namespace", review(user, agents, "get", "coordination.k8s.io", "leases", "", "default", "gardener-node-agent-node-1"), webhook.Deny},
		{"delete own lease", review(user, agents, "delete", "coordination.k8s.io", "leases", "", "kube-system", "gardener-node-agent-node-1"), webhook.Deny},

		// Nodes: list all; get, watch, patch, update its own (and status).
		{"list nodes", review(user, agents, "list", "", "nodes", "", "", ""), webhook.Allow},
		{"watch all nodes", review(user, agents, "watch", "", "nodes", "", "", ""), webhook.Allow},
		{"get own node", review(user, agents, "get", "", "nodes", "", "", "node-1"), webhook.Allow},
		{"watch own node", review(user, agents, "watch", "", "nodes", "", "", "node-1"), webhook.Allow},
		{"patch own node status", review(user, agents, "patch", "", "nodes", "status", "", "node-1"), webhook.Allow},
		{"update own node", review(user, agents, "update", "", "nodes", "", "", "node-1"), webhook.Allow},
		{"get another node", review(user, agents, "get", "", "nodes", "", "", "node-2"), webhook.Deny},
		{"delete own node", review(user, agents, "delete", "", "nodes", "", "", "node-1"), webhook.Deny},
		{"own node proxy subresource", review(user, agents, "get", "", "nodes", "proxy", "", "node-1"), webhook.Deny},
		{"machine without node yet", review("gardener.cloud:node-agent:machine:machine-unjoined", agents, "get", "", "nodes", "", "", "node-1"), webhook.Deny},
		{"unknown machine", review("gardener.cloud:node-agent:machine:ghost", agents, "get", "", "nodes", "", "", "node-1"), webhook.Deny},

		// Secrets: gardener-valitail and the worker pool's node-agent secret in kube-system.
		{"get valitail secret", review(user, agents, "get", "", "secrets", "", "kube-system", "gardener-valitail"), webhook.Allow},
		{"watch own pool secret", review(user, agents, "watch", "", "secrets", "", "kube-system", "gardener-node-agent-pool-a"), webhook.Allow},
		{"list own pool secret", review(user, agents, "list", "", "secrets", "", "kube-system", "gardener-node-agent-pool-a"), webhook.Allow},
		{"get another pool's secret", review(user, agents, "get", "", "secrets", "", "kube-system", "gardener-node-agent-pool-b"), webhook.Deny},
		{"list all secrets", review(user, agents, "list", "", "secrets", "", "kube-system", ""), webhook.Deny},
		{"valitail secret elsewhere", review(user, agents, "get", "", "secrets", "", "default", "gardener-valitail"), webhook.Deny},
		{"update valitail secret", review(user, agents, "update", "", "secrets", "", "kube-system", "gardener-valitail"), webhook.Deny},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, reason, err := a.Authorize(context.Background(), tc.spec)
			require.NoError(t, err)
			assert.Equal(t, tc.want.String(), got.String(), reason)
			if got == webhook.Deny {
				assert.NotEmpty(t, reason, "a denial says why")
			}
		})
	}
}

// Without a machine namespace (gardenadm), the Machine's name is its Node's name.
func TestWithoutMachineNamespace(t *testing.T) {
	a, _ := newAuthorizer(t)
	a.machineNamespace = nil
	u := "gardener.cloud:node-agent:machine:machine-gardenadm"
	for spec, want := range map[*authorizationv1.SubjectAccessReviewSpec]webhook.Decision{
		ptr.To(review(u, agents, "get", "", "nodes", "", "", "machine-gardenadm")):                       webhook.Allow,
		ptr.To(review(u, agents, "get", "", "secrets", "", "kube-system", "gardener-node-agent-pool-b")): webhook.Allow,
		ptr.To(review(u, agents, "get", "", "nodes", "", "", "node-1")):                                  webhook.Deny,
		ptr.To(review(u+"-missing", agents, "get", "", "nodes", "", "", "machine-gardenadm-missing")):    webhook.Deny,
	} {
		got, reason, err := a.Authorize(context.Background(), *spec)
		require.NoError(t, err)
		assert.Equal(t, want.String(), got.String(), "%s %s/%s: %s", spec.ResourceAttributes.Verb, spec.ResourceAttributes.Resource, spec.ResourceAttributes.Name, reason)
	}
}

func TestMachinesAreCachedBriefly(t *testing.T) {
	a, reads := newAuthorizer(t)
	spec := review(user, agents, "get", "", "nodes", "", "", "node-1")
	for range 5 {
		d, _, err := a.Authorize(context.Background(), spec)
		require.NoError(t, err)
		require.Equal(t, webhook.Allow, d)
	}
	assert.Equal(t, 1, *reads, "one Machine read serves the TTL")
	a.machines.clock.(*testclock.FakeClock).Step(time.Minute)
	_, _, err := a.Authorize(context.Background(), spec)
	require.NoError(t, err)
	assert.Equal(t, 2, *reads, "expired entries are read again")
}

func TestCacheIsBounded(t *testing.T) {
	clk := testclock.NewFakeClock(time.Now())
	c := newTTLCache[int](clk, time.Minute, 2)
	c.put("a", 1)
	c.put("b", 2)
	c.put("c", 3)
	assert.LessOrEqual(t, len(c.entries), 2)
	v, ok := c.get("c")
	assert.True(t, ok)
	assert.Equal(t, 3, v)
}

// BenchmarkNodeAgentAuthorizer measures a node agent's lease update, the most frequent
// request, through the HTTP handler with the Machine cached (reads from a fake client).
func BenchmarkNodeAgentAuthorizer(b *testing.B) {
	a, _ := newAuthorizer(b)
	wh := webhook.Authorization(Name, Path, a, slog.New(slog.NewTextHandler(io.Discard, nil)))
	body := []byte(`{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"` + user + `","groups":["gardener.cloud:node-agents"],"resourceAttributes":{"verb":"update","group":"coordination.k8s.io","resource":"leases","namespace":"kube-system","name":"gardener-node-agent-node-1"}}}`)
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		wh.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(body)))
		if rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte(`"allowed":true`)) {
			b.Fatalf("HTTP %d: %s", rec.Code, rec.Body.String())
		}
	}
}
