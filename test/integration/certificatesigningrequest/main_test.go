// Package certificatesigningrequest_test serves the certificatesigningrequest function
// in-process (functiontest) against one real kube-apiserver (RBAC on, real
// SubjectAccessReviews) and sends it the CloudEvents its sources would. Requests are created
// by impersonated requesters, so the API server records who asked, as it does for a gardenlet.
package certificatesigningrequest_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	csrcontroller "github.com/gardener-knative/gardener-knative/pkg/controller/certificatesigningrequest"
	"github.com/gardener-knative/gardener-knative/pkg/kube"
	"github.com/gardener-knative/gardener-knative/pkg/scheme"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

// The requesters: a gardenlet's bootstrap token (group system:bootstrappers, bound to Gardener's
// seed-bootstrapper role, which may create certificatesigningrequests/seedclient), and a user
// who may create requests but has not that right.
var (
	bootstrapper = rest.ImpersonationConfig{UserName: "system:bootstrap:abcdef", Groups: []string{"system:bootstrappers", "system:authenticated"}}
	mallory      = rest.ImpersonationConfig{UserName: "mallory", Groups: []string{"requesters", "system:authenticated"}}
)

// grantRequesters creates Gardener's seed-bootstrapper role for system:bootstrappers, and a role
// that only lets the requesters group create requests.
func grantRequesters(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	createRules := []rbacv1.PolicyRule{{APIGroups: []string{certificatesv1.GroupName}, Resources: []string{"certificatesigningrequests"}, Verbs: []string{"create", "get"}}}
	for _, grant := range []struct {
		name, group string
		rules       []rbacv1.PolicyRule
	}{
		{"gardener.cloud:system:seed-bootstrapper", "system:bootstrappers", append([]rbacv1.PolicyRule{{
			APIGroups: []string{certificatesv1.GroupName}, Resources: []string{"certificatesigningrequests/seedclient"}, Verbs: []string{"create"},
		}}, createRules...)},
		{"test:csr-requester", "requesters", createRules},
	} {
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: grant.name}, Rules: grant.rules}
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: grant.name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: grant.name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: grant.group}},
		}
		for _, obj := range []client.Object{role, binding} {
			if err := env.Client.Create(ctx, obj); !apierrors.IsAlreadyExists(err) {
				require.NoError(t, err)
			}
		}
	}
}

// createAs creates a request for tmpl with signer and usages as the impersonated requester.
func createAs(t testing.TB, requester rest.ImpersonationConfig, name string, tmpl csrcontroller.RequestTemplate, signer string, usages ...certificatesv1.KeyUsage) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = requester
	c, err := kube.NewClient(cfg, scheme.Gardener)
	require.NoError(t, err)
	data, err := csrcontroller.NewRequestPEM(tmpl)
	require.NoError(t, err)
	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       certificatesv1.CertificateSigningRequestSpec{Request: data, SignerName: signer, Usages: usages},
	}
	require.NoError(t, c.Create(context.Background(), csr))
	return csr
}

func get(t testing.TB, name string) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	csr := &certificatesv1.CertificateSigningRequest{}
	require.NoError(t, env.Client.Get(context.Background(), client.ObjectKey{Name: name}, csr))
	return csr
}

// notApproved reads the function's counter of requests left alone for reason.
func notApproved(t testing.TB, registry *prometheus.Registry, reason csrcontroller.Reason) float64 {
	t.Helper()
	families, err := registry.Gather()
	require.NoError(t, err)
	for _, family := range families {
		if family.GetName() != "gardener_knative_csr_not_approved_total" {
			continue
		}
		for _, m := range family.GetMetric() {
			for _, label := range m.GetLabel() {
				if label.GetName() == "reason" && label.GetValue() == string(reason) {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
