// Package health is GRM's health controller as a function: its reconcilers health and
// progressing keep a ManagedResource's ResourcesHealthy and ResourcesProgressing conditions, from
// the objects it applied in the target cluster (pkg/controller/health/checks decides). They act on
// the ManagedResource's own changes, on changes of its objects in the target (events), and on
// every ManagedResource each sync period (sweeps).
package health

import (
	"context"
	"log/slog"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/controller/health/checks"
	"github.com/gardener-knative/gardener-knative/pkg/controller/internal/grm"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/clients"
)

// Config is the health function's configuration: controllers.health and the shared GRM
// settings of the ResourceManagerConfiguration, overridden by the environment.
type Config struct {
	grm.Config
	// SyncPeriod is controllers.health.syncPeriod: how often every ManagedResource is checked,
	// whatever events said.
	SyncPeriod time.Duration `envconfig:"HEALTH_SYNC_PERIOD"`
}

// FromResourceManager takes the function's settings from the file (Gardener's defaults applied).
func (c *Config) FromResourceManager(rm *componentconfig.ResourceManagerFile) {
	c.Config.FromResourceManager(rm)
	c.SyncPeriod = rm.Controllers.Health.SyncPeriod.Duration
}

// Reconciler names.
const (
	Health      = "health"
	Progressing = "progressing"
)

// checkedKinds are the kinds of the target whose changes can change a ManagedResource's health
// (Gardener watches every kind its ManagedResources hold; the event source watches a fixed set:
// the workloads, whose health changes on their own). Other kinds are checked by the sweeps.
var checkedKinds = []function.Kind{kinds.Deployment, kinds.StatefulSet, kinds.DaemonSet, kinds.Job}

// progressingKinds are those of checkedKinds that can progress.
var progressingKinds = []function.Kind{kinds.Deployment, kinds.StatefulSet, kinds.DaemonSet}

// presentKinds are the other kinds ManagedResources mostly hold, whose health is that they
// exist (a Service's, that a LoadBalancer has its ingress): the health sweep lists them too,
// metadata only where the check reads only metadata, so that a sweep costs a LIST per kind and
// tenant instead of a GET per object (bench-seed: 200 GETs per shoot and period before).
var presentKinds = []function.Kind{
	kinds.ConfigMap, kinds.Secret, kinds.ServiceAccount, kinds.Role, kinds.RoleBinding, kinds.ClusterRole, kinds.ClusterRoleBinding,
}

func presentLists() []function.List {
	lists := []function.List{{Kind: kinds.Service, Cluster: function.Target, LabelSelector: grm.ManagedLabel}}
	for _, k := range presentKinds {
		lists = append(lists, function.List{Kind: k, Cluster: function.Target, LabelSelector: grm.ManagedLabel, MetadataOnly: true})
	}
	return lists
}

// Function is GRM's health controller.
var Function = newFunction()

func newFunction() *function.Function {
	fn := &function.Function{
		Name:       "health",
		Parts:      []function.Part{function.Seed},
		Config:     &Config{},
		Deployment: function.PerSeed,
		RBAC: []rbacv1.PolicyRule{
			{APIGroups: []string{resourcesv1alpha1.SchemeGroupVersion.Group}, Resources: []string{"managedresources"}, Verbs: []string{"get", "list"}},
			{APIGroups: []string{resourcesv1alpha1.SchemeGroupVersion.Group}, Resources: []string{"managedresources/status"}, Verbs: []string{"patch"}},
			// Per seed: the tenants (Discover, each tenant's Cluster).
			{APIGroups: []string{clients.ClusterGroup}, Resources: []string{clients.ClusterResource}, Verbs: []string{"get", "list"}},
		},
		// Each tenant's access Secrets, in enrolled tenants' namespaces only.
		TenantRBAC: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}},
		Reconcilers: []function.Reconciler{
			{Name: Health, For: kinds.ManagedResource, New: newReconciler(checks.Health, resourcesv1alpha1.ResourcesHealthy)},
			{Name: Progressing, For: kinds.ManagedResource, New: newReconciler(checks.Progressing, resourcesv1alpha1.ResourcesProgressing)},
		},
	}
	conditions := map[string]gardencorev1beta1.ConditionType{Health: resourcesv1alpha1.ResourcesHealthy, Progressing: resourcesv1alpha1.ResourcesProgressing}
	for _, r := range []string{Health, Progressing} {
		fn.Watches = append(fn.Watches, function.Watch{Kind: kinds.ManagedResource, Reconciler: r, Predicate: ManagedResourcePredicate(conditions[r])})
		watched := checkedKinds
		if r == Progressing {
			watched = progressingKinds
		}
		for _, k := range watched {
			fn.Watches = append(fn.Watches, function.Watch{Kind: k, Cluster: function.Target, Reconciler: r, LabelSelector: grm.ManagedLabel, Predicate: ObjectPredicate, Map: grm.MapToOrigin})
		}
		sweep := function.Sweep{
			Name: r, Reconciler: r,
			Period:  func(config any) time.Duration { return config.(*Config).SyncPeriod },
			Primary: function.List{Kind: kinds.ManagedResource},
		}
		// Per tenant (per seed) or once: the managed workloads, so that a sync costs a LIST per
		// kind instead of a GET per object.
		for _, k := range watched {
			sweep.Related = append(sweep.Related, function.List{Kind: k, Cluster: function.Target, LabelSelector: grm.ManagedLabel})
		}
		if r == Health {
			sweep.Related = append(sweep.Related, presentLists()...)
		}
		if r == Progressing {
			// A rolled-out Deployment's live Pods are counted: one LIST per namespace and sweep,
			// for every Deployment there, instead of one per Deployment.
			sweep.Related = append(sweep.Related, function.List{Kind: kinds.Pod, Cluster: function.Target, OnDemand: true, Project: checks.PodForCounting})
		}
		fn.Sweeps = append(fn.Sweeps, sweep)
	}
	return fn
}

// ManagedResourcePredicate lets through the ManagedResources whose condition t is to be checked
// anew, as Gardener's predicates do, on the new object alone: created ones, and those the
// ManagedResource function applied (or changed the set of objects of) since t was last checked.
// Deleted ones are not checked. Each reconciler looks at its own condition only: Gardener's
// health and progressing controllers start on the apply alone, so neither is started again by
// the other's write.
func ManagedResourcePredicate(t gardencorev1beta1.ConditionType) function.Predicate {
	return func(ev function.Event) bool {
		if ev.Deleted {
			return false
		}
		if ev.Created || ev.Object == nil {
			return true
		}
		mr, err := function.Decode[resourcesv1alpha1.ManagedResource](ev)
		if err != nil || mr == nil {
			return true
		}
		applied := function.GetCondition(mr.Status.Conditions, resourcesv1alpha1.ResourcesApplied)
		if applied == nil {
			return false
		}
		c := function.GetCondition(mr.Status.Conditions, t)
		return c == nil || c.Reason == resourcesv1alpha1.ConditionChecksPending || c.Reason == resourcesv1alpha1.ConditionManagedResourceIgnored ||
			c.LastUpdateTime.Before(&applied.LastUpdateTime)
	}
}

// ObjectPredicate lets through the changes of objects a ManagedResource applied that are not
// excluded from health checks; deletions too (a missing object is unhealthy).
func ObjectPredicate(ev function.Event) bool {
	if ev.Object == nil {
		return true
	}
	annotations := ev.Object.GetAnnotations()
	if _, ok := annotations[resourcesv1alpha1.OriginAnnotation]; !ok {
		return false
	}
	return annotations[resourcesv1alpha1.SkipHealthCheck] != "true"
}

// decide is one of the checks' decisions: a condition of a ManagedResource from its objects.
type decide func(ctx context.Context, target client.Reader, mr *resourcesv1alpha1.ManagedResource, now time.Time) (gardencorev1beta1.Condition, error)

// Reconciler keeps one condition of a ManagedResource.
type Reconciler struct {
	Config *Config
	Decide decide
	Type   gardencorev1beta1.ConditionType
	Source function.ClusterClient
	Clock  clock.PassiveClock
	Log    *slog.Logger
}

func newReconciler(d decide, t gardencorev1beta1.ConditionType) func(function.Deps) (function.Handler, error) {
	return func(deps function.Deps) (function.Handler, error) {
		return &Reconciler{Config: deps.Config.(*Config), Decide: d, Type: t, Source: deps.Source, Clock: deps.Clock, Log: deps.Log}, nil
	}
}

// Reconcile checks the ManagedResource's objects in its target and writes the condition; when
// nothing changed, nothing is written.
func (r *Reconciler) Reconcile(ctx context.Context, req function.Request) error {
	if !r.Config.Serves(req.Key.Namespace) {
		return nil
	}
	mr := &resourcesv1alpha1.ManagedResource{}
	if err := req.Reader.Get(ctx, req.Key, mr); err != nil {
		return err
	}
	if !checks.ShouldCheck(mr, r.Config.ResourceClass) {
		return nil
	}
	condition, err := r.Decide(ctx, req.Target, mr, r.Clock.Now())
	if err != nil {
		return err
	}
	_, err = r.Source.Writer.PatchStatus(ctx, mr, func() {
		mr.Status.Conditions = function.MergeConditions(mr.Status.Conditions, condition)
	})
	return client.IgnoreNotFound(err)
}
