package project

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/gardener-knative/gardener-knative/pkg/controller/project/activity"
	projectmain "github.com/gardener-knative/gardener-knative/pkg/controller/project/project"
	"github.com/gardener-knative/gardener-knative/pkg/controller/project/stale"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
)

func TestDeclarationIsValid(t *testing.T) {
	require.NoError(t, Function.Validate())
}

func TestLoadConfig(t *testing.T) {
	componentConfig := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(componentConfig, []byte(`apiVersion: controllermanager.config.gardener.cloud/v1alpha1
kind: ControllerManagerConfiguration
controllers:
  project:
    minimumLifetimeDays: 7
    staleGracePeriodDays: 3
    staleExpirationTimeDays: 30
    quotas:
    - config:
        apiVersion: v1
        kind: ResourceQuota
        spec:
          hard:
            count/shoots.core.gardener.cloud: "10"
`), 0o600))

	t.Run("Gardener's defaults", func(t *testing.T) {
		cfg, err := functiontest.LoadConfig[Config](Function)
		require.NoError(t, err)
		assert.Equal(t, stale.Settings{MinimumLifetimeDays: 30, StaleGracePeriodDays: 14, StaleExpirationTimeDays: 90}, cfg.Settings)
		assert.Empty(t, cfg.Quotas)
	})
	t.Run("component configuration: every reconciler's part", func(t *testing.T) {
		t.Setenv("CONTROLLER_MANAGER_CONFIG", componentConfig)
		cfg, err := functiontest.LoadConfig[Config](Function)
		require.NoError(t, err)
		assert.Equal(t, stale.Settings{MinimumLifetimeDays: 7, StaleGracePeriodDays: 3, StaleExpirationTimeDays: 30}, cfg.Settings)
		assert.Len(t, cfg.Quotas, 1)
	})
	t.Run("environment wins over the component configuration", func(t *testing.T) {
		t.Setenv("CONTROLLER_MANAGER_CONFIG", componentConfig)
		t.Setenv("PROJECT_MINIMUM_LIFETIME_DAYS", "1")
		t.Setenv("PROJECT_STALE_GRACE_PERIOD_DAYS", "2")
		t.Setenv("PROJECT_STALE_EXPIRATION_TIME_DAYS", "3")
		cfg, err := functiontest.LoadConfig[Config](Function)
		require.NoError(t, err)
		assert.Equal(t, stale.Settings{MinimumLifetimeDays: 1, StaleGracePeriodDays: 2, StaleExpirationTimeDays: 3}, cfg.Settings)
		assert.Len(t, cfg.Quotas, 1)
	})
	t.Run("negative days are refused", func(t *testing.T) {
		t.Setenv("PROJECT_STALE_EXPIRATION_TIME_DAYS", "-1")
		_, err := functiontest.LoadConfig[Config](Function)
		assert.Error(t, err)
	})
}

// grants expands rules into "group/resource/verb" (resourceName, if any) triples.
func grants(rules []rbacv1.PolicyRule) sets.Set[string] {
	all := sets.New[string]()
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					all.Insert(g + "/" + res + "/" + v + "/" + strings.Join(r.ResourceNames, ","))
				}
			}
		}
		for _, url := range r.NonResourceURLs {
			for _, v := range r.Verbs {
				all.Insert(url + "/" + v)
			}
		}
	}
	return all
}

func TestRBACIsTheReconcilersJoined(t *testing.T) {
	parts := [][]rbacv1.PolicyRule{projectmain.RBAC, stale.RBAC, activity.RBAC}
	var union []rbacv1.PolicyRule
	for _, p := range parts {
		union = append(union, p...)
	}
	assert.Equal(t, sets.List(grants(union)), sets.List(grants(Function.RBAC)))

	narrowed := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"one"}, Verbs: []string{"get"}}
	joined := function.JoinRules([]rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get"}},
		{APIGroups: []string{"", "core.gardener.cloud"}, Resources: []string{"namespaces", "shoots"}, Verbs: []string{"list", "get"}},
	}, []rbacv1.PolicyRule{narrowed})
	assert.Equal(t, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"namespaces", "shoots"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{"core.gardener.cloud"}, Resources: []string{"namespaces", "shoots"}, Verbs: []string{"get", "list"}},
		narrowed,
	}, joined)
}
