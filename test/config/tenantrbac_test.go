package config_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/access"
)

// secretsSeedWide are the only seed identities that may touch Secrets outside our namespace and
// the enrolled tenants' (docs/deployment.md, "Who may read a tenant's Secrets"): the seed's
// source watches the Secrets its functions react to in every namespace, label-selected, and
// sends only their references (Reference mode), since a watch per tenant namespace would cost a
// watch per shoot; controllerinstallation is gardenlet's, which installs the extensions' charts,
// whose objects may be Secrets of any namespace of the seed.
var secretsSeedWide = map[string]sets.Set[string]{
	"source-cluster":         sets.New("get", "list", "watch"),
	"controllerinstallation": sets.New(secretVerbs...),
}

var secretVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete"}

// config/seed/'s identities reach a tenant's Secrets in the seed only once the tenant is
// enrolled (its tenant roles bound by pkg/tenant/access, as the enrolment does), and no other
// namespace's: not a shoot that gardenlet's resource manager serves, not the garden namespace;
// after the tenant is handed back, not its own. Checked by the API server's authorizer
// (SubjectAccessReviews for every ServiceAccount of the part) on the RBAC as config/ ships it.
func TestSecretsOnlyInEnrolledTenants(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	ns := function.SeedNamespace
	enrolled, notEnrolled := tenant.Name("shoot--rbac--enrolled"), "shoot--rbac--gardenlets"
	for _, name := range []string{ns, string(enrolled), notEnrolled, "garden"} {
		require.NoError(t, client.IgnoreAlreadyExists(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})))
	}
	var accounts []string
	tenantRoles := map[string][]string{} // ServiceAccount → its tenant ClusterRoles
	for _, m := range manifests(t) {
		if filepath.Base(filepath.Dir(m.file)) != "seed" {
			continue
		}
		for _, u := range m.objs {
			switch u.GetKind() {
			case "ServiceAccount":
				accounts = append(accounts, u.GetName())
			case "ClusterRole":
				if sa, ok := u.GetLabels()[access.RoleLabel]; ok {
					tenantRoles[sa] = append(tenantRoles[sa], u.GetName())
				}
			case "ClusterRoleBinding", "Role", "RoleBinding":
			default:
				continue
			}
			obj := u.DeepCopy()
			if err := env.Client.Create(ctx, obj); err != nil {
				existing := u.DeepCopy()
				require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(u), existing), describe(u))
				obj.SetResourceVersion(existing.GetResourceVersion())
				require.NoError(t, env.Client.Update(ctx, obj), describe(u))
			}
		}
	}
	require.NotEmpty(t, tenantRoles, "config/seed/ labels no ClusterRole %s", access.RoleLabel)

	allowed := func(sa, verb, namespace string) bool {
		t.Helper()
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   fmt.Sprintf("system:serviceaccount:%s:%s", ns, sa),
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: namespace, Verb: verb, Resource: "secrets", Name: "shoot-access-gardener-resource-manager",
			},
		}}
		require.NoError(t, env.Client.Create(ctx, review))
		return review.Status.Allowed
	}
	// Expected in the enrolled tenant's namespace: exactly what the identity's tenant roles say.
	tenantVerbs := func(sa string) sets.Set[string] {
		verbs := sets.New[string]()
		for _, u := range roles(t, tenantRoles[sa]) {
			for _, rule := range u {
				if slices.Contains(rule.Resources, "secrets") && len(rule.ResourceNames) == 0 {
					verbs.Insert(rule.Verbs...)
				}
			}
		}
		return verbs
	}
	check := func(phase string, enrolledVerbs func(sa string) sets.Set[string]) {
		t.Helper()
		for _, sa := range accounts {
			for _, verb := range secretVerbs {
				seedWide := secretsSeedWide[sa].Has(verb)
				for _, namespace := range []string{notEnrolled, "garden"} {
					assert.Equal(t, seedWide, allowed(sa, verb, namespace), "%s: %s may %s the Secrets of %s", phase, sa, verb, namespace)
				}
				assert.Equal(t, seedWide || enrolledVerbs(sa).Has(verb), allowed(sa, verb, string(enrolled)),
					"%s: %s may %s the Secrets of the tenant %s", phase, sa, verb, enrolled)
			}
		}
	}
	none := func(string) sets.Set[string] { return nil }

	check("before the enrolment", none)
	bound, err := access.Bind(ctx, env.Client, enrolled, ns)
	require.NoError(t, err)
	var all []string
	for _, names := range tenantRoles {
		all = append(all, names...)
	}
	assert.ElementsMatch(t, all, bound)
	check("enrolled", tenantVerbs)
	// What the tenant roles grant is what the functions and servers need of a tenant's Secrets.
	assert.True(t, tenantVerbs("grm-webhooks").Has("get"), "the webhook servers read the tenant's access Secret")
	assert.True(t, tenantVerbs("tokenrequestor").IsSuperset(sets.New("get", "list", "patch")), "the token requestor writes the tenant's tokens")
	require.NoError(t, access.Unbind(ctx, env.Client, enrolled))
	check("handed back", none)
}

// roles reads the named ClusterRoles' rules from the API server.
func roles(t *testing.T, names []string) [][]rbacv1.PolicyRule {
	t.Helper()
	var out [][]rbacv1.PolicyRule
	for _, name := range names {
		role := &rbacv1.ClusterRole{}
		require.NoError(t, env.Client.Get(context.Background(), client.ObjectKey{Name: name}, role))
		out = append(out, role.Rules)
	}
	return out
}
