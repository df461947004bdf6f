// Package controllerinstallation is what gardenlet's ControllerInstallation controllers do for
// one seed, as a function on two clusters: it reads ControllerInstallations, their registrations
// and deployments in the garden (Source) and installs each referenced chart as a Helm release on
// the seed (Target), reporting the Valid, Installed, Healthy and Progressing conditions back to
// the garden; its required reconciler (subpackage required) reports whether extension objects on
// the seed still need each installation (the Required condition).
package controllerinstallation

import (
	"context"
	"fmt"
	"time"

	gardencore "github.com/gardener/gardener/pkg/apis/core"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/controllerinstallation/helmrelease"
	"github.com/gardener-knative/gardener-knative/pkg/controller/controllerinstallation/required"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// Config is the function's configuration: which seed it is gardenlet for, and what gardenlet
// injects into every chart.
type Config struct {
	// SeedName is the seed whose ControllerInstallations the function installs on its Target.
	SeedName string `envconfig:"SEED_NAME"`
	// GardenerVersion is injected as gardener.version.
	GardenerVersion string `envconfig:"GARDENER_VERSION" default:"v1.150.0"`
	// GardenClusterIdentity is injected as gardener.garden.clusterIdentity.
	GardenClusterIdentity string `envconfig:"GARDEN_CLUSTER_IDENTITY" default:"garden"`
	// FeatureGates are injected as gardener.gardenlet.featureGates ("Gate1:true,Gate2:false", envconfig's map syntax).
	FeatureGates map[string]bool `envconfig:"GARDENLET_FEATURE_GATES"`
	// ChartCacheBytes bounds the pulled chart archives kept in memory, by digest.
	ChartCacheBytes int `envconfig:"CHART_CACHE_BYTES" default:"67108864"`
	// HelmTimeout bounds one Helm install, upgrade or uninstall.
	HelmTimeout time.Duration `envconfig:"HELM_TIMEOUT" default:"2m"`
	// HelmMaxHistory bounds the release records Helm keeps per release on the seed.
	HelmMaxHistory int `envconfig:"HELM_MAX_HISTORY" default:"3"`
	// HelmPendingStaleAfter is how long a release may stay pending (an install or upgrade in
	// progress) before it counts as interrupted and is taken over.
	HelmPendingStaleAfter time.Duration `envconfig:"HELM_PENDING_STALE_AFTER" default:"5m"`
	// PodName is what the process runs as, in the holder of its installation locks (the host
	// name when empty, which is the pod's name in Kubernetes): a lock an earlier process of the
	// same pod left behind is taken over at once.
	PodName string `envconfig:"POD_NAME"`
}

// Identity is what the configuration says gardenlet injects.
func (c *Config) Identity() Identity {
	return Identity{GardenerVersion: c.GardenerVersion, GardenClusterIdentity: c.GardenClusterIdentity, FeatureGates: c.FeatureGates}
}

// FinalizerName is gardenlet's finalizer on ControllerInstallations.
const FinalizerName = "core.gardener.cloud/controllerinstallation"

var core = gardencorev1beta1.SchemeGroupVersion.Group

// Function is gardenlet's ControllerInstallation controller (with its care controller's
// conditions) for one seed: ControllerInstallation events, ControllerDeployment events mapped to
// the installations of their registrations, and a resync sweep every minute; and its required
// controller, as a sweep every minute.
var Function = &function.Function{
	Name:   "controllerinstallation",
	Parts:  []function.Part{function.Seed},
	Config: &Config{},
	// gardenlet's part: it reads the garden with the seed's garden access and installs into the
	// seed it runs in, its Target. The seed's name comes with the garden access, in the Secret
	// garden-access: the identity it has there.
	WorksOnGarden: true,
	GardenInputs:  map[string]string{"SEED_NAME": "seedName"},
	// gardenlet sees its seed's installations, not every seed's of the landscape: its cache
	// selects them by gardener-apiserver's field spec.seedRef.name, which is also the only way
	// Gardener's SeedAuthorizer lets a seed list and watch them.
	Scopes: []function.Scope{{Kind: kinds.ControllerInstallation, Field: gardencore.SeedRefName, Setting: "SEED_NAME"}},
	// On the garden it reads installations, registrations, deployments, seeds and the pull
	// secrets deployments name, and writes only installations (finalizer, conditions).
	RBAC: []rbacv1.PolicyRule{
		{APIGroups: []string{core}, Resources: []string{"controllerinstallations"}, Verbs: []string{"get", "list", "patch"}},
		{APIGroups: []string{core}, Resources: []string{"controllerinstallations/status"}, Verbs: []string{"patch"}},
		{APIGroups: []string{core}, Resources: []string{"controllerregistrations", "controllerdeployments"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{core}, Resources: []string{"seeds"}, Verbs: []string{"get"}},
	},
	// Pull secrets are read from the garden namespace only.
	NamespacedRBAC: map[string][]rbacv1.PolicyRule{
		v1beta1constants.GardenNamespace: {{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}},
	},
	// On the seed Helm creates whatever an extension's chart holds (CRDs, RBAC it must be able to
	// grant, workloads), so only every verb on every resource will do, as for gardenlet there.
	TargetRBAC: []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}},
	Reconcilers: []function.Reconciler{
		{Name: "main", For: kinds.ControllerInstallation, New: newReconciler},
		{Name: "required", For: kinds.ControllerInstallation, New: newRequiredReconciler},
	},
	Watches: []function.Watch{
		{Kind: kinds.ControllerInstallation, Reconciler: "main", Predicate: InstallationPredicate},
		{Kind: kinds.ControllerDeployment, Reconciler: "main", Predicate: DeploymentPredicate, Map: MapDeploymentToInstallations},
	},
	Sweeps: []function.Sweep{{
		Name: "resync", Schedule: "* * * * *", Reconciler: "main",
		Primary: function.List{Kind: kinds.ControllerInstallation},
		Related: []function.List{
			{Kind: kinds.ControllerRegistration},
			{Kind: kinds.ControllerDeployment},
			// The seed's side, so that a resync with nothing changed costs no request per
			// installation: the release namespaces, and Helm's release records, metadata only
			// (their labels say revision, status and what the release was applied with).
			{Kind: kinds.Namespace, Cluster: function.Target, LabelSelector: v1beta1constants.GardenRole + "=" + v1beta1constants.GardenRoleExtension},
			{Kind: kinds.Secret, Cluster: function.Target, MetadataOnly: true, LabelSelector: helmrelease.LabelOwner + "=" + helmrelease.OwnerHelm},
		},
	}, {
		// gardenlet's required controller watches the seed's extension objects; the seed causes
		// no events here, so its decision is swept: the registrations in the garden and one LIST
		// per extension kind on the seed, whatever the number of installations.
		Name: "required", Schedule: "* * * * *", Reconciler: "required",
		Primary: function.List{Kind: kinds.ControllerInstallation},
		Related: append([]function.List{{Kind: kinds.ControllerRegistration}}, required.SeedLists()...),
	}},
}

func newRequiredReconciler(deps function.Deps) (function.Handler, error) {
	cfg := deps.Config.(*Config)
	if cfg.SeedName == "" {
		return nil, fmt.Errorf("SEED_NAME is not set: the function decides the ControllerInstallations of one seed")
	}
	return required.New(deps, cfg.SeedName), nil
}

func newReconciler(deps function.Deps) (function.Handler, error) {
	cfg := deps.Config.(*Config)
	if cfg.SeedName == "" {
		return nil, fmt.Errorf("SEED_NAME is not set: the function installs the ControllerInstallations of one seed")
	}
	if deps.Target.Config == nil {
		return nil, fmt.Errorf("no REST configuration of the seed (KUBECONFIG with GARDEN_KUBECONFIG, or TARGET_KUBECONFIG)")
	}
	return NewReconciler(deps, cfg)
}

// InstallationPredicate lets through what gardenlet's predicates do, as far as the event alone
// tells: installations on a seed (each function instance keeps only its own, by name, when it
// reads them), whose ControllerDeployment is named. A delete event needs nothing: the finalizer
// makes the deletion an update first.
func InstallationPredicate(ev function.Event) bool {
	if ev.Deleted {
		return false
	}
	if ev.Object == nil {
		return true
	}
	seed, _, _ := unstructured.NestedString(ev.Object.Object, "spec", "seedRef", "name")
	deployment, _, _ := unstructured.NestedString(ev.Object.Object, "spec", "deploymentRef", "name")
	return seed != "" && deployment != ""
}

// DeploymentPredicate lets through changes of Helm ControllerDeployments; their deletion needs
// nothing (the registrations' installations go first).
func DeploymentPredicate(ev function.Event) bool {
	if ev.Deleted {
		return false
	}
	if ev.Object == nil {
		return true
	}
	t, _, _ := unstructured.NestedString(ev.Object.Object, "type")
	return t == DeploymentTypeHelm
}

// MapDeploymentToInstallations maps a ControllerDeployment to the installations of the
// registrations that reference it: one LIST of registrations, one metadata-only LIST of
// installations per referencing registration (by gardener-apiserver's field selector).
// gardener-controller-manager also bumps the installations' deploymentRef.resourceVersion on a
// deployment change, which sends their own events; this watch does not depend on it.
func MapDeploymentToInstallations(ctx context.Context, reader client.Reader, ev function.Event) ([]function.Key, error) {
	registrations := &gardencorev1beta1.ControllerRegistrationList{}
	if err := reader.List(ctx, registrations); err != nil {
		return nil, err
	}
	var keys []function.Key
	for _, reg := range registrations.Items {
		if !referencesDeployment(&reg, ev.Key.Name) {
			continue
		}
		installations := &metav1.PartialObjectMetadataList{}
		installations.SetGroupVersionKind(gardencorev1beta1.SchemeGroupVersion.WithKind("ControllerInstallationList"))
		if err := reader.List(ctx, installations, client.MatchingFields{"spec.registrationRef.name": reg.Name}); err != nil {
			return nil, err
		}
		for _, ci := range installations.Items {
			keys = append(keys, function.Key{Name: ci.Name})
		}
	}
	return keys, nil
}

func referencesDeployment(reg *gardencorev1beta1.ControllerRegistration, deployment string) bool {
	if reg.Spec.Deployment == nil {
		return false
	}
	for _, ref := range reg.Spec.Deployment.DeploymentRefs {
		if ref.Name == deployment {
			return true
		}
	}
	return false
}
