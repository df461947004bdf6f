// Package shoot is GCM's Shoot controller as one function that hosts its reconcilers, each in
// its own package as in Gardener (pkg/controllermanager/controller/shoot/<reconciler>):
//   - reference (pkg/controller/shoot/reference): the reference protection of what Shoots
//     reference.
package shoot

import (
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/gardener-knative/gardener-knative/pkg/controller/shoot/reference"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// Function is GCM's Shoot controller.
var Function = &function.Function{
	Name: "shoot",
	// reference: lists Shoots and the metadata of Secrets, ConfigMaps and WorkloadIdentities by
	// namespace and patches their finalizers; its sweep lists project Namespaces. It never reads
	// one object by name.
	RBAC: []rbacv1.PolicyRule{
		{APIGroups: []string{kinds.Shoot.Group}, Resources: []string{kinds.Shoot.Resource}, Verbs: []string{"list", "patch"}},
		{APIGroups: []string{kinds.Secret.Group}, Resources: []string{kinds.Secret.Resource, kinds.ConfigMap.Resource}, Verbs: []string{"list", "patch"}},
		{APIGroups: []string{kinds.WorkloadIdentity.Group}, Resources: []string{kinds.WorkloadIdentity.Resource}, Verbs: []string{"list", "patch"}},
		{APIGroups: []string{kinds.Namespace.Group}, Resources: []string{kinds.Namespace.Resource}, Verbs: []string{"list"}},
	},
	Reconcilers: []function.Reconciler{{
		Name: reference.Name,
		// The reconciler converges a namespace: its keys name Namespaces.
		For: kinds.Namespace,
		New: func(deps function.Deps) (function.Handler, error) {
			return &reference.Reconciler{Writer: deps.Source.Writer, Log: deps.Log}, nil
		},
	}},
	Watches: []function.Watch{
		{Kind: kinds.Shoot, Reconciler: reference.Name, Predicate: reference.Predicate, Map: reference.MapShootToNamespace},
	},
	Sweeps: []function.Sweep{{
		// Twice an hour: every project namespace against four LISTs of the whole garden, read
		// once, so that changes whose events were dropped and referenced objects created after
		// their Shoot are protected, and objects no Shoot references any more are released.
		Name: reference.Name, Schedule: "12,42 * * * *", Reconciler: reference.Name,
		Primary: function.List{Kind: kinds.Namespace, MetadataOnly: true, LabelSelector: v1beta1constants.GardenRole + "=" + v1beta1constants.GardenRoleProject},
		Related: []function.List{
			{Kind: kinds.Shoot},
			{Kind: kinds.Secret, MetadataOnly: true},
			{Kind: kinds.ConfigMap, MetadataOnly: true},
			{Kind: kinds.WorkloadIdentity, MetadataOnly: true},
		},
	}},
}
