// Package tenant names the control plane a request or an event is for. The empty Name is the
// single-tenant mode: the cluster of TARGET_KUBECONFIG, or the seed itself. Otherwise it is a
// shoot's control-plane namespace in the seed: taken from a webhook request's path
// (/<namespace>/webhooks/...), from a CloudEvent's tenant extension (set by the multi-tenant
// event source), or from the namespace of the object a function reconciles.
//
// Everything read, written or cached on behalf of a request is scoped by its tenant: a request
// for tenant A must never see or touch tenant B's state. The package is apart from the clients
// (pkg/tenant/clients) so that the shared read cache (pkg/cache), which the clients use, can
// depend on it.
package tenant

import (
	"context"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Name is a tenant: a shoot's control-plane namespace, or "" in single-tenant mode.
type Name string

// DefaultPrefix is how Gardener names shoot control-plane namespaces (shoot--<project>--<shoot>):
// only such namespaces are tenants by default, so that nothing can make a process act for
// kube-system, garden or its own namespace as if it were a shoot.
const DefaultPrefix = "shoot--"

// Valid tells whether name can be a tenant: a namespace name (a DNS-1123 label) with prefix.
func Valid(name, prefix string) bool {
	return strings.HasPrefix(name, prefix) && len(name) > len(prefix) && len(validation.IsDNS1123Label(name)) == 0
}

// EnrolledLabel on a tenant's Cluster in the seed, with the value "true", says that this
// project's per-seed deployment serves the tenant (pkg/enrolment sets it, docs/cutover.md): a
// shoot whose Cluster lacks it is left to gardenlet's own resource manager, and nothing of ours
// reads its Secrets, reconciles its objects or answers for it.
const EnrolledLabel = "gardener-knative.io/enrolled"

// RegistrationLabels mark the webhook registrations the enrolment puts into a tenant's shoot
// (pkg/enrolment): those it deletes when they no longer apply, and whose CA bundles the function
// shootcabundle keeps.
var RegistrationLabels = map[string]string{"app.kubernetes.io/part-of": "gardener-knative", "app.kubernetes.io/component": "grm-webhooks"}

// DefaultAccessSecret is the shoot access Secret Gardener creates in every shoot
// control-plane namespace for the shoot's gardener-resource-manager; its token (key "token",
// kept fresh by the token requestor) authenticates as the shoot's
// kube-system/gardener-resource-manager ServiceAccount.
const DefaultAccessSecret = "shoot-access-gardener-resource-manager"

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
