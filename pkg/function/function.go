// Package function is the runtime every controller of gardener-knative runs on. A function
// declares what it handles (how an event about each watched kind maps to the keys it
// reconciles, and what each sweep lists) and provides a Reconciler; the runtime serves the
// CloudEvents that ApiServerSource and PingSource send, reads state with an uncached client,
// runs sweeps from one paginated LIST per kind, retries conflicts, and answers each event
// with the status code that makes the sender retry exactly when retrying can help.
package function

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/sources"
)

// Key identifies one object a function reconciles.
type Key = types.NamespacedName

// Reconciler converges the object with the given key to what the specification asks.
// It reads through reader: the API server when an event triggered it, a snapshot of one
// paginated LIST per kind when a sweep did. It writes with the client it was built with,
// always with optimistic concurrency (resourceVersion preconditions), so that a stale read
// turns into a conflict, which the runtime answers by reconciling again from live state.
// It must be idempotent: events are duplicated and reordered.
type Reconciler interface {
	Reconcile(ctx context.Context, reader client.Reader, key Key) error
}

// Object is the object an ApiServerSource event is about.
type Object struct {
	GVK schema.GroupVersionKind
	Key Key
	// Deleted is set for delete events.
	Deleted bool
	// Resource is the object as the event carried it (Resource mode); nil in Reference mode.
	// It may be older than what the API server holds: use it to map, not to decide.
	Resource *unstructured.Unstructured
}

// Mapper maps an event about an object of a watched kind to the keys to reconcile.
type Mapper func(ctx context.Context, reader client.Reader, obj Object) ([]Key, error)

// MapToSelf is the Mapper for the kind a function reconciles: the object's own key.
func MapToSelf(_ context.Context, _ client.Reader, obj Object) ([]Key, error) {
	return []Key{obj.Key}, nil
}

// Sweep says what a sweep lists. Each list is read once per sweep, paginated; the items of
// Primary are the keys to reconcile, and the items of all lists answer the reconciler's reads
// while the sweep runs, so a sweep costs a constant number of LISTs however many objects exist.
type Sweep struct {
	// Primary lists the objects to reconcile. A *metav1.PartialObjectMetadataList (with its
	// GroupVersionKind set) lists metadata only.
	Primary client.ObjectList
	// Related lists what the reconciler reads besides the primary objects.
	Related []client.ObjectList
}

// Deps are what the runtime hands a function's constructor.
type Deps struct {
	// Client is uncached: every read and write goes to the API server and is counted.
	Client client.Client
	Clock  clock.PassiveClock
	Log    *slog.Logger
}

// Function is everything the runtime needs to know about one function.
type Function struct {
	// Feed is the function's entry in sources.All: the kinds and schedules that feed it.
	Feed sources.Feed
	// Watches maps each kind of the feed to the keys its events concern.
	Watches map[schema.GroupKind]Mapper
	// Sweeps are run by the feed's pings, by name.
	Sweeps map[string]Sweep
	// New builds the reconciler; it reads the function's own settings from the environment.
	New func(Deps) (Reconciler, error)
}

// Name is the function's name.
func (f Function) Name() string { return f.Feed.Function }

// Validate checks that the function handles exactly what its feed sends it.
func (f Function) Validate() error {
	var errs []error
	fed := map[schema.GroupKind]bool{}
	for _, r := range f.Feed.Resources {
		gk := schema.GroupKind{Group: r.Group(), Kind: r.Kind}
		fed[gk] = true
		if f.Watches[gk] == nil {
			errs = append(errs, fmt.Errorf("feed watches %s but the function has no mapper for it", gk))
		}
	}
	for gk := range f.Watches {
		if !fed[gk] {
			errs = append(errs, fmt.Errorf("function maps %s but its feed does not watch it", gk))
		}
	}
	for _, p := range f.Feed.Pings {
		if _, ok := f.Sweeps[p.Sweep]; !ok {
			errs = append(errs, fmt.Errorf("feed pings sweep %q but the function has no such sweep", p.Sweep))
		}
	}
	for name, s := range f.Sweeps {
		if _, ok := f.Feed.Ping(name); !ok {
			errs = append(errs, fmt.Errorf("function has sweep %q but its feed never pings it", name))
		}
		if s.Primary == nil {
			errs = append(errs, fmt.Errorf("sweep %q has no primary list", name))
		}
	}
	if f.New == nil {
		errs = append(errs, errors.New("function has no constructor"))
	}
	return errors.Join(errs...)
}
