package webhook

import (
	"context"
	"strings"

	"github.com/gardener-knative/gardener-knative/pkg/tenant"
)

// ParseTenantPath splits a request path of the form /<tenant>/<rest> into the tenant and
// /<rest>. ok is false when the first segment is not a tenant: not a namespace name (a DNS-1123
// label), not starting with prefix, or with nothing after it. It never looks further than the
// first segment: which webhook /<rest> is, the server decides.
func ParseTenantPath(path, prefix string) (t tenant.Name, rest string, ok bool) {
	if !strings.HasPrefix(path, "/") {
		return "", "", false
	}
	first, rest, found := strings.Cut(path[1:], "/")
	if !found || rest == "" || !tenant.Valid(first, prefix) {
		return "", "", false
	}
	return tenant.Name(first), "/" + rest, true
}

// ControlPlaneNamespace is the namespace in the seed that holds the request's control plane
// (e.g. a shoot's Machines): the tenant's namespace, or configured in single-tenant mode (nil
// when nothing is configured).
func ControlPlaneNamespace(ctx context.Context, configured *string) *string {
	if t := tenant.From(ctx); t != "" {
		ns := string(t)
		return &ns
	}
	return configured
}
