package clients

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/tenant"
)

// Routing is a client of "the target cluster" for code that serves many tenants: every call
// resolves the tenant of its context (tenant.From) and goes to that tenant's client, or to
// single when the context names no tenant. Handlers written for one cluster serve every tenant
// unchanged, and a call can only reach the tenant its context was given by the runtime.
//
// Scheme and the REST mapper are single's (for the kinds compiled in, alike in every cluster);
// ClientFor gives the tenant's own client, whose mapper also knows the tenant's CRDs.
type Routing struct {
	// single serves calls without a tenant; nil refuses them.
	single client.Client
	// shared answers Scheme and RESTMapper.
	shared  client.Client
	tenants *Clients
}

var _ client.Client = &Routing{}

// NewRouting returns a client that reaches single for contexts without a tenant (nil: such
// calls fail as an unknown tenant) and the context's tenant otherwise (tenants nil: every tenant
// is unknown, the single-tenant mode).
func NewRouting(single client.Client, tenants *Clients) *Routing {
	return &Routing{single: single, shared: single, tenants: tenants}
}

// NewTenantsOnly returns a client that reaches the context's tenant and refuses calls without
// one: a process serving only tenants must never act on the seed by mistake. shared (the seed's
// client) answers Scheme and RESTMapper.
func NewTenantsOnly(tenants *Clients, shared client.Client) *Routing {
	return &Routing{shared: shared, tenants: tenants}
}

// ClientFor returns the client a call with ctx goes to.
func (r *Routing) ClientFor(ctx context.Context) (client.Client, error) {
	t := tenant.From(ctx)
	if t == "" {
		if r.single == nil {
			return nil, &UnknownTenantError{Reason: "the request names no tenant, and this process serves only tenants"}
		}
		return r.single, nil
	}
	if r.tenants == nil {
		return nil, &UnknownTenantError{Tenant: t, Reason: "the process runs in single-tenant mode"}
	}
	return r.tenants.Client(ctx, t)
}

// refused drops a tenant's client whose credentials the tenant refused (a rotated token or CA):
// the next call builds it anew from the Secrets.
func (r *Routing) refused(ctx context.Context, err error) error {
	if t := tenant.From(ctx); t != "" && r.tenants != nil && apierrors.IsUnauthorized(err) {
		r.tenants.Forget(t)
	}
	return err
}

func (r *Routing) do(ctx context.Context, call func(client.Client) error) error {
	c, err := r.ClientFor(ctx)
	if err != nil {
		return err
	}
	return r.refused(ctx, call(c))
}

func (r *Routing) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return r.do(ctx, func(c client.Client) error { return c.Get(ctx, key, obj, opts...) })
}

func (r *Routing) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return r.do(ctx, func(c client.Client) error { return c.List(ctx, list, opts...) })
}

func (r *Routing) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	return r.do(ctx, func(c client.Client) error { return c.Apply(ctx, obj, opts...) })
}

func (r *Routing) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	return r.do(ctx, func(c client.Client) error { return c.Create(ctx, obj, opts...) })
}

func (r *Routing) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	return r.do(ctx, func(c client.Client) error { return c.Delete(ctx, obj, opts...) })
}

func (r *Routing) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return r.do(ctx, func(c client.Client) error { return c.Update(ctx, obj, opts...) })
}

func (r *Routing) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	return r.do(ctx, func(c client.Client) error { return c.Patch(ctx, obj, patch, opts...) })
}

func (r *Routing) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	return r.do(ctx, func(c client.Client) error { return c.DeleteAllOf(ctx, obj, opts...) })
}

func (r *Routing) Status() client.SubResourceWriter { return r.SubResource("status") }

func (r *Routing) SubResource(subResource string) client.SubResourceClient {
	return &routingSubResource{r: r, name: subResource}
}

func (r *Routing) Scheme() *runtime.Scheme { return r.shared.Scheme() }

func (r *Routing) RESTMapper() meta.RESTMapper { return r.shared.RESTMapper() }

func (r *Routing) GroupVersionKindFor(obj runtime.Object) (schema.GroupVersionKind, error) {
	return r.shared.GroupVersionKindFor(obj)
}

func (r *Routing) IsObjectNamespaced(obj runtime.Object) (bool, error) {
	return r.shared.IsObjectNamespaced(obj)
}

type routingSubResource struct {
	r    *Routing
	name string
}

func (s *routingSubResource) Get(ctx context.Context, obj, subResource client.Object, opts ...client.SubResourceGetOption) error {
	return s.r.do(ctx, func(c client.Client) error { return c.SubResource(s.name).Get(ctx, obj, subResource, opts...) })
}

func (s *routingSubResource) Create(ctx context.Context, obj, subResource client.Object, opts ...client.SubResourceCreateOption) error {
	return s.r.do(ctx, func(c client.Client) error { return c.SubResource(s.name).Create(ctx, obj, subResource, opts...) })
}

func (s *routingSubResource) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	return s.r.do(ctx, func(c client.Client) error { return c.SubResource(s.name).Update(ctx, obj, opts...) })
}

func (s *routingSubResource) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	return s.r.do(ctx, func(c client.Client) error { return c.SubResource(s.name).Patch(ctx, obj, patch, opts...) })
}

func (s *routingSubResource) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	return s.r.do(ctx, func(c client.Client) error { return c.SubResource(s.name).Apply(ctx, obj, opts...) })
}
