// Package project declares GCM's Project controller as one function hosting its three
// reconcilers: Main (pkg/controller/project/project), Stale (stale) and Activity (activity).
package project

import (
	"strings"

	cmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/controllermanager/v1alpha1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/sets"

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

// StaleSweep is the sweep that runs the Stale reconciler over every Project.
const StaleSweep = "stale"

// Function is GCM's Project controller.
var Function = &function.Function{
	Name:   "project",
	Config: &Config{},
	RBAC:   rules(projectmain.RBAC, stale.RBAC, activity.RBAC),
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
	}),
}

// rules joins the reconcilers' rules into one rule per API group and set of verbs, so that the
// function's ClusterRole reads as what the function may do rather than as overlapping lists.
// The permissions are exactly the union of the parts; rules narrowed to resource names or about
// non-resource URLs are kept as they are.
func rules(parts ...[]rbacv1.PolicyRule) []rbacv1.PolicyRule {
	type groupResource struct{ group, resource string }
	var (
		order  []groupResource
		narrow []rbacv1.PolicyRule
	)
	verbs := map[groupResource]sets.Set[string]{}
	for _, part := range parts {
		for _, rule := range part {
			if len(rule.ResourceNames) > 0 || len(rule.NonResourceURLs) > 0 {
				narrow = append(narrow, rule)
				continue
			}
			for _, group := range rule.APIGroups {
				for _, resource := range rule.Resources {
					gr := groupResource{group, resource}
					if verbs[gr] == nil {
						verbs[gr] = sets.New[string]()
						order = append(order, gr)
					}
					verbs[gr].Insert(rule.Verbs...)
				}
			}
		}
	}
	var joined []rbacv1.PolicyRule
	index := map[string]int{}
	for _, gr := range order {
		v := sets.List(verbs[gr])
		key := gr.group + "|" + strings.Join(v, ",")
		if i, ok := index[key]; ok {
			joined[i].Resources = append(joined[i].Resources, gr.resource)
			continue
		}
		index[key] = len(joined)
		joined = append(joined, rbacv1.PolicyRule{APIGroups: []string{gr.group}, Resources: []string{gr.resource}, Verbs: v})
	}
	return append(joined, narrow...)
}
