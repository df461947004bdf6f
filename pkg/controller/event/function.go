package event

import (
	"fmt"
	"time"

	cmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/controllermanager/v1alpha1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// DefaultTTLNonShootEvents is Gardener's default of controllers.event.ttlNonShootEvents, taken
// when the controller is configured without it.
const DefaultTTLNonShootEvents = time.Hour

// Config is the event function's configuration.
type Config struct {
	// TTLNonShootEvents is how long an Event that is not about a Shoot lives. Zero (the default:
	// controllers.event unset) means the controller is off, as in Gardener: sweeps delete
	// nothing. controllers.event set takes its ttlNonShootEvents (default 1h);
	// EVENT_TTL_NON_SHOOT_EVENTS wins over both.
	TTLNonShootEvents time.Duration `envconfig:"EVENT_TTL_NON_SHOOT_EVENTS"`
}

// FromControllerManager switches the controller on when controllers.event is configured.
func (c *Config) FromControllerManager(cm *cmv1alpha1.ControllerManagerConfiguration) {
	if cm.Controllers.Event == nil {
		return
	}
	c.TTLNonShootEvents = DefaultTTLNonShootEvents
	if ttl := cm.Controllers.Event.TTLNonShootEvents; ttl != nil {
		c.TTLNonShootEvents = ttl.Duration
	}
}

// TTLSweep is the sweep that deletes expired Events.
const TTLSweep = "ttl"

// Function is GCM's Event controller. It watches nothing: an Event can only expire with time,
// never through an API change, and Events are the garden's most frequent objects, so watching
// them would route every Event through the Broker for nothing. A sweep every five minutes
// streams the Events page by page (never holding more than one page) and deletes the expired
// ones, so an Event lives at most ttlNonShootEvents plus five minutes.
var Function = &function.Function{
	Name:          "event",
	Parts:         []function.Part{function.Runtime},
	WorksOnGarden: true,
	Config:        &Config{},
	// It lists Events (in full: involvedObject and the timestamps are in the body) and deletes
	// the expired ones; a Get during the sweep is answered from the page.
	RBAC: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"list", "delete"}},
	},
	Reconcilers: []function.Reconciler{{
		Name: "main",
		For:  kinds.Event,
		New: func(deps function.Deps) (function.Handler, error) {
			cfg := deps.Config.(*Config)
			if cfg.TTLNonShootEvents < 0 {
				return nil, fmt.Errorf("ttlNonShootEvents must not be negative, got %s", cfg.TTLNonShootEvents)
			}
			if cfg.TTLNonShootEvents == 0 {
				deps.Log.Info("the event controller is not configured (controllers.event unset): its sweeps are off")
			}
			return &Reconciler{Writer: deps.Source.Writer, Clock: deps.Clock, TTL: cfg.TTLNonShootEvents, Log: deps.Log}, nil
		},
	}},
	Sweeps: []function.Sweep{{
		Name: TTLSweep, Schedule: "*/5 * * * *", Reconciler: "main",
		Primary: function.List{Kind: kinds.Event},
		// Unconfigured, the controller is off as in Gardener: a tick costs no request.
		Off: func(config any) bool { return config.(*Config).TTLNonShootEvents == 0 },
	}},
}
