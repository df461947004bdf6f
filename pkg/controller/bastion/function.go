package bastion

import (
	"context"
	"fmt"
	"time"

	cmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/controllermanager/v1alpha1"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/gardener/gardener/pkg/apis/operations"
	operationsv1alpha1 "github.com/gardener/gardener/pkg/apis/operations/v1alpha1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// Config is the bastion function's configuration.
type Config struct {
	// MaxLifetime is how long a Bastion may live at most. BASTION_MAX_LIFETIME wins over
	// controllers.bastion.maxLifetime of the component configuration (Gardener's default 24h).
	MaxLifetime time.Duration `envconfig:"BASTION_MAX_LIFETIME"`
}

// FromControllerManager takes controllers.bastion.maxLifetime.
func (c *Config) FromControllerManager(cm *cmv1alpha1.ControllerManagerConfiguration) {
	if cm.Controllers.Bastion != nil && cm.Controllers.Bastion.MaxLifetime != nil {
		c.MaxLifetime = cm.Controllers.Bastion.MaxLifetime.Duration
	}
}

// Function is GCM's Bastion controller: Bastion events, Shoot events that can condemn a Bastion,
// and a resync sweep every minute that catches expirations, lifetimes and missed events.
var Function = &function.Function{
	Name:          "bastion",
	Parts:         []function.Part{function.Runtime},
	WorksOnGarden: true,
	Config:        &Config{},
	// It reads Bastions (GETs, the Shoot→Bastions LIST and the resync sweep) and Shoots (GETs
	// only) and deletes Bastions; it never writes Shoots.
	RBAC: []rbacv1.PolicyRule{
		{APIGroups: []string{operationsv1alpha1.SchemeGroupVersion.Group}, Resources: []string{"bastions"}, Verbs: []string{"get", "list", "delete"}},
		{APIGroups: []string{gardencorev1beta1.SchemeGroupVersion.Group}, Resources: []string{"shoots"}, Verbs: []string{"get"}},
	},
	Reconcilers: []function.Reconciler{{
		Name: "main",
		For:  kinds.Bastion,
		New: func(deps function.Deps) (function.Handler, error) {
			cfg := deps.Config.(*Config)
			if cfg.MaxLifetime <= 0 {
				return nil, fmt.Errorf("bastion max lifetime must be positive, got %s", cfg.MaxLifetime)
			}
			return &Reconciler{Writer: deps.Source.Writer, Clock: deps.Clock, MaxLifetime: cfg.MaxLifetime, Log: deps.Log}, nil
		},
	}},
	Watches: []function.Watch{
		{Kind: kinds.Bastion, Reconciler: "main", Predicate: BastionPredicate},
		{Kind: kinds.Shoot, Reconciler: "main", Predicate: ShootPredicate, Map: MapShootToBastions,
			Changes: function.Changes{function.ChangedMetadata, function.ChangedSpec, function.StatusField("seedName")}},
	},
	Sweeps: []function.Sweep{{
		Name: "resync", Schedule: "* * * * *", Reconciler: "main",
		Primary: function.List{Kind: kinds.Bastion},
		// Bastions are few and Shoots many: only the Shoots the sweep's Bastions name are read,
		// live, one GET per distinct Shoot per sweep, instead of listing every Shoot (in full:
		// the decision needs spec.seedName) every minute.
	}},
}

// BastionPredicate lets through only the creation of a Bastion (not already being deleted): its
// Shoot may be gone, being deleted or elsewhere from the start. A Bastion's updates (heartbeats
// that extend its expiration, status) can never condemn it: time (expiration, lifetime) is the
// resync sweep's to notice, a Shoot's deletion or move the Shoot's events'. So the frequent
// heartbeat events cost no request.
func BastionPredicate(ev function.Event) bool {
	return ev.Created && (ev.Object == nil || ev.Object.GetDeletionTimestamp() == nil)
}

// ShootPredicate is Gardener's predicate on the Shoot watch: a Shoot that is being deleted, or
// whose seed changed. Knative's update events carry only the new object, so a seed change is
// recognised the way gardenlet sees it: spec.seedName differs from status.seedName until the
// migration to the new seed is complete.
func ShootPredicate(ev function.Event) bool {
	if ev.Deleted || ev.Object == nil {
		return true
	}
	if ev.Object.GetDeletionTimestamp() != nil {
		return true
	}
	specSeed, _, _ := unstructured.NestedString(ev.Object.Object, "spec", "seedName")
	statusSeed, _, _ := unstructured.NestedString(ev.Object.Object, "status", "seedName")
	return statusSeed != "" && specSeed != statusSeed
}

// MapShootToBastions maps an event about a Shoot to the Bastions that reference it, with one
// metadata-only LIST using the field selector gardener-apiserver offers (spec.shootRef.name).
func MapShootToBastions(ctx context.Context, reader client.Reader, ev function.Event) ([]function.Key, error) {
	bastions := &metav1.PartialObjectMetadataList{}
	bastions.SetGroupVersionKind(operationsv1alpha1.SchemeGroupVersion.WithKind("BastionList"))
	if err := reader.List(ctx, bastions, client.InNamespace(ev.Key.Namespace), client.MatchingFields{operations.BastionShootName: ev.Key.Name}); err != nil {
		return nil, err
	}
	keys := make([]function.Key, 0, len(bastions.Items))
	for _, b := range bastions.Items {
		keys = append(keys, client.ObjectKeyFromObject(&b))
	}
	return keys, nil
}
