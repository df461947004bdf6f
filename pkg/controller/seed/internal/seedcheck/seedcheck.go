// Package seedcheck is what the Seed controller's Backup Buckets and Extensions checks share: a
// condition of a Seed computed from the objects of one kind that name the seed by a field
// gardener-apiserver selects on, patched when it changes, and re-checked by a sweep.
package seedcheck

import (
	"context"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

// Reconcile reads the Seed the request names and, into objects, the objects whose field names
// it; then it patches the seed's condition of type t to what compute makes of its current one
// (nil when the seed has none) and the objects. A condition that did not change sends nothing.
func Reconcile[L client.ObjectList](ctx context.Context, req function.Request, writer function.Writer, t gardencorev1beta1.ConditionType,
	objects L, field string, compute func(current *gardencorev1beta1.Condition, objects L) gardencorev1beta1.Condition) error {
	seed := &gardencorev1beta1.Seed{}
	if err := req.Reader.Get(ctx, req.Key, seed); err != nil {
		return client.IgnoreNotFound(err)
	}
	if err := req.Reader.List(ctx, objects, client.MatchingFields{field: seed.Name}); err != nil {
		return err
	}
	condition := compute(function.GetCondition(seed.Status.Conditions, t), objects)
	_, err := writer.PatchStatus(ctx, seed, func() { seed.Status.Conditions = function.MergeConditions(seed.Status.Conditions, condition) })
	return err
}

// Sweep re-checks every seed every 30 s (Gardener's default syncPeriod of both checks) with one
// LIST of Seeds and one of kind, whose objects seedOf indexes by field.
func Sweep(reconciler string, kind function.Kind, field string, seedOf function.IndexFunc) function.Sweep {
	return function.Sweep{
		Name: reconciler, Schedule: "*/30 * * * * *", Reconciler: reconciler,
		Primary: function.List{Kind: kinds.Seed},
		Related: []function.List{{Kind: kind, Indexes: map[string]function.IndexFunc{field: seedOf}}},
	}
}
