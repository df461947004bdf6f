package project

import (
	"fmt"

	cmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/controllermanager/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// Config is the Main reconciler's part of the project function's configuration. The function's
// Config embeds it (a value, not a pointer), so that envconfig reads its variables and
// MainReconcilerConfig is promoted to the function's Config.
type Config struct {
	// Quotas are the ResourceQuota templates of project namespaces, first match wins.
	// PROJECT_QUOTAS (a JSON or YAML list of controllers.project.quotas entries) wins over
	// controllers.project.quotas of the component configuration; none by default.
	Quotas QuotaTemplates `envconfig:"PROJECT_QUOTAS"`
}

// FromControllerManager takes controllers.project.quotas.
func (c *Config) FromControllerManager(cm *cmv1alpha1.ControllerManagerConfiguration) {
	if cm.Controllers.Project != nil {
		c.Quotas = cm.Controllers.Project.Quotas
	}
}

// MainReconcilerConfig returns the Main reconciler's configuration; New finds it through this
// method in whatever Config type embeds it.
func (c *Config) MainReconcilerConfig() *Config { return c }

// mainReconcilerConfig is implemented by *Config and by every Config that embeds it.
type mainReconcilerConfig interface{ MainReconcilerConfig() *Config }

// QuotaTemplates are controllers.project.quotas: ResourceQuota templates with the selector of
// the projects they apply to.
type QuotaTemplates []cmv1alpha1.QuotaConfiguration

// Decode reads PROJECT_QUOTAS (envconfig calls it): the list as JSON or YAML, strictly.
func (q *QuotaTemplates) Decode(value string) error {
	var templates []cmv1alpha1.QuotaConfiguration
	if err := yaml.UnmarshalStrict([]byte(value), &templates); err != nil {
		return fmt.Errorf("PROJECT_QUOTAS is not a list of quota configurations: %w", err)
	}
	*q = templates
	return nil
}

// Validate checks every template's project selector, so that a typo in the configuration stops
// the function at start instead of failing every project's reconcile.
func (q QuotaTemplates) Validate() error {
	for i, t := range q {
		if _, err := metav1.LabelSelectorAsSelector(t.ProjectSelector); err != nil {
			return fmt.Errorf("quotas[%d].projectSelector: %w", i, err)
		}
	}
	return nil
}
