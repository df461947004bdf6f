package webhook

import (
	"context"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Tenant names the control plane a request is for. The empty Tenant is the single-tenant mode:
// the cluster of TARGET_KUBECONFIG, or the seed itself. Otherwise it is a shoot's control-plane
// namespace in the seed, taken from the request path (/<namespace>/webhooks/...).
//
// Everything a webhook reads or caches on behalf of a request is scoped by the request's
// Tenant: a request for tenant A must never see tenant B's state.
type Tenant string

type tenantKey struct{}

// WithTenant returns ctx for a request of tenant t.
func WithTenant(ctx context.Context, t Tenant) context.Context {
	return context.WithValue(ctx, tenantKey{}, t)
}

// TenantFrom returns the tenant of the request ctx belongs to ("" in single-tenant mode).
func TenantFrom(ctx context.Context) Tenant {
	t, _ := ctx.Value(tenantKey{}).(Tenant)
	return t
}

// DefaultTenantPrefix is how Gardener names shoot control-plane namespaces
// (shoot--<project>--<shoot>): only such namespaces are tenants by default, so a path can never
// make the server act for kube-system, garden or its own namespace.
const DefaultTenantPrefix = "shoot--"

// ParseTenantPath splits a request path of the form /<tenant>/<rest> into the tenant and
// /<rest>. ok is false when the first segment is not a tenant: not a namespace name (a DNS-1123
// label), not starting with prefix, or with nothing after it. It never looks further than the
// first segment: which webhook /<rest> is, the server decides.
func ParseTenantPath(path, prefix string) (tenant Tenant, rest string, ok bool) {
	if !strings.HasPrefix(path, "/") {
		return "", "", false
	}
	first, rest, found := strings.Cut(path[1:], "/")
	if !found || rest == "" || !strings.HasPrefix(first, prefix) || len(validation.IsDNS1123Label(first)) > 0 {
		return "", "", false
	}
	return Tenant(first), "/" + rest, true
}

// ControlPlaneNamespace is the namespace in the seed that holds the request's control plane
// (e.g. a shoot's Machines): the tenant's namespace, or configured in single-tenant mode (nil
// when nothing is configured).
func ControlPlaneNamespace(ctx context.Context, configured *string) *string {
	if t := TenantFrom(ctx); t != "" {
		ns := string(t)
		return &ns
	}
	return configured
}
