package webhook

import (
	"fmt"

	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/kelseyhightower/envconfig"
)

// Configured describes a webhook with settings S beyond the component configuration: its
// defaults (from the component configuration, or S's zero value), overridden by the
// environment through S's envconfig tags, as every webhook reads them. Constructor is what the
// server registers; With fixes the settings instead, for tests.
type Configured[S any] struct {
	Name    string
	Enabled func(*componentconfig.ResourceManagerFile) bool
	// AppliesTo is the Constructor's.
	AppliesTo func(*tenant.Settings) bool
	// Defaults are the settings before the environment; nil means S's zero value.
	Defaults func(Deps) S
	Build    func(Deps, S) (Webhook, error)
}

// Constructor builds the webhook with its settings read from the environment.
func (c Configured[S]) Constructor() Constructor {
	return Constructor{Name: c.Name, Enabled: c.Enabled, AppliesTo: c.AppliesTo, New: func(deps Deps) (Webhook, error) {
		var settings S
		if c.Defaults != nil {
			settings = c.Defaults(deps)
		}
		if err := envconfig.Process("", &settings); err != nil {
			return Webhook{}, fmt.Errorf("webhook %s: %w", c.Name, err)
		}
		return c.Build(deps, settings)
	}}
}

// With builds the webhook with the given settings, whatever the environment says.
func (c Configured[S]) With(settings S) Constructor {
	return Constructor{Name: c.Name, Enabled: c.Enabled, AppliesTo: c.AppliesTo, New: func(deps Deps) (Webhook, error) { return c.Build(deps, settings) }}
}
