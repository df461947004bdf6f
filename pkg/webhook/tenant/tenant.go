// Package tenant names the control plane a webhook request is for. The empty Name is the
// single-tenant mode: the cluster of TARGET_KUBECONFIG, or the seed itself. Otherwise it is a
// shoot's control-plane namespace in the seed, taken from the request path
// (/<namespace>/webhooks/...).
//
// Everything a webhook reads or caches on behalf of a request is scoped by the request's tenant:
// a request for tenant A must never see tenant B's state. The package is apart from
// pkg/webhook so that the webhook runtime and the shared read cache (pkg/webhook/cache), which
// the runtime uses too, can both depend on it.
package tenant

import "context"

// Name is a tenant: a shoot's control-plane namespace, or "" in single-tenant mode.
type Name string

type key struct{}

// With returns ctx for a request of tenant t.
func With(ctx context.Context, t Name) context.Context {
	return context.WithValue(ctx, key{}, t)
}

// From returns the tenant of the request ctx belongs to ("" in single-tenant mode).
func From(ctx context.Context) Name {
	t, _ := ctx.Value(key{}).(Name)
	return t
}
