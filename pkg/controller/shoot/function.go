// Package shoot is GCM's Shoot controller as one function that hosts its reconcilers, each in
// its own package as in Gardener (pkg/controllermanager/controller/shoot/<reconciler>):
//   - reference (pkg/controller/shoot/reference): the reference protection of what Shoots
//     reference.
//   - conditions, quota, retry, statuslabel, migration (pkg/controller/shoot/<name>): the Seed
//     conditions of Shoots registered as seeds, Quota lifetimes, retries of rate-limited
//     failures, the status label, the ReadyForMigration constraint.
//   - hibernation, maintenance (pkg/controller/shoot/<name>): hibernation schedules, and the
//     maintenance of versions, credentials and operations in the maintenance time window.
package shoot

import (
	"slices"

	cmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/controllermanager/v1alpha1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/gardener-knative/gardener-knative/pkg/controller/shoot/conditions"
	"github.com/gardener-knative/gardener-knative/pkg/controller/shoot/hibernation"
	"github.com/gardener-knative/gardener-knative/pkg/controller/shoot/maintenance"
	"github.com/gardener-knative/gardener-knative/pkg/controller/shoot/migration"
	"github.com/gardener-knative/gardener-knative/pkg/controller/shoot/quota"
	"github.com/gardener-knative/gardener-knative/pkg/controller/shoot/reference"
	"github.com/gardener-knative/gardener-knative/pkg/controller/shoot/retry"
	"github.com/gardener-knative/gardener-knative/pkg/controller/shoot/statuslabel"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// Config is the shoot function's configuration: each reconciler's part, embedded so that
// envconfig reads every part's variables.
type Config struct {
	retry.Periods
	hibernation.HibernationConfig
	maintenance.MaintenanceConfig
}

// FromControllerManager takes every part's settings from Gardener's component configuration.
func (c *Config) FromControllerManager(cm *cmv1alpha1.ControllerManagerConfiguration) {
	c.Periods.FromControllerManager(cm)
	c.HibernationConfig.FromControllerManager(cm)
	c.MaintenanceConfig.FromControllerManager(cm)
}

// Function is GCM's Shoot controller.
var Function = &function.Function{
	Name:          "shoot",
	Parts:         []function.Part{function.Runtime},
	WorksOnGarden: true,
	Config:        &Config{},
	// reference: lists Shoots and the metadata of Secrets, ConfigMaps and WorkloadIdentities by
	// namespace and patches their finalizers; its sweep lists project Namespaces. It never reads
	// one object by name.
	RBAC: function.JoinRules([]rbacv1.PolicyRule{
		{APIGroups: []string{kinds.Shoot.Group}, Resources: []string{kinds.Shoot.Resource}, Verbs: []string{"list", "patch"}},
		{APIGroups: []string{kinds.Secret.Group}, Resources: []string{kinds.Secret.Resource, kinds.ConfigMap.Resource}, Verbs: []string{"list", "patch"}},
		{APIGroups: []string{kinds.WorkloadIdentity.Group}, Resources: []string{kinds.WorkloadIdentity.Resource}, Verbs: []string{"list", "patch"}},
		{APIGroups: []string{kinds.Namespace.Group}, Resources: []string{kinds.Namespace.Resource}, Verbs: []string{"list"}},
	}, conditions.RBAC, quota.RBAC, retry.RBAC, statuslabel.RBAC, migration.RBAC, hibernation.RBAC, maintenance.RBAC),
	Reconcilers: []function.Reconciler{
		{
			Name: reference.Name,
			// The reconciler converges a namespace: its keys name Namespaces.
			For: kinds.Namespace,
			New: func(deps function.Deps) (function.Handler, error) {
				return &reference.Reconciler{Writer: deps.Source.Writer, Live: deps.Source.Reader, Log: deps.Log}, nil
			},
		},
		{Name: conditions.Name, For: kinds.Shoot, New: conditions.New},
		{Name: quota.Name, For: kinds.Shoot, New: quota.New},
		{Name: retry.Name, For: kinds.Shoot, New: func(deps function.Deps) (function.Handler, error) {
			return retry.New(deps, deps.Config.(*Config).Periods)
		}},
		{Name: statuslabel.Name, For: kinds.Shoot, New: statuslabel.New},
		{Name: migration.Name, For: kinds.Shoot, New: migration.New},
		{Name: hibernation.Name, For: kinds.Shoot, New: func(deps function.Deps) (function.Handler, error) {
			return hibernation.New(deps, deps.Config.(*Config).HibernationConfig)
		}},
		{Name: maintenance.Name, For: kinds.Shoot, New: func(deps function.Deps) (function.Handler, error) {
			return maintenance.New(deps, deps.Config.(*Config).MaintenanceConfig)
		}},
	},
	Watches: slices.Concat([]function.Watch{
		{Kind: kinds.Shoot, Reconciler: reference.Name, Predicate: reference.Predicate, Map: reference.MapShootToNamespace},
	}, conditions.Watches, quota.Watches, retry.Watches, statuslabel.Watches, migration.Watches, []function.Watch{maintenance.Watch}),
	Sweeps: slices.Concat([]function.Sweep{{
		// Twice an hour: every project namespace against four LISTs of the whole garden, read
		// once, so that changes whose events were dropped and referenced objects created after
		// their Shoot are protected, and objects no Shoot references any more are released.
		Name: reference.Name, Schedule: "12,42 * * * *", Reconciler: reference.Name,
		Primary: function.List{Kind: kinds.Namespace, MetadataOnly: true, LabelSelector: v1beta1constants.GardenRole + "=" + v1beta1constants.GardenRoleProject},
		Related: []function.List{
			{Kind: kinds.Shoot},
			{Kind: kinds.Secret, MetadataOnly: true},
			{Kind: kinds.ConfigMap, MetadataOnly: true},
			{Kind: kinds.WorkloadIdentity, MetadataOnly: true},
		},
	}}, conditions.Sweeps, quota.Sweeps, retry.Sweeps, statuslabel.Sweeps, migration.Sweeps, []function.Sweep{hibernation.Sweep, maintenance.Sweep}),
}
