// Package garbagecollector is GRM's garbage collector for immutable ConfigMaps and Secrets as a
// function: on its schedule it deletes, in the target cluster, those labelled garbage-collectable
// that no workload, Pod, ManagedResource or Prometheus references any more (the references are
// annotations, see pkg/controller/garbagecollector/collect), once they are old enough. It is off
// unless configured, as in Gardener.
package garbagecollector

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/controller/garbagecollector/collect"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/clients"
)

// Config is the garbage collector's part of the ResourceManagerConfiguration
// (controllers.garbageCollector), overridden by the environment.
type Config struct {
	// Enabled is controllers.garbageCollector.enabled; Gardener's default is off.
	Enabled bool `envconfig:"GARBAGE_COLLECTOR_ENABLED"`
	// SyncPeriod is controllers.garbageCollector.syncPeriod (Gardener's default: 1h when enabled).
	SyncPeriod time.Duration `envconfig:"GARBAGE_COLLECTOR_SYNC_PERIOD"`
	// MinimumObjectLifetime is how old a collectable object must be before it is collected, so
	// that a new one is not collected before the workload that references it is updated:
	// controllers.garbageCollector.minimumObjectLifetime, our key (Gardener hard-codes 10m).
	MinimumObjectLifetime time.Duration `envconfig:"GARBAGE_COLLECTOR_MINIMUM_OBJECT_LIFETIME"`
}

// defaultSyncPeriod is Gardener's period for an enabled collector; also the schedule of a
// disabled one, whose ticks then cost nothing.
const defaultSyncPeriod = time.Hour

// FromResourceManager takes the collector's settings from the file (Gardener's defaults applied).
func (c *Config) FromResourceManager(rm *componentconfig.ResourceManagerFile) {
	gc := rm.Controllers.GarbageCollector
	c.Enabled = gc.Enabled
	c.SyncPeriod = defaultSyncPeriod
	if gc.SyncPeriod != nil {
		c.SyncPeriod = gc.SyncPeriod.Duration
	}
	c.MinimumObjectLifetime = collect.DefaultMinimumObjectLifetime
	if l := rm.Extensions.Controllers.GarbageCollector.MinimumObjectLifetime; l != nil {
		c.MinimumObjectLifetime = l.Duration
	}
}

// collectable selects the ConfigMaps and Secrets that may be collected.
const collectable = collect.LabelKeyGarbageCollectable + "=" + collect.LabelValueGarbageCollectable

// referencing are the kinds whose annotations reference collectable objects: the workloads and
// Pods (Kubernetes'), ManagedResources and Prometheuses (CRDs a target may lack).
var referencing = []function.List{
	{Kind: kinds.Deployment, Cluster: function.Target, MetadataOnly: true},
	{Kind: kinds.StatefulSet, Cluster: function.Target, MetadataOnly: true},
	{Kind: kinds.DaemonSet, Cluster: function.Target, MetadataOnly: true},
	{Kind: kinds.Job, Cluster: function.Target, MetadataOnly: true},
	{Kind: kinds.CronJob, Cluster: function.Target, MetadataOnly: true},
	{Kind: kinds.Pod, Cluster: function.Target, MetadataOnly: true},
	{Kind: kinds.ManagedResource, Cluster: function.Target, MetadataOnly: true, Optional: true},
	{Kind: function.NewKind(schema.GroupVersion{Group: "monitoring.coreos.com", Version: "v1"}, "Prometheus", "prometheuses"), Cluster: function.Target, MetadataOnly: true, Optional: true},
}

// Function is GRM's garbage collector. It has no events: a sweep over the target's namespaces,
// each reconciled from one snapshot of the collectable objects and of every referencing kind,
// metadata only (a constant number of LISTs per target, then a DELETE per collected object).
var Function = &function.Function{
	Name:       "garbagecollector",
	Parts:      []function.Part{function.Seed},
	Config:     &Config{},
	Deployment: function.PerSeed,
	RBAC: []rbacv1.PolicyRule{
		// Per seed: the tenants (Discover, each tenant's Cluster).
		{APIGroups: []string{clients.ClusterGroup}, Resources: []string{clients.ClusterResource}, Verbs: []string{"get", "list"}},
	},
	// Each tenant's access Secrets, in enrolled tenants' namespaces only.
	TenantRBAC:  []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}},
	Reconcilers: []function.Reconciler{{Name: "main", For: kinds.Namespace, Cluster: function.Target, New: newReconciler}},
	Sweeps: []function.Sweep{{
		Name: "collect", Reconciler: "main",
		Period:  func(config any) time.Duration { return config.(*Config).SyncPeriod },
		Off:     func(config any) bool { return !config.(*Config).Enabled },
		Primary: function.List{Kind: kinds.Namespace, Cluster: function.Target, MetadataOnly: true},
		Related: append([]function.List{
			{Kind: kinds.ConfigMap, Cluster: function.Target, MetadataOnly: true, LabelSelector: collectable},
			{Kind: kinds.Secret, Cluster: function.Target, MetadataOnly: true, LabelSelector: collectable},
		}, referencing...),
	}},
}

// Reconciler collects the garbage of one namespace of the target.
type Reconciler struct {
	Config *Config
	Target function.ClusterClient
	Clock  clock.PassiveClock
	Log    *slog.Logger
}

func newReconciler(deps function.Deps) (function.Handler, error) {
	cfg := deps.Config.(*Config)
	if cfg.MinimumObjectLifetime < 0 {
		return nil, fmt.Errorf("the minimum object lifetime must not be negative, got %s", cfg.MinimumObjectLifetime)
	}
	return &Reconciler{Config: cfg, Target: deps.Target, Clock: deps.Clock, Log: deps.Log}, nil
}

// Reconcile deletes the namespace's collectable ConfigMaps and Secrets that nothing references.
func (r *Reconciler) Reconcile(ctx context.Context, req function.Request) error {
	namespace := req.Key.Name
	read := func(kind function.Kind) ([]metav1.Object, error) {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(kind.GroupVersion().WithKind(kind.Kind + "List"))
		opts := []client.ListOption{client.InNamespace(namespace)}
		if kind == kinds.ConfigMap || kind == kinds.Secret {
			opts = append(opts, client.MatchingLabels{collect.LabelKeyGarbageCollectable: collect.LabelValueGarbageCollectable})
		}
		if err := req.Target.List(ctx, list, opts...); err != nil {
			return nil, err
		}
		objs := make([]metav1.Object, 0, len(list.Items))
		for i := range list.Items {
			objs = append(objs, &list.Items[i])
		}
		return objs, nil
	}
	configMaps, err := read(kinds.ConfigMap)
	if err != nil {
		return err
	}
	secrets, err := read(kinds.Secret)
	if err != nil {
		return err
	}
	if len(configMaps)+len(secrets) == 0 {
		return nil
	}
	var references []metav1.Object
	for _, l := range referencing {
		objs, err := read(l.Kind)
		if err != nil {
			return err
		}
		references = append(references, objs...)
	}
	byKey := map[collect.Object]metav1.Object{}
	for kind, objs := range map[string][]metav1.Object{collect.KindConfigMap: configMaps, collect.KindSecret: secrets} {
		for _, o := range objs {
			byKey[collect.Object{Kind: kind, Namespace: o.GetNamespace(), Name: o.GetName()}] = o
		}
	}
	for _, garbage := range collect.Collect(r.Clock.Now(), r.Config.MinimumObjectLifetime, configMaps, secrets, references) {
		obj := byKey[garbage].(*metav1.PartialObjectMetadata)
		obj.SetGroupVersionKind(kinds.ConfigMap.GroupVersionKind)
		if garbage.Kind == collect.KindSecret {
			obj.SetGroupVersionKind(kinds.Secret.GroupVersionKind)
		}
		if err := r.Target.Writer.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting %s %s/%s: %w", garbage.Kind, garbage.Namespace, garbage.Name, err)
		}
		r.Log.Info("garbage collected", "kind", garbage.Kind, "namespace", garbage.Namespace, "name", garbage.Name)
	}
	return nil
}
