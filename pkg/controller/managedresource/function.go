// Package managedresource is GRM's ManagedResource controller as a function: it keeps the objects
// a ManagedResource's Secrets describe in the target cluster (a shoot, or the seed itself),
// reconciles manual changes back, deletes what is no longer described, and reports
// .status.resources and the ResourcesApplied condition. Deployed per seed, one function serves
// the ManagedResources of every shoot namespace, each applied to its own shoot.
package managedresource

import (
	"strings"
	"time"

	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/utils/ptr"

	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/controller/internal/grm"
	"github.com/gardener-knative/gardener-knative/pkg/controller/managedresource/merge"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/clients"
)

// Config is the managedresource function's configuration: controllers.managedResource and the
// shared GRM settings of the ResourceManagerConfiguration, overridden by the environment.
type Config struct {
	grm.Config
	// SyncPeriod is controllers.managedResource.syncPeriod: how often every ManagedResource is
	// reconciled, whatever events said (the sync sweep's period).
	SyncPeriod time.Duration `envconfig:"MANAGED_RESOURCE_SYNC_PERIOD"`
	// AlwaysUpdate is controllers.managedResource.alwaysUpdate: write every object on every
	// reconcile, even when nothing changed (e.g. so that admission webhooks see it again).
	AlwaysUpdate bool `envconfig:"MANAGED_RESOURCE_ALWAYS_UPDATE"`
	// ManagedByLabelValue is controllers.managedResource.managedByLabelValue.
	ManagedByLabelValue string `envconfig:"MANAGED_BY_LABEL_VALUE"`
	// GarbageCollectorEnabled is controllers.garbageCollector.enabled: garbage-collectable
	// ConfigMaps and Secrets are then left to the garbage collector instead of being deleted.
	GarbageCollectorEnabled bool `envconfig:"GARBAGE_COLLECTOR_ENABLED"`
}

// FromResourceManager takes the function's settings from the file (Gardener's defaults applied).
func (c *Config) FromResourceManager(rm *componentconfig.ResourceManagerFile) {
	c.Config.FromResourceManager(rm)
	mr := rm.Controllers.ManagedResource
	c.SyncPeriod = mr.SyncPeriod.Duration
	c.AlwaysUpdate = ptr.Deref(mr.AlwaysUpdate, false)
	c.ManagedByLabelValue = ptr.Deref(mr.ManagedByLabelValue, resourcesv1alpha1.GardenerManager)
	c.GarbageCollectorEnabled = rm.Controllers.GarbageCollector.Enabled
}

// driftKinds are the kinds of the target whose changes are reconciled back at once (by event),
// besides the sync sweep: what ManagedResources mostly hold. Only objects carrying the
// managed-by label are watched, on the server.
var driftKinds = []function.Kind{
	kinds.Deployment, kinds.StatefulSet, kinds.DaemonSet, kinds.Service, kinds.ConfigMap, kinds.ServiceAccount,
	kinds.ClusterRole, kinds.ClusterRoleBinding, kinds.Role, kinds.RoleBinding,
}

// Function is GRM's ManagedResource controller.
var Function = newFunction()

func newFunction() *function.Function {
	fn := &function.Function{
		Name:       "managedresource",
		Parts:      []function.Part{function.Seed},
		Config:     &Config{},
		Deployment: function.PerSeed,
		RBAC: []rbacv1.PolicyRule{
			{APIGroups: []string{resourcesv1alpha1.SchemeGroupVersion.Group}, Resources: []string{"managedresources"}, Verbs: []string{"get", "list", "patch"}},
			{APIGroups: []string{resourcesv1alpha1.SchemeGroupVersion.Group}, Resources: []string{"managedresources/status"}, Verbs: []string{"patch"}},
			// <cluster> and <default> cluster ids come from this ConfigMap.
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{v1beta1constants.ClusterIdentity}, Verbs: []string{"get"}},
			// Per seed: the tenants (Discover, and each tenant's Cluster).
			{APIGroups: []string{clients.ClusterGroup}, Resources: []string{clients.ClusterResource}, Verbs: []string{"get", "list"}},
		},
		// The objects live in the ManagedResources' Secrets (the sync sweep lists a tenant's), and
		// the Secrets of each tenant's namespace hold its access: in enrolled tenants' namespaces
		// only.
		TenantRBAC:  []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list"}}},
		Reconcilers: []function.Reconciler{{Name: "main", For: kinds.ManagedResource, New: newReconciler, Undo: UndoCreations}},
		Watches: []function.Watch{
			// Gardener also watches every Secret of the source for updates of a ManagedResource's
			// data in place. Here the Source's Secrets are one shared watch in Reference mode,
			// whose events carry no labels: an unfiltered watch would send every Secret event of
			// the seed to every function that watches Secrets. A new Secret comes with a new
			// secretRef (an event of the ManagedResource); data changed in place is applied by
			// the sync sweep (docs/functions/managedresource.md).
			{Kind: kinds.ManagedResource, Reconciler: "main", Predicate: ManagedResourcePredicate},
		},
		Sweeps: []function.Sweep{{
			Name: "sync", Reconciler: "main",
			Period:  func(config any) time.Duration { return config.(*Config).SyncPeriod },
			Primary: function.List{Kind: kinds.ManagedResource},
			// Per tenant (per seed) or once (a single target): the HPAs, whose targets keep
			// their replicas, and the managed objects of the common kinds, so that a sync costs a
			// LIST per kind instead of a GET per object.
			// Per seed, the Secrets of the tenant's namespace too: a LIST per tenant rather than a
			// GET per ManagedResource and sweep.
			Related: append([]function.List{{Kind: kinds.HorizontalPodAutoscaler, Cluster: function.Target}, {Kind: kinds.Secret, PerTenant: true}}, driftLists()...),
		}},
	}
	for _, k := range driftKinds {
		fn.Watches = append(fn.Watches, function.Watch{Kind: k, Cluster: function.Target, Reconciler: "main", LabelSelector: grm.ManagedLabel, Predicate: DriftPredicate, Map: grm.MapToOrigin})
	}
	return fn
}

func driftLists() []function.List {
	lists := make([]function.List, 0, len(driftKinds))
	for _, k := range driftKinds {
		lists = append(lists, function.List{Kind: k, Cluster: function.Target, LabelSelector: grm.ManagedLabel})
	}
	return lists
}

// ManagedResourcePredicate lets through what can require work, as Gardener's predicates do,
// deciding on the new object alone (Knative's events carry no old one): creations and deletions,
// a spec not yet applied (generation ahead of observedGeneration), the operation annotation, an
// unhealthy ResourcesHealthy (an object may be gone), a deletion in progress, an ignore annotation
// whose conditions do not say so yet, and a finalizer of another class (cleanup to wait for).
// The status updates the functions write themselves are dropped.
func ManagedResourcePredicate(ev function.Event) bool {
	if ev.Created || ev.Deleted || ev.Object == nil || ev.SpecUnobserved() {
		return true
	}
	mr, err := function.Decode[resourcesv1alpha1.ManagedResource](ev)
	if err != nil || mr == nil {
		return true
	}
	if mr.DeletionTimestamp != nil || mr.Annotations[v1beta1constants.GardenerOperation] == v1beta1constants.GardenerOperationReconcile {
		return true
	}
	if c := function.GetCondition(mr.Status.Conditions, resourcesv1alpha1.ResourcesHealthy); c != nil && c.Status == "False" {
		return true
	}
	applied := function.GetCondition(mr.Status.Conditions, resourcesv1alpha1.ResourcesApplied)
	ignoredReported := applied != nil && applied.Reason == resourcesv1alpha1.ConditionManagedResourceIgnored
	if merge.Ignored(mr) != ignoredReported {
		return true
	}
	finalizers := 0
	for _, f := range mr.Finalizers {
		if strings.HasPrefix(f, grm.FinalizerName) {
			finalizers++
		}
	}
	return finalizers > 1
}

// DriftPredicate lets through the changes of managed objects that someone other than a
// controller's status update made: deletions, and updates of kinds without a status or of a spec
// not yet observed. Label or annotation edits of workloads are left to the sync sweep.
func DriftPredicate(ev function.Event) bool {
	if ev.Object == nil {
		return true
	}
	if _, ok := ev.Object.GetAnnotations()[resourcesv1alpha1.OriginAnnotation]; !ok {
		return false
	}
	if ev.Deleted {
		return true
	}
	switch ev.Kind.Kind {
	case "Deployment", "StatefulSet", "DaemonSet":
		return ev.SpecUnobserved()
	}
	return !ev.Created // a creation is this function's own
}
