package clients

import (
	"context"
	"fmt"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/tenant"
)

// Tenancy is how a process serving every shoot of a seed finds and reaches its tenants, read
// from the environment by the webhook server, the functions and the multi-tenant event source
// alike (docs/configuration.md).
type Tenancy struct {
	// MultiTenant serves every shoot control-plane namespace of the seed as a tenant, each with
	// the shoot's own cluster as target.
	MultiTenant bool `envconfig:"MULTI_TENANT"`
	// TenantPrefix is what tenant namespaces start with.
	TenantPrefix string `envconfig:"TENANT_PREFIX" default:"shoot--"`
	// TenantAccessSecret is the Secret in a tenant's namespace whose token reaches its
	// kube-apiserver.
	TenantAccessSecret string `envconfig:"TENANT_ACCESS_SECRET" default:"shoot-access-gardener-resource-manager"`
	// TenantCacheSize and TenantCacheTTL bound the tenants' clients kept.
	TenantCacheSize int           `envconfig:"TENANT_CACHE_SIZE" default:"1000"`
	TenantCacheTTL  time.Duration `envconfig:"TENANT_CACHE_TTL" default:"10m"`
}

// Discover lists the seed's tenants: the names of its extensions.gardener.cloud Clusters (one
// per shoot control-plane namespace, named after it) that are enrolled (tenant.EnrolledLabel)
// and valid tenants for prefix, sorted.
// One metadata-only LIST, paged by pageSize; whether a tenant is reachable, Clients tells.
func Discover(ctx context.Context, seed client.Reader, prefix string, pageSize int64) ([]tenant.Name, error) {
	var tenants []tenant.Name
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(clusterGVK.GroupVersion().WithKind(clusterGVK.Kind + "List"))
	// Only the enrolled ones (tenant.EnrolledLabel): the others are another resource manager's.
	opts := &client.ListOptions{Limit: pageSize, LabelSelector: labels.SelectorFromSet(labels.Set{tenant.EnrolledLabel: "true"})}
	for {
		if err := seed.List(ctx, list, opts); err != nil {
			return nil, fmt.Errorf("discovering tenants (listing Clusters): %w", err)
		}
		for _, item := range list.Items {
			if tenant.Valid(item.Name, prefix) {
				tenants = append(tenants, tenant.Name(item.Name))
			}
		}
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	sort.Slice(tenants, func(i, j int) bool { return tenants[i] < tenants[j] })
	return tenants, nil
}

// ClusterResource is the resource Discover lists (for RBAC).
const ClusterResource = "clusters"

// ClusterGroup is the API group of the Clusters Discover lists and Clients reads.
const ClusterGroup = "extensions.gardener.cloud"
