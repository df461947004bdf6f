// Package componentconfig reads Gardener's own component configuration files
// (controllermanager.config.gardener.cloud, resourcemanager.config.gardener.cloud), so that
// operators can bring the files they already have. Gardener's defaults are applied to them.
package componentconfig

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"time"

	cmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/controllermanager/v1alpha1"
	rmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"sigs.k8s.io/yaml"
)

var (
	configScheme = runtime.NewScheme()
	// Strict: a misspelt field in a configuration file is an error, not a silent default (the
	// resource manager's file tolerates unknown fields and reports them, see ResourceManager).
	codecs = serializer.NewCodecFactory(configScheme, serializer.EnableStrict)
)

func init() {
	utilruntime.Must(cmv1alpha1.AddToScheme(configScheme))
	utilruntime.Must(rmv1alpha1.AddToScheme(configScheme))
}

// ControllerManager reads the ControllerManagerConfiguration file at path, with Gardener's
// defaults applied. An empty path gives the defaults alone.
func ControllerManager(path string) (*cmv1alpha1.ControllerManagerConfiguration, error) {
	cfg := &cmv1alpha1.ControllerManagerConfiguration{}
	data, err := read(path)
	if err != nil {
		return nil, err
	}
	if data != nil {
		if _, _, err := codecs.UniversalDeserializer().Decode(data, nil, cfg); err != nil {
			return nil, fmt.Errorf("decoding component configuration %s: %w", path, err)
		}
	}
	configScheme.Default(cfg)
	return cfg, nil
}

// ResourceManagerFile is a ResourceManagerConfiguration file as the webhook server and the GRM
// functions read it (one loader for both): Gardener's type with Gardener's defaults, and the
// keys gardener-knative adds to it.
type ResourceManagerFile struct {
	*rmv1alpha1.ResourceManagerConfiguration
	Extensions ResourceManagerExtensions
	// Unknown lists the fields the file sets that neither Gardener's type nor Extensions know:
	// decoding is lenient (the file may be written for another Gardener version, and carries our
	// keys), so callers log them instead of failing.
	Unknown []string
	// Renamed lists the keys of the specification the file sets where Gardener v1.150 names them
	// otherwise: they are honoured, and callers log them.
	Renamed []string
}

// ResourceManagerExtensions are the keys gardener-knative reads beyond Gardener v1.150's
// ResourceManagerConfiguration, at the paths Gardener would give them (or gave them: the
// TokenInvalidator's keys are those of the last release that shipped it, v1.113), and the keys
// the specification names where Gardener v1.150's type names them otherwise (taken into
// Gardener's fields on reading: fold).
type ResourceManagerExtensions struct {
	Controllers struct {
		GarbageCollector struct {
			// MinimumObjectLifetime is how old a garbage-collectable object must be before it
			// is collected (Gardener hard-codes 10m).
			MinimumObjectLifetime *metav1.Duration `json:"minimumObjectLifetime,omitempty"`
		} `json:"garbageCollector"`
		TokenInvalidator tokenInvalidator `json:"tokenInvalidator"`
		// TokenValidator is the specification's name of TokenInvalidator's keys.
		TokenValidator tokenInvalidator `json:"tokenValidator"`
		// Node is the specification's name (Gardener's before v1.150 renamed the controller) of
		// the node critical components controller's keys: only its backoff is read.
		Node struct {
			Backoff *metav1.Duration `json:"backoff,omitempty"`
		} `json:"node"`
	} `json:"controllers"`
	Webhooks struct {
		TokenInvalidator enabled `json:"tokenInvalidator"`
		// TokenValidator is the specification's name of TokenInvalidator.
		TokenValidator enabled `json:"tokenValidator"`
	} `json:"webhooks"`
	// SourceClientConnection and TargetClientConnection carry the specification's single
	// namespace (Gardener v1.150 takes a list, namespaces).
	SourceClientConnection singleNamespace `json:"sourceClientConnection"`
	TargetClientConnection singleNamespace `json:"targetClientConnection"`
}

type enabled struct {
	Enabled bool `json:"enabled"`
}

type tokenInvalidator struct {
	Enabled bool `json:"enabled"`
	// ConcurrentSyncs is accepted for files written for Gardener; a function has no
	// workers to size.
	ConcurrentSyncs *int `json:"concurrentSyncs,omitempty"`
}

type singleNamespace struct {
	Namespace string `json:"namespace,omitempty"`
}

// extensionFields are the strict decoder's names of the Extensions' fields.
var extensionFields = map[string]bool{
	"controllers.garbageCollector.minimumObjectLifetime": true,
	"controllers.tokenInvalidator":                       true,
	"webhooks.tokenInvalidator":                          true,
	"controllers.tokenValidator":                         true,
	"webhooks.tokenValidator":                            true,
	"controllers.node":                                   true,
	"sourceClientConnection.namespace":                   true,
	"targetClientConnection.namespace":                   true,
}

// fold takes the specification's keys into the fields Gardener v1.150 reads them from, before
// Gardener's defaults: a file written to the specification works as one written for v1.150. Each
// key taken is reported in Renamed, with the name the file should use.
func (f *ResourceManagerFile) fold() {
	ext := &f.Extensions
	if ext.Controllers.TokenValidator.Enabled {
		ext.Controllers.TokenInvalidator.Enabled = true
		f.Renamed = append(f.Renamed, "controllers.tokenValidator is read as controllers.tokenInvalidator")
	}
	if ext.Webhooks.TokenValidator.Enabled {
		ext.Webhooks.TokenInvalidator.Enabled = true
		f.Renamed = append(f.Renamed, "webhooks.tokenValidator is read as webhooks.tokenInvalidator")
	}
	if backoff := ext.Controllers.Node.Backoff; backoff != nil {
		if f.Controllers.NodeCriticalComponents.Backoff == nil {
			f.Controllers.NodeCriticalComponents.Backoff = backoff
		}
		f.Renamed = append(f.Renamed, "controllers.node.backoff is deprecated: Gardener v1.150 reads controllers.nodeCriticalComponents.backoff")
	}
	if f.TargetClientConnection == nil && ext.TargetClientConnection.Namespace != "" {
		f.TargetClientConnection = &rmv1alpha1.ClientConnection{}
	}
	for _, c := range []struct {
		key        string
		namespace  string
		connection *rmv1alpha1.ClientConnection
	}{
		{"sourceClientConnection", ext.SourceClientConnection.Namespace, &f.SourceClientConnection},
		{"targetClientConnection", ext.TargetClientConnection.Namespace, f.TargetClientConnection},
	} {
		if c.namespace == "" {
			continue
		}
		if !slices.Contains(c.connection.Namespaces, c.namespace) {
			c.connection.Namespaces = append(c.connection.Namespaces, c.namespace)
		}
		f.Renamed = append(f.Renamed, c.key+".namespace is deprecated: Gardener v1.150 reads "+c.key+".namespaces")
	}
}

var unknownField = regexp.MustCompile(`unknown field "([^"]+)"`)

// ResourceManager reads the ResourceManagerConfiguration file at path, with Gardener's defaults
// applied. An empty path gives the defaults alone.
func ResourceManager(path string) (*ResourceManagerFile, error) {
	file := &ResourceManagerFile{ResourceManagerConfiguration: &rmv1alpha1.ResourceManagerConfiguration{}}
	data, err := read(path)
	if err != nil {
		return nil, err
	}
	if data != nil {
		_, _, err := codecs.UniversalDeserializer().Decode(data, nil, file.ResourceManagerConfiguration)
		if strict, ok := runtime.AsStrictDecodingError(err); ok {
			// The object is decoded in full; what is left are the fields its type lacks.
			for _, e := range strict.Errors() {
				if m := unknownField.FindStringSubmatch(e.Error()); m != nil && extensionFields[m[1]] {
					continue
				}
				file.Unknown = append(file.Unknown, e.Error())
			}
		} else if err != nil {
			return nil, fmt.Errorf("decoding component configuration %s: %w", path, err)
		}
		if err := yaml.Unmarshal(data, &file.Extensions); err != nil {
			return nil, fmt.Errorf("decoding component configuration %s: %w", path, err)
		}
		file.fold()
	}
	configScheme.Default(file.ResourceManagerConfiguration)
	return file, nil
}

func read(path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading component configuration: %w", err)
	}
	return data, nil
}

// Role is the resource manager a deployment stands in for: its role decides the defaults of a
// configuration it is given no file for.
type Role string

const (
	// NoRole takes the defaults of Gardener's API (a ResourceManagerConfiguration with nothing set).
	NoRole Role = ""
	// ShootRole serves shoots (per seed, or one target): gardenlet's shoot resource manager.
	ShootRole Role = "shoot"
	// SeedRole serves the seed itself: gardenlet's seed resource manager.
	SeedRole Role = "seed"
)

// RoleOf is the role of a process serving every shoot of a seed (multiTenant) or one target
// cluster: a shoot's resource manager; else it serves the seed itself.
func RoleOf(multiTenant, target bool) Role {
	if multiTenant || target {
		return ShootRole
	}
	return SeedRole
}

// ResourceManagerFor reads the file at path; without one, the defaults of role.
func ResourceManagerFor(role Role, path string) (*ResourceManagerFile, error) {
	switch {
	case path != "" || role == NoRole:
		return ResourceManager(path)
	case role == ShootRole:
		return ShootResourceManager(), nil
	default:
		return SeedResourceManager(), nil
	}
}

// SeedResourceManager is the ResourceManagerConfiguration gardenlet v1.150 renders for the
// seed's own gardener-resource-manager in its garden namespace (the seed reconciler's
// components, the shared runtime defaults, the component's ensureConfigMap), Gardener's defaults
// applied, without gardenlet's additionalNamespaceSelectors (its configuration's): the defaults
// of a deployment that serves the seed itself.
func SeedResourceManager() *ResourceManagerFile {
	cfg := &rmv1alpha1.ResourceManagerConfiguration{}
	c := &cfg.Controllers
	c.ResourceClass = new(v1beta1constants.SeedResourceManagerClass)
	c.GarbageCollector = rmv1alpha1.GarbageCollectorControllerConfig{Enabled: true, SyncPeriod: &metav1.Duration{Duration: 12 * time.Hour}}
	c.Health = rmv1alpha1.HealthControllerConfig{SyncPeriod: &metav1.Duration{Duration: time.Minute}}
	c.ManagedResource = rmv1alpha1.ManagedResourceControllerConfig{ConcurrentSyncs: new(20), SyncPeriod: &metav1.Duration{Duration: time.Hour}}
	role := func(r string) metav1.LabelSelector {
		return metav1.LabelSelector{MatchLabels: map[string]string{v1beta1constants.GardenRole: r}}
	}
	c.NetworkPolicy = rmv1alpha1.NetworkPolicyControllerConfig{
		Enabled:         true,
		ConcurrentSyncs: new(20),
		NamespaceSelectors: []metav1.LabelSelector{
			role(v1beta1constants.GardenRoleShoot), role(v1beta1constants.GardenRoleExtension),
			role(v1beta1constants.GardenRoleIstioSystem), role(v1beta1constants.GardenRoleIstioIngress),
			{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: v1beta1constants.LabelExposureClassHandlerName, Operator: metav1.LabelSelectorOpExists}}},
			{MatchLabels: map[string]string{corev1.LabelMetadataName: v1beta1constants.GardenNamespace}},
		},
		// The garden namespace's nginx ingress controller (gardener's nginxingress component).
		IngressControllerSelector: &rmv1alpha1.IngressControllerSelector{
			Namespace:   v1beta1constants.GardenNamespace,
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{v1beta1constants.LabelApp: "nginx-ingress", "component": "controller"}},
		},
	}
	w := &cfg.Webhooks
	w.HighAvailabilityConfig.Enabled = true
	w.ProjectedTokenMount.Enabled = true
	w.PodKubeAPIServerLoadBalancing.Enabled = true
	w.VPAInPlaceUpdates.Enabled = true
	w.CRDDeletionProtection.Enabled = true
	w.ExtensionValidation.Enabled = true
	configScheme.Default(cfg)
	return withTokenInvalidator(&ResourceManagerFile{ResourceManagerConfiguration: cfg})
}

// withTokenInvalidator enables the token invalidator's controller and webhook, as gardenlet did
// for every resource manager, the seed's and each shoot's, in the last release that had them
// (v1.113).
func withTokenInvalidator(f *ResourceManagerFile) *ResourceManagerFile {
	f.Extensions.Controllers.TokenInvalidator.Enabled = true
	f.Extensions.Controllers.TokenInvalidator.ConcurrentSyncs = new(5)
	f.Extensions.Webhooks.TokenInvalidator.Enabled = true
	return f
}

// ShootClusterID is controllers.clusterID of ShootResourceManager: the identity of the seed
// each shoot runs on (grm.SeedIdentity).
const ShootClusterID = "<seed>"

// ShootResourceManager is the ResourceManagerConfiguration gardenlet v1.150 renders for a shoot's
// gardener-resource-manager (the botanist's DefaultResourceManager, the component's
// ensureConfigMap), Gardener's defaults applied: the defaults of every deployment that serves
// shoots, per seed or for one target, when it is given no file. What gardenlet sets per shoot is
// each tenant's (tenant.Settings): the cluster id (ShootClusterID), the machine namespace, the
// API server host, the scheduler, the node agents' maximum delay and selectors' use, the
// system components' tolerations, and which webhooks and controllers apply at all.
func ShootResourceManager() *ResourceManagerFile {
	cfg := &rmv1alpha1.ResourceManagerConfiguration{}
	c := &cfg.Controllers
	c.ClusterID = new(ShootClusterID)
	c.GarbageCollector = rmv1alpha1.GarbageCollectorControllerConfig{Enabled: true, SyncPeriod: &metav1.Duration{Duration: 12 * time.Hour}}
	c.Health = rmv1alpha1.HealthControllerConfig{ConcurrentSyncs: new(10), SyncPeriod: &metav1.Duration{Duration: time.Minute}}
	c.ManagedResource = rmv1alpha1.ManagedResourceControllerConfig{ConcurrentSyncs: new(20), SyncPeriod: &metav1.Duration{Duration: time.Hour}, AlwaysUpdate: new(true)}
	c.CSRApprover = rmv1alpha1.CSRApproverControllerConfig{Enabled: true, ConcurrentSyncs: new(5)}
	c.TokenRequestor = rmv1alpha1.TokenRequestorControllerConfig{Enabled: true, ConcurrentSyncs: new(5)}
	c.NodeCriticalComponents.Enabled = true
	c.NodeAgentReconciliationDelay.Enabled = true
	w := &cfg.Webhooks
	w.HighAvailabilityConfig.Enabled = true
	w.ProjectedTokenMount.Enabled = true
	w.NodeAgentAuthorizer.Enabled = true
	w.VPAInPlaceUpdates.Enabled = true
	w.KubernetesServiceHost.Enabled = true
	w.PodSchedulerName = rmv1alpha1.PodSchedulerNameWebhookConfig{Enabled: true, SchedulerName: new("bin-packing-scheduler")}
	w.PodTopologySpreadConstraints.Enabled = true
	systemComponents := map[string]string{v1beta1constants.LabelWorkerPoolSystemComponents: "true"}
	w.SystemComponentsConfig = rmv1alpha1.SystemComponentsConfigWebhookConfig{Enabled: true, NodeSelector: systemComponents, PodNodeSelector: systemComponents}
	cfg.TargetClientConnection = &rmv1alpha1.ClientConnection{Namespaces: []string{metav1.NamespaceSystem, v1beta1constants.KubernetesDashboardNamespace, corev1.NamespaceNodeLease}}
	configScheme.Default(cfg)
	return withTokenInvalidator(&ResourceManagerFile{ResourceManagerConfiguration: cfg})
}
