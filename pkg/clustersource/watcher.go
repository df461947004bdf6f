package clustersource

import (
	"context"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/google/uuid"
	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"
	"knative.dev/eventing/pkg/adapter/apiserver/events"
)

// A watcher sends Knative's ApiServerSource events (knative.dev/eventing's events package: the
// same types, source, subject, extensions and data) of one resource of one cluster, in every
// namespace, as Knative's adapter does, with what a watch needs and nothing else: one
// goroutine of ours, which also decodes the stream (stream.go), and Go's HTTP/2 stream's, where
// the adapter's reflectors run five per watch
// (client-go's reflector, its resync ticker, the stream's decoder, the HTTP/2 stream and one
// that relays the adapter's stop channel): at 16 watches per shoot, their stacks were more of the
// source's memory than its heap (docs/testing.md).
//
// Knative's adapter sends no event for what its reflector lists (its store's Replace does
// nothing), yet lists every object of every kind to begin, a shoot's Secrets included. A watcher
// begins where the cluster is without reading the objects: a LIST of at most one object gives
// the resourceVersion to watch from.
type watcher struct {
	res      resource
	selector string
	// fieldSelector narrows the LIST and watch on the server beside selector ("" for none).
	fieldSelector string
	// source is the events' source: the API server's address, as Knative's adapter sets it.
	source string
	// name is the source's name (NAME, as Knative's adapter reads it), which Knative's events
	// carry into its metrics' tags.
	name string
	// ref sends references (Reference mode) instead of the objects.
	ref bool
	// changes tells which parts of an object each event changed; nil tells nothing.
	changes *changeTracker
	sink    cloudevents.Client
	log     *zap.SugaredLogger
	// watchTimeout is the shortest a watch asks the server to run (minWatchTimeout when zero).
	watchTimeout time.Duration
	// clock times the backoffs and the rechecks (the real one when nil).
	clock clock.Clock
	// unservedRecheck is how long a watcher waits before it asks again for a resource the cluster
	// does not serve (unservedRecheckPeriod when zero).
	unservedRecheck time.Duration
}

// minWatchTimeout is the shortest a watch asks the server to run before it ends it (each asks
// for between one and two times this, as client-go's reflector does, so that the watches of many
// tenants do not all end at once).
const minWatchTimeout = 5 * time.Minute

// unservedRecheckPeriod is how often a resource the cluster does not serve is asked for again: a
// CRD installed later (an extension's kinds in a new shoot) is watched from then on, for one
// LIST per period while it is not.
const unservedRecheckPeriod = 5 * time.Minute

// shortestQuietWatch is the least a watch that ends without an error must have run for the next
// one to start at once; one that ends sooner (a server or proxy closing streams at once) backs off
// as a failure does, so that it cannot become a loop of requests.
const shortestQuietWatch = time.Second

// run watches until ctx ends. A watch that ends is resumed where it left off (bookmarks keep that
// place current); where the server no longer has that place (410 Gone), the watcher begins anew,
// and what changed in between sends no event, as a relist of Knative's adapter sends none. A
// resource the cluster does not serve is asked for again every unservedRecheck, where Knative's
// adapter skipped it for its lifetime.
func (w *watcher) run(ctx context.Context) {
	backoff := newBackoff()
	version := ""
	unserved := false
	for ctx.Err() == nil {
		if version == "" {
			list, err := w.res.List(ctx, metav1.ListOptions{LabelSelector: w.selector, FieldSelector: w.fieldSelector, Limit: 1})
			if apierrors.IsNotFound(err) {
				if !unserved {
					w.log.Infow("the cluster does not serve the resource; asking again later", "error", err)
					unserved = true
				}
				w.sleep(ctx, w.recheck())
				continue
			}
			if err != nil {
				w.log.Infow("cannot list; trying again", "error", err)
				w.sleep(ctx, backoff.Step())
				continue
			}
			if unserved {
				w.log.Infow("the cluster serves the resource now; watching it")
				unserved = false
			}
			version = list.GetResourceVersion()
		}
		began := w.now()
		var ended error
		version, ended = w.watchFrom(ctx, version)
		switch {
		case ctx.Err() != nil:
			return
		case ended == nil && w.now().Sub(began) >= shortestQuietWatch:
			backoff = newBackoff() // a watch ran its course: the next one starts at once
		case ended == nil:
			w.sleep(ctx, backoff.Step())
		case apierrors.IsResourceExpired(ended) || apierrors.IsGone(ended):
			w.log.Infow("the watch's place is gone; watching from now", "error", ended)
			version = ""
			w.changes.forget()
		default:
			w.log.Infow("the watch failed; resuming", "error", ended)
			w.sleep(ctx, backoff.Step())
		}
	}
}

func (w *watcher) recheck() time.Duration {
	if w.unservedRecheck == 0 {
		return unservedRecheckPeriod
	}
	return w.unservedRecheck
}

// watchFrom runs one watch from version and sends what it carries, until the server ends it
// (nil), it fails or ctx ends; it returns the version it got to.
func (w *watcher) watchFrom(ctx context.Context, version string) (string, error) {
	least := w.watchTimeout
	if least == 0 {
		least = minWatchTimeout
	}
	timeout := int64(least.Seconds() * (1 + rand.Float64()))
	stream, err := w.res.Watch(ctx, metav1.ListOptions{
		LabelSelector: w.selector, FieldSelector: w.fieldSelector, ResourceVersion: version, AllowWatchBookmarks: true, TimeoutSeconds: &timeout,
	})
	if err != nil {
		return version, err
	}
	defer stream.Close()
	for {
		e, err := stream.Next()
		if errors.Is(err, io.EOF) || ctx.Err() != nil {
			return version, nil
		}
		if err != nil {
			return version, err
		}
		if e.Type == watch.Error {
			return version, apierrors.FromObject(e.Object)
		}
		if e.Type == watch.Bookmark {
			if m, err := meta.Accessor(e.Object); err == nil {
				version = m.GetResourceVersion()
			}
			continue
		}
		obj, ok := e.Object.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		version = obj.GetResourceVersion()
		switch e.Type {
		case watch.Added:
			w.send(events.MakeAddEvent, obj, false)
		case watch.Modified:
			w.send(events.MakeUpdateEvent, obj, false)
		case watch.Deleted:
			w.send(events.MakeDeleteEvent, obj, true)
		}
	}
}

// send sends the event make makes of obj, as Knative's adapter's delegate does: a new ID, the
// retries make's context asks for, and which parts changed; a failure is logged (the sweeps
// converge what it misses).
func (w *watcher) send(make func(source, name string, obj any, ref bool) (context.Context, cloudevents.Event, error), obj *unstructured.Unstructured, deleted bool) {
	ctx, event, err := make(w.source, w.name, obj, w.ref)
	if err != nil {
		w.log.Infow("event creation failed", zap.Error(err))
		return
	}
	event.SetID(uuid.New().String())
	w.changes.mark(&event, obj, deleted)
	if result := w.sink.Send(ctx, event); !cloudevents.IsACK(result) {
		w.log.Errorw("failed to send cloudevent", zap.Error(result), zap.String("subject", event.Subject()), zap.String("id", event.ID()))
	}
}

// newBackoff is the wait between failed LISTs or watches: from 0.8 s, doubling, to 30 s, with
// jitter, as client-go's reflector backs off.
func newBackoff() *wait.Backoff {
	return &wait.Backoff{Duration: 800 * time.Millisecond, Factor: 2, Jitter: 1, Steps: math.MaxInt32, Cap: 30 * time.Second}
}

func (w *watcher) clk() clock.Clock {
	if w.clock == nil {
		return clock.RealClock{}
	}
	return w.clock
}

func (w *watcher) now() time.Time { return w.clk().Now() }

// sleep waits d on the watcher's clock, or until ctx ends.
func (w *watcher) sleep(ctx context.Context, d time.Duration) {
	t := w.clk().NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C():
	}
}
