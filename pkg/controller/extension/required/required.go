// Package required holds what gardener-operator's extension-required-runtime and
// extension-required-virtual reconcilers (subpackages runtime and virtual) share: each decides
// one condition of an Extension from live state and patches it into the Extension's status.
package required

import (
	"context"
	"fmt"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	operatorv1alpha1 "github.com/gardener/gardener/pkg/apis/operator/v1alpha1"
	"k8s.io/utils/clock"

	"github.com/gardener-knative/gardener-knative/pkg/function"
)

// Verdict is the decided condition's status, reason and message.
type Verdict struct {
	Status          gardencorev1beta1.ConditionStatus
	Reason, Message string
}

// Decide decides the condition of an Extension, reading what it needs through the request's
// readers: req.Reader reads the runtime cluster (the Extensions' cluster), req.Source the garden.
type Decide func(ctx context.Context, req function.Request, ext *operatorv1alpha1.Extension) (Verdict, error)

// NewReconciler is the constructor of a reconciler that keeps the Extension's condition of type
// t as decide decides; a patch that changes nothing sends nothing.
func NewReconciler(t gardencorev1beta1.ConditionType, decide Decide) func(function.Deps) (function.Handler, error) {
	return func(deps function.Deps) (function.Handler, error) {
		return &reconciler{writer: deps.Target.Writer, clock: deps.Clock, condition: t, decide: decide}, nil
	}
}

type reconciler struct {
	writer    function.Writer
	clock     clock.PassiveClock
	condition gardencorev1beta1.ConditionType
	decide    Decide
}

func (r *reconciler) Reconcile(ctx context.Context, req function.Request) error {
	ext := &operatorv1alpha1.Extension{}
	if err := req.Reader.Get(ctx, req.Key, ext); err != nil {
		return err
	}
	v, err := r.decide(ctx, req, ext)
	if err != nil {
		return err
	}
	if _, err := r.writer.PatchStatus(ctx, ext, func() {
		ext.Status.Conditions = function.SetCondition(r.clock, ext.Status.Conditions, r.condition, v.Status, v.Reason, v.Message)
	}); err != nil {
		return fmt.Errorf("could not update extension status: %w", err)
	}
	return nil
}
