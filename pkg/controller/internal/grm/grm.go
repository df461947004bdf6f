// Package grm holds what GRM's functions (managedresource, health, garbagecollector) share:
// their common configuration from Gardener's ResourceManagerConfiguration, the resource class
// that decides which ManagedResources a deployment is responsible for, the origin annotation that
// ties an object in the target cluster to its ManagedResource, and the cluster identity it names.
package grm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	rmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
)

// Config is the part of the ResourceManagerConfiguration every GRM function honours; the
// environment overrides the file.
type Config struct {
	// ClusterID is controllers.clusterID: a value, "<cluster>" (the source's cluster-identity
	// ConfigMap, which must exist), "<default>" (that ConfigMap if it exists), SeedIdentity, or
	// empty (none).
	ClusterID string `envconfig:"CLUSTER_ID"`
	// ResourceClass is controllers.resourceClass: which ManagedResources this deployment serves.
	ResourceClass string `envconfig:"RESOURCE_CLASS"`
	// Namespaces is sourceClientConnection.namespaces: the namespaces of the source cluster the
	// deployment serves (all when empty).
	Namespaces []string `envconfig:"SOURCE_NAMESPACES"`
}

// FromResourceManager takes the shared settings from the file (Gardener's defaults applied).
func (c *Config) FromResourceManager(rm *componentconfig.ResourceManagerFile) {
	c.ClusterID = ptr.Deref(rm.Controllers.ClusterID, "")
	c.ResourceClass = ptr.Deref(rm.Controllers.ResourceClass, rmv1alpha1.DefaultResourceClass)
	c.Namespaces = rm.SourceClientConnection.Namespaces
}

// Serves says whether the deployment serves the source namespace.
func (c *Config) Serves(namespace string) bool {
	return len(c.Namespaces) == 0 || slices.Contains(c.Namespaces, namespace)
}

// Class returns the deployment's class filter.
func (c *Config) Class() Class { return NewClass(c.ResourceClass) }

// FinalizerName is the finalizer of the default class; other classes append "-<class>".
const FinalizerName = "resources.gardener.cloud/gardener-resource-manager"

// Class is a resource class: the ManagedResources one GRM instance is responsible for, and the
// finalizer it marks them with.
type Class struct {
	name, finalizer string
}

// NewClass returns the class name ("" is the default class).
func NewClass(name string) Class {
	if name == "" {
		name = rmv1alpha1.DefaultResourceClass
	}
	finalizer := FinalizerName + "-" + name
	if name == rmv1alpha1.DefaultResourceClass || name == rmv1alpha1.AllResourceClass {
		finalizer = FinalizerName
	}
	return Class{name: name, finalizer: finalizer}
}

// Finalizer is the finalizer this class puts on the ManagedResources it manages.
func (c Class) Finalizer() string { return c.finalizer }

// Responsible says whether mr is of this class: the class "*" takes all, the default class takes
// ManagedResources without one.
func (c Class) Responsible(mr *resourcesv1alpha1.ManagedResource) bool {
	if c.name == rmv1alpha1.AllResourceClass {
		return true
	}
	class := ptr.Deref(mr.Spec.Class, "")
	return class == c.name || (class == "" && c.name == rmv1alpha1.DefaultResourceClass)
}

// TransferringResponsibility says that mr's class changed away from this one while this class
// still has objects applied for it (its finalizer): this instance cleans them up.
func (c Class) TransferringResponsibility(mr *resourcesv1alpha1.ManagedResource) bool {
	return slices.Contains(mr.Finalizers, c.finalizer) && !c.Responsible(mr)
}

// WaitForCleanup says that mr changed to this class while another class's instance has not yet
// cleaned up what it applied: this instance waits for that finalizer to go.
func (c Class) WaitForCleanup(mr *resourcesv1alpha1.ManagedResource) bool {
	for _, f := range mr.Finalizers {
		if strings.HasPrefix(f, FinalizerName) {
			return c.Responsible(mr) && f != c.finalizer
		}
	}
	return false
}

// Concerns says whether an event about mr can concern this class: it is of the class, or the
// class still holds its finalizer.
func (c Class) Concerns(mr *resourcesv1alpha1.ManagedResource) bool {
	return slices.Contains(mr.Finalizers, c.finalizer) || c.Responsible(mr)
}

// Origin is the origin annotation's value for an object of the ManagedResource key, with the
// cluster id when there is one: "<clusterID>:<namespace>/<name>".
func Origin(clusterID string, key types.NamespacedName) string {
	if clusterID != "" {
		return clusterID + ":" + key.String()
	}
	return key.String()
}

// SplitOrigin returns the cluster id and ManagedResource key an origin names.
func SplitOrigin(origin string) (string, types.NamespacedName, error) {
	clusterID, key := "", origin
	switch parts := strings.Split(origin, ":"); len(parts) {
	case 1:
	case 2:
		clusterID, key = parts[0], parts[1]
	default:
		return "", types.NamespacedName{}, fmt.Errorf("unexpected origin format: %q", origin)
	}
	namespace, name, ok := strings.Cut(key, "/")
	if !ok || strings.Contains(name, "/") {
		return "", types.NamespacedName{}, fmt.Errorf("unexpected origin format: %q", origin)
	}
	return clusterID, types.NamespacedName{Namespace: namespace, Name: name}, nil
}

// ManagedLabel is the label of every object some GRM manages, whatever its managed-by value:
// the target's watches and lists select on it, on the server.
const ManagedLabel = resourcesv1alpha1.ManagedBy

// MapToOrigin maps an event of a target object to the ManagedResource its origin annotation
// names. The cluster id is not checked here (the reconcile reads what the ManagedResource wants),
// and per seed the runtime refuses a ManagedResource outside the event's tenant.
func MapToOrigin(_ context.Context, _ client.Reader, ev function.Event) ([]function.Key, error) {
	if ev.Object == nil {
		return nil, nil
	}
	origin, ok := ev.Object.GetAnnotations()[resourcesv1alpha1.OriginAnnotation]
	if !ok {
		return nil, nil
	}
	_, key, err := SplitOrigin(origin)
	if err != nil {
		return nil, nil // an origin that cannot be read names no ManagedResource
	}
	return []function.Key{key}, nil
}

// SeedIdentity, as controllers.clusterID (ours, beside Gardener's "<cluster>" and "<default>"),
// is the identity of the seed: per seed, that of the tenant's seed from its Cluster
// (spec.seed.status.clusterIdentity), which gardenlet configures every shoot's resource manager
// with; elsewhere the source's own identity as with "<default>" (the source is then the seed).
// It is the per-seed deployment's default.
const SeedIdentity = componentconfig.ShootClusterID

// ClusterIdentity resolves a configured cluster id once per process (the source cluster's
// identity does not change while it runs): "<cluster>" and "<default>" read the source's
// kube-system/cluster-identity ConfigMap, as Gardener's identity determiner does at start-up.
type ClusterIdentity struct {
	configured string
	source     client.Reader
	mu         sync.Mutex
	resolved   *string
}

// NewClusterIdentity resolves configured with source on first use.
func NewClusterIdentity(configured string, source client.Reader) *ClusterIdentity {
	return &ClusterIdentity{configured: configured, source: source}
}

// Get returns the cluster id for a request's context. A failed read is retried on the next call.
func (c *ClusterIdentity) Get(ctx context.Context) (string, error) {
	if c.configured == SeedIdentity {
		if settings, ok := tenant.SettingsFrom(ctx); ok {
			return settings.ClusterID, nil
		}
	} else if c.configured != "<cluster>" && c.configured != "<default>" {
		return c.configured, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.resolved != nil {
		return *c.resolved, nil
	}
	force := c.configured == "<cluster>" // "<default>" and SeedIdentity take a missing ConfigMap as none
	cm := &corev1.ConfigMap{}
	id := ""
	err := c.source.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: v1beta1constants.ClusterIdentity}, cm)
	switch {
	case err == nil:
		var ok bool
		if id, ok = cm.Data[v1beta1constants.ClusterIdentity]; !ok && force {
			return "", errors.New("cannot determine cluster identity from configmap: no cluster-identity entry")
		}
	case force || !apierrors.IsNotFound(err):
		return "", fmt.Errorf("cannot determine cluster identity from configmap: %w", err)
	}
	c.resolved = &id
	return id, nil
}
