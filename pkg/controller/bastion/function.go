package bastion

import (
	"context"
	"fmt"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/gardener/gardener/pkg/apis/operations"
	operationsv1alpha1 "github.com/gardener/gardener/pkg/apis/operations/v1alpha1"
	"github.com/kelseyhightower/envconfig"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/sources"
)

// Config is the bastion function's own configuration.
type Config struct {
	// MaxLifetime overrides controllers.bastion.maxLifetime of the component configuration.
	MaxLifetime time.Duration `envconfig:"BASTION_MAX_LIFETIME"`
	// ControllerManagerConfig is a ControllerManagerConfiguration file to read defaults from.
	ControllerManagerConfig string `envconfig:"CONTROLLER_MANAGER_CONFIG"`
}

// LoadConfig reads the configuration from the environment: BASTION_MAX_LIFETIME wins over the
// component configuration file, which wins over Gardener's default of 24h.
func LoadConfig() (Config, error) {
	var cfg Config
	if err := envconfig.Process("", &cfg); err != nil {
		return Config{}, err
	}
	if cfg.MaxLifetime == 0 {
		cm, err := componentconfig.ControllerManager(cfg.ControllerManagerConfig)
		if err != nil {
			return Config{}, err
		}
		cfg.MaxLifetime = cm.Controllers.Bastion.MaxLifetime.Duration
	}
	if cfg.MaxLifetime <= 0 {
		return Config{}, fmt.Errorf("bastion max lifetime must be positive, got %s", cfg.MaxLifetime)
	}
	return cfg, nil
}

// Function is the bastion function: fed by Bastion and Shoot events and a resync sweep.
var Function = function.Function{
	Feed: sources.Bastion,
	Watches: map[schema.GroupKind]function.Mapper{
		operationsv1alpha1.SchemeGroupVersion.WithKind("Bastion").GroupKind(): function.MapToSelf,
		gardencorev1beta1.SchemeGroupVersion.WithKind("Shoot").GroupKind():    MapShootToBastions,
	},
	Sweeps: map[string]function.Sweep{
		// Bastions are few and Shoots many; both are listed in full because the decision needs
		// spec.seedName and status.expirationTimestamp, which metadata does not carry.
		"resync": {Primary: &operationsv1alpha1.BastionList{}, Related: []client.ObjectList{&gardencorev1beta1.ShootList{}}},
	},
	New: func(deps function.Deps) (function.Reconciler, error) {
		cfg, err := LoadConfig()
		if err != nil {
			return nil, err
		}
		deps.Log.Info("configured", "maxLifetime", cfg.MaxLifetime)
		return &Reconciler{Client: deps.Client, Clock: deps.Clock, MaxLifetime: cfg.MaxLifetime, Log: deps.Log}, nil
	},
}

// MapShootToBastions maps an event about a Shoot to the Bastions that reference it, with one
// metadata-only LIST using the field selector gardener-apiserver offers (spec.shootRef.name).
func MapShootToBastions(ctx context.Context, reader client.Reader, shoot function.Object) ([]function.Key, error) {
	bastions := &metav1.PartialObjectMetadataList{}
	bastions.SetGroupVersionKind(operationsv1alpha1.SchemeGroupVersion.WithKind("BastionList"))
	if err := reader.List(ctx, bastions, client.InNamespace(shoot.Key.Namespace), client.MatchingFields{operations.BastionShootName: shoot.Key.Name}); err != nil {
		return nil, err
	}
	keys := make([]function.Key, 0, len(bastions.Items))
	for _, b := range bastions.Items {
		keys = append(keys, client.ObjectKeyFromObject(&b))
	}
	return keys, nil
}
