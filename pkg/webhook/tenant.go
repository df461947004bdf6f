package webhook

import (
	"context"

	"github.com/gardener-knative/gardener-knative/pkg/tenant"
)

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
