package seed

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/gardener-knative/gardener-knative/pkg/function"
)

// AllSeedsReconcilerName names the reconciler that converges every seed at once when a
// ControllerRegistration or ControllerDeployment changes.
const AllSeedsReconcilerName = "all-seeds"

// blockedError marks the failures of one seed's decision that only another object's change can
// repair (a missing registration, a pending deletion, a broken domain Secret): terminal for the
// seed's own reconcile, and no reason to fail the other seeds' in a pass over all of them.
type blockedError struct{ error }

func (e *blockedError) Unwrap() error { return e.error }

// blocked makes err terminal and recognisable as one seed's blocked decision.
func blocked(err error) error { return function.Terminal(&blockedError{err}) }

// AllSeeds converges every seed in one pass over a Garden listed once. Gardener maps a
// ControllerRegistration's or ControllerDeployment's event to a reconcile of every seed, each
// from its cache; reconciling a hundred seeds live within one event's budget would cost nine
// requests each, so the pass lists each kind once instead, as the sweep does.
//
// One pass runs at a time in a process, and the reconciles that waited for it are served by the
// next pass that begins after they arrived: a pass holds the whole garden (every Shoot in full),
// and a burst of registration events (an operator applying many at once) would otherwise hold
// one garden per concurrent request (20 of them at 1,000 Shoots were over the function's memory
// limit: docs/testing.md).
type AllSeeds struct {
	*Reconciler
	// pass is held by the running pass; arrivals numbers the reconciles as they arrive, and
	// served is the arrival number at the start of the latest pass that succeeded.
	pass     chan struct{}
	arrivals atomic.Uint64
	served   atomic.Uint64
}

// NewAllSeeds builds the reconciler.
func NewAllSeeds(deps function.Deps) (function.Handler, error) {
	r, _ := New(deps)
	return &AllSeeds{Reconciler: r.(*Reconciler), pass: make(chan struct{}, 1)}, nil
}

// Reconcile ignores which registration the key names: any change of one may change any seed's
// installations. It waits for a running pass, and is done if a pass that began after it arrived
// succeeded meanwhile (that pass read the change live).
func (a *AllSeeds) Reconcile(ctx context.Context, req function.Request) error {
	arrival := a.arrivals.Add(1)
	select {
	case a.pass <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-a.pass }()
	if a.served.Load() >= arrival {
		return nil
	}
	began := a.arrivals.Load()
	if err := a.convergeAll(ctx, req); err != nil {
		return err
	}
	a.served.Store(began)
	return nil
}

// convergeAll converges every seed from one listing of the garden.
func (a *AllSeeds) convergeAll(ctx context.Context, req function.Request) error {
	garden, err := LoadGarden(ctx, req.Reader)
	if err != nil {
		return err
	}
	var failed []error
	for i := range garden.Seeds {
		err := a.Converge(ctx, req.Trigger, garden, &garden.Seeds[i])
		var isBlocked *blockedError
		switch {
		case err == nil:
		case errors.As(err, &isBlocked):
			a.Log.Warn("Seed's installations not converged", "seed", garden.Seeds[i].Name, "error", err)
		default:
			failed = append(failed, err)
		}
	}
	return errors.Join(failed...)
}
