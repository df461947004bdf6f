package project

import (
	"log/slog"
	"testing"

	cmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/controllermanager/v1alpha1"
	"github.com/kelseyhightower/envconfig"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func TestConfigFromControllerManager(t *testing.T) {
	var cfg Config
	cfg.FromControllerManager(&cmv1alpha1.ControllerManagerConfiguration{})
	assert.Empty(t, cfg.Quotas, "no project controller configuration")

	cm := &cmv1alpha1.ControllerManagerConfiguration{}
	cm.Controllers.Project = &cmv1alpha1.ProjectControllerConfiguration{Quotas: []cmv1alpha1.QuotaConfiguration{
		template(map[string]string{"count/secrets": "800"}, &metav1.LabelSelector{}),
	}}
	cfg.FromControllerManager(cm)
	require.Len(t, cfg.Quotas, 1)
	assert.Equal(t, "800", ptrQuantity(&cfg.Quotas[0], "count/secrets"))
}

func TestConfigFromEnvironment(t *testing.T) {
	t.Setenv("PROJECT_QUOTAS", `
- config:
    apiVersion: v1
    kind: ResourceQuota
    metadata:
      labels: {origin: gardener}
    spec:
      hard:
        count/shoots.core.gardener.cloud: "100"
  projectSelector:
    matchLabels: {stage: prod}
- config:
    spec:
      hard:
        count/shoots.core.gardener.cloud: "10"
`)
	var cfg Config
	require.NoError(t, envconfig.Process("", &cfg))
	require.Len(t, cfg.Quotas, 2)
	assert.Equal(t, "100", ptrQuantity(&cfg.Quotas[0], "count/shoots.core.gardener.cloud"))
	assert.Equal(t, map[string]string{"origin": "gardener"}, cfg.Quotas[0].Config.Labels)
	assert.Equal(t, map[string]string{"stage": "prod"}, cfg.Quotas[0].ProjectSelector.MatchLabels)
	assert.Nil(t, cfg.Quotas[1].ProjectSelector)

	t.Setenv("PROJECT_QUOTAS", `[{"config": {"spec": {"hard": {"count/secrets": "5"}}}, "projectSelektor": {}}]`)
	assert.Error(t, envconfig.Process("", &cfg), "a misspelt field is an error")
}

// functionConfig is how the project function's Config embeds this package's part.
type functionConfig struct {
	Config
	Other string `envconfig:"OTHER_SETTING"`
}

func TestNew(t *testing.T) {
	deps := function.Deps{Log: slog.New(slog.DiscardHandler)}

	deps.Config = &functionConfig{Config: Config{Quotas: QuotaTemplates{template(map[string]string{"count/secrets": "1"}, nil)}}}
	h, err := New(deps)
	require.NoError(t, err)
	assert.Len(t, h.(*Reconciler).Quotas, 1, "found in a Config that embeds it")

	deps.Config = &Config{}
	_, err = New(deps)
	require.NoError(t, err)

	deps.Config = &struct{ Other string }{}
	_, err = New(deps)
	assert.Error(t, err, "a Config without the Main reconciler's part")

	bad := template(nil, &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "stage", Operator: "Like"}}})
	bad.Config.Spec.Hard = corev1.ResourceList{}
	deps.Config = &Config{Quotas: QuotaTemplates{bad}}
	_, err = New(deps)
	assert.Error(t, err, "an invalid project selector stops the function at start")
}
