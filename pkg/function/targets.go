package function

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/clients"
)

// Mode is how a function that declares a Target cluster reaches it: GRM's three deployments,
// served by one set of images.
type Mode string

const (
	// SeedMode: the source is the target (GRM's instance in the seed's garden namespace, or a
	// seed that is its own garden). There is one cluster, so every event says cluster=source and
	// feeds the watches declared on either cluster.
	SeedMode Mode = "seed"
	// SingleTarget: TARGET_KUBECONFIG is the target (GRM's classic per-shoot deployment,
	// gardenlet's seed for the garden's functions).
	SingleTarget Mode = "single-target"
	// PerSeed: one deployment in the seed serves every shoot control plane on it (MULTI_TENANT):
	// each tenant's target is its shoot, reached through its access Secrets in the seed, and a
	// request for tenant A can never touch tenant B.
	PerSeed Mode = "per-seed"
)

// targets is the Target side of a server.
type targets struct {
	mode Mode
	// client reaches the target of the context's tenant: TARGET_KUBECONFIG's, the Source (seed
	// mode), or a routing client over the tenants that refuses calls without one (per seed).
	client  client.Client
	tenants *clients.Clients
	prefix  string
}

func newTargets(env Env) *targets {
	switch {
	case env.Tenants != nil:
		prefix := env.TenantPrefix
		if prefix == "" {
			prefix = tenant.DefaultPrefix
		}
		return &targets{mode: PerSeed, client: clients.NewTenantsOnly(env.Tenants, env.Source), tenants: env.Tenants, prefix: prefix}
	case env.Target != nil:
		return &targets{mode: SingleTarget, client: env.Target}
	default:
		return &targets{mode: SeedMode, client: env.Source}
	}
}

// mapper returns the REST mapper of the cluster ctx's tenant is on: the tenant's own (which
// knows its CRDs) per seed, else the target client's.
func (t *targets) mapper(ctx context.Context) (meta.RESTMapper, error) {
	if r, ok := t.client.(*clients.Routing); ok {
		c, err := r.ClientFor(ctx)
		if err != nil {
			return nil, err
		}
		return c.RESTMapper(), nil
	}
	return t.client.RESTMapper(), nil
}

// restConfig returns the REST configuration of the context's target: the tenant's per seed,
// else the static one (nil when none was given).
func (t *targets) restConfig(static *rest.Config) func(context.Context) (*rest.Config, error) {
	return func(ctx context.Context) (*rest.Config, error) {
		if t.mode != PerSeed {
			if static == nil {
				return nil, fmt.Errorf("the target's REST configuration is not known here")
			}
			return rest.CopyConfig(static), nil
		}
		tn := tenant.From(ctx)
		if tn == "" {
			return nil, &clients.UnknownTenantError{Reason: "the request names no tenant, and this process serves only tenants"}
		}
		return t.tenants.Config(ctx, tn)
	}
}

// errNotServed says that a key is another deployment's: per seed, a Source object outside every
// tenant's namespace (e.g. of GRM's instance in the seed's garden namespace), or of a tenant
// that is not enrolled (gardenlet's own resource manager serves it). It is not a failure: the
// key is skipped, as a predicate would have.
var errNotServed = errors.New("another deployment serves it")

// tenantOf says which tenant a key of reconciler r is reconciled for. Outside per-seed mode
// there are none. Per seed, a namespaced Source object belongs to the tenant of its namespace, a
// Source object of a kind that NamesTenant to the tenant of its name, and a Target object to the
// tenant whose cluster the event or sweep came from (from); a key of another tenant than from's
// is refused, whatever a mapper returned, so that tenant A's objects can never make the function
// act on tenant B.
func (t *targets) tenantOf(r Reconciler, key Key, from tenant.Name) (tenant.Name, error) {
	if t == nil || t.mode != PerSeed {
		return "", nil
	}
	if clusterOrSource(r.Cluster) == Source && r.For.NamesTenant {
		return t.owned(r, key, tenant.Name(key.Name), from)
	}
	if clusterOrSource(r.Cluster) == Target || !r.For.Namespaced {
		if from == "" {
			return "", Terminal(fmt.Errorf("%s %s names no tenant, and this deployment serves only tenants", r.For.Kind, key))
		}
		return from, nil
	}
	return t.owned(r, key, tenant.Name(key.Namespace), from)
}

// owned checks that the Source object key of reconciler r, which belongs to tenant owner, may be
// reconciled for an event or sweep of tenant from (none: the seed's).
func (t *targets) owned(r Reconciler, key Key, owner, from tenant.Name) (tenant.Name, error) {
	if !tenant.Valid(string(owner), t.prefix) {
		return "", fmt.Errorf("%s %s is not a tenant's (%s…): %w", r.For.Kind, key, t.prefix, errNotServed)
	}
	if from != "" && from != owner {
		return "", Terminal(fmt.Errorf("an event of tenant %s maps to %s %s of tenant %s: refused", from, r.For.Kind, key, owner))
	}
	return owner, nil
}

// reach returns ctx for acting on behalf of tenant tn, with its name and settings (see
// tenant.SettingsFrom), after making sure the tenant can be reached: a tenant that is not
// enrolled is not served (errNotServed: another resource manager's), an unknown one (no access
// in the seed) is a terminal failure with its reason, both before the reconciler reads or writes
// anything.
func (t *targets) reach(ctx context.Context, tn tenant.Name) (context.Context, error) {
	if tn == "" {
		return ctx, nil
	}
	settings, err := t.tenants.Settings(ctx, tn)
	if err != nil {
		if clients.IsNotEnrolled(err) {
			return nil, fmt.Errorf("%w: %w", errNotServed, err)
		}
		if clients.IsUnknownTenant(err) {
			return nil, Terminal(err)
		}
		return nil, err
	}
	return tenant.WithSettings(tenant.With(ctx, tn), settings), nil
}
