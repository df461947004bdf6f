package webhook

import "context"

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
