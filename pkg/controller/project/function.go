// Package project declares GCM's Project controller as one function hosting its three
// reconcilers: Main (pkg/controller/project/project), Stale (stale) and Activity (activity).
package project

import (
	cmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/controllermanager/v1alpha1"

	"github.com/gardener-knative/gardener-knative/pkg/controller/project/activity"
	projectmain "github.com/gardener-knative/gardener-knative/pkg/controller/project/project"
	"github.com/gardener-knative/gardener-knative/pkg/controller/project/stale"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// Config is the project function's configuration: each reconciler's part, embedded so that
// envconfig reads every part's variables (PROJECT_QUOTAS, PROJECT_MINIMUM_LIFETIME_DAYS,
// PROJECT_STALE_GRACE_PERIOD_DAYS, PROJECT_STALE_EXPIRATION_TIME_DAYS).
type Config struct {
	projectmain.Config
	stale.Settings
}

// FromControllerManager takes every part's settings from controllers.project.
func (c *Config) FromControllerManager(cm *cmv1alpha1.ControllerManagerConfiguration) {
	c.Config.FromControllerManager(cm)
	c.Settings.FromControllerManager(cm)
}

// The names of the Stale and Activity reconcilers (the Main one's is projectmain.ReconcilerName):
// they name the reconcilers' log lines and metrics.
const (
	StaleReconciler    = "stale"
	ActivityReconciler = "activity"
)

// StaleSweep is the sweep that runs the Stale reconciler over every Project, and ActivitySweep
// the one that records on every Project the activity its objects show but no event recorded.
const (
	StaleSweep    = "stale"
	ActivitySweep = "activity"
)

// Function is GCM's Project controller.
var Function = &function.Function{
	Name:          "project",
	Parts:         []function.Part{function.Runtime},
	WorksOnGarden: true,
	Config:        &Config{},
	RBAC:          function.JoinRules(projectmain.RBAC, stale.RBAC, activity.RBAC),
	Reconcilers: []function.Reconciler{
		{Name: projectmain.ReconcilerName, For: kinds.Project, New: projectmain.New},
		{
			Name: StaleReconciler,
			For:  kinds.Project,
			New: func(deps function.Deps) (function.Handler, error) {
				return stale.New(deps, deps.Config.(*Config).Settings)
			},
		},
		{
			Name: ActivityReconciler,
			For:  kinds.Project,
			New:  func(deps function.Deps) (function.Handler, error) { return activity.New(deps) },
		},
	},
	Watches: append(append([]function.Watch{}, projectmain.Watches...), activity.Watches(ActivityReconciler)...),
	Sweeps: append(append([]function.Sweep{}, projectmain.Sweeps...), function.Sweep{
		// Gardener's staleSyncPeriod default (12h): the stale check counts in days. The Stale
		// reconciler runs only in this sweep; see docs/functions/project.md.
		Name: StaleSweep, Schedule: "0 */12 * * *", Reconciler: StaleReconciler,
		Primary: function.List{Kind: kinds.Project},
		Related: stale.Related,
	}, function.Sweep{
		// Ten minutes before each stale sweep, the only reader of the last activity: an activity
		// whose events were lost counts before a Project is judged stale. Gardener has no such
		// sweep; see docs/functions/project.md.
		Name: ActivitySweep, Schedule: "50 11,23 * * *", Reconciler: ActivityReconciler,
		Primary: function.List{Kind: kinds.Project},
		Related: activity.Related,
	}),
}
