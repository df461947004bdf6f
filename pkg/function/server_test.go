package function

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	operationsv1alpha1 "github.com/gardener/gardener/pkg/apis/operations/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	knsources "knative.dev/eventing/pkg/apis/sources"
	sourcesv1 "knative.dev/eventing/pkg/apis/sources/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gardener-knative/gardener-knative/pkg/scheme"
)

var (
	bastionKind = NewKind(operationsv1alpha1.SchemeGroupVersion, "Bastion", "bastions")
	shootKind   = NewKind(gardencorev1beta1.SchemeGroupVersion, "Shoot", "shoots")
)

// recorder is a Handler that records its keys and reads each Bastion and its Shoot, and lists
// the Shoots of the Bastion's seed by the indexed field.
type recorder struct {
	mu       sync.Mutex
	keys     []Key
	fail     func(Key) error
	readBack bool
	// seedShoots records, per key, how many Shoots the field-selected List found.
	seedShoots map[Key]int
	block      chan struct{}
}

func (r *recorder) Reconcile(ctx context.Context, req Request) error {
	r.mu.Lock()
	r.keys = append(r.keys, req.Key)
	block := r.block
	r.mu.Unlock()
	if block != nil {
		<-block
	}
	if r.readBack {
		b := &operationsv1alpha1.Bastion{}
		if err := req.Reader.Get(ctx, req.Key, b); err != nil {
			return client.IgnoreNotFound(err)
		}
		if err := req.Reader.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: b.Spec.ShootRef.Name}, &gardencorev1beta1.Shoot{}); client.IgnoreNotFound(err) != nil {
			return err
		}
		shoots := &gardencorev1beta1.ShootList{}
		if err := req.Reader.List(ctx, shoots, client.InNamespace(b.Namespace), client.MatchingFields{"spec.seedName": ptr.Deref(b.Spec.SeedName, "")}); err != nil {
			return err
		}
		r.mu.Lock()
		r.seedShoots[req.Key] = len(shoots.Items)
		r.mu.Unlock()
	}
	if r.fail != nil {
		return r.fail(req.Key)
	}
	return nil
}

func (r *recorder) recorded() []Key {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Key(nil), r.keys...)
}

func testFunction(rec *recorder) *Function {
	return &Function{
		Name:        "test",
		Reconcilers: []Reconciler{{Name: "main", For: bastionKind, New: func(Deps) (Handler, error) { return rec, nil }}},
		Watches: []Watch{
			{Kind: bastionKind, Reconciler: "main", Predicate: func(ev Event) bool { return ev.Key.Name != "irrelevant" }},
			// Shoots map to a Bastion of the same name, to see mapping at work.
			{Kind: shootKind, Reconciler: "main", Map: func(_ context.Context, _ client.Reader, ev Event) ([]Key, error) {
				if ev.Key.Name == "panic" {
					panic("mapper bug")
				}
				return []Key{{Namespace: ev.Key.Namespace, Name: "bastion-of-" + ev.Key.Name}}, nil
			}},
		},
		Sweeps: []Sweep{{
			Name: "resync", Schedule: "* * * * *", Reconciler: "main",
			Primary: List{Kind: bastionKind},
			Related: []List{{Kind: shootKind, Indexes: map[string]IndexFunc{"spec.seedName": func(o client.Object) []string {
				if seed := o.(*gardencorev1beta1.Shoot).Spec.SeedName; seed != nil {
					return []string{*seed}
				}
				return nil
			}}}},
		}},
	}
}

type harness struct {
	server   *Server
	http     *httptest.Server
	rec      *recorder
	registry *prometheus.Registry
	reads    *int
	mu       *sync.Mutex
	failList *atomic.Bool
	// unserved makes Shoots a kind the cluster does not serve: its LIST answers 404, as a
	// kube-apiserver answers for a resource it lacks.
	unserved *atomic.Bool
}

func newHarness(t *testing.T, rec *recorder, objs ...client.Object) *harness {
	t.Helper()
	var mu sync.Mutex
	reads := 0
	failList := &atomic.Bool{}
	unserved := &atomic.Bool{}
	rec.seedShoots = map[Key]int{}
	count := func() { mu.Lock(); reads++; mu.Unlock() }
	c := fake.NewClientBuilder().WithScheme(scheme.Gardener).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			count()
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			count()
			if failList.Load() {
				return apierrors.NewServiceUnavailable("etcd is away")
			}
			if _, shoots := list.(*gardencorev1beta1.ShootList); shoots && unserved.Load() {
				return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusNotFound,
					Reason: metav1.StatusReasonNotFound, Message: "the server could not find the requested resource"}}
			}
			return c.List(ctx, list, opts...)
		},
	}).Build()
	reg := prometheus.NewRegistry()
	opts := Options{EventTimeout: 5 * time.Second, SweepTimeout: 5 * time.Second, SweepConcurrency: 4, ListPageSize: 2, ConflictRetries: 2}
	s, err := NewServer(testFunction(rec), Env{Source: c, Clock: clock.RealClock{}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Registry: reg}, opts)
	require.NoError(t, err)
	h := &harness{server: s, http: httptest.NewServer(s), rec: rec, registry: reg, reads: &reads, mu: &mu, failList: failList, unserved: unserved}
	t.Cleanup(h.http.Close)
	return h
}

func (h *harness) readCount() int { h.mu.Lock(); defer h.mu.Unlock(); return *h.reads }

// send posts the event in binary mode and returns the status code and body.
func (h *harness) send(t *testing.T, e cloudevents.Event) (int, string) {
	t.Helper()
	return postBinary(t, h.http.URL, e)
}

// postBinary posts e to url in binary mode and returns the status code and body.
func postBinary(t *testing.T, url string, e cloudevents.Event) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(e.Data()))
	require.NoError(t, err)
	req.Header.Set("Ce-Specversion", "1.0")
	req.Header.Set("Ce-Id", e.ID())
	req.Header.Set("Ce-Source", e.Source())
	req.Header.Set("Ce-Type", e.Type())
	for name, value := range e.Extensions() {
		req.Header.Set("Ce-"+name, fmt.Sprint(value))
	}
	req.Header.Set("Content-Type", "application/json")
	return do(t, req)
}

func (h *harness) sendStructured(t *testing.T, e cloudevents.Event) (int, string) {
	t.Helper()
	body, err := e.MarshalJSON()
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, h.http.URL, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/cloudevents+json")
	return do(t, req)
}

func do(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func event(t *testing.T, typ string, data string) cloudevents.Event {
	t.Helper()
	e := cloudevents.NewEvent()
	e.SetID("id-1")
	e.SetSource("https://10.0.0.1:443")
	e.SetType(typ)
	if data != "" {
		require.NoError(t, e.SetData(cloudevents.ApplicationJSON, []byte(data)))
	}
	return e
}

func TestEventTypesAreKnatives(t *testing.T) {
	assert.Equal(t, sourcesv1.PingSourceEventType, PingEventType)
	assert.ElementsMatch(t, knsources.ApiServerSourceEventReferenceModeTypes, []string{RefAddEventType, RefUpdateEventType, RefDeleteEventType})
	assert.ElementsMatch(t, knsources.ApiServerSourceEventResourceModeTypes, []string{ResourceAddEventType, ResourceUpdateEventType, ResourceDeleteEventType})
}

func TestReferenceAndResourceEventsReconcileMappedKeys(t *testing.T) {
	h := newHarness(t, &recorder{})
	ref := `{"apiVersion":"operations.gardener.cloud/v1alpha1","kind":"Bastion","name":"b1","namespace":"garden-dev"}`
	code, body := h.send(t, event(t, RefUpdateEventType, ref))
	require.Equal(t, http.StatusOK, code, body)

	shoot := `{"apiVersion":"core.gardener.cloud/v1beta1","kind":"Shoot","metadata":{"name":"s1","namespace":"garden-dev"},"spec":{"seedName":"x"}}`
	code, body = h.sendStructured(t, event(t, ResourceDeleteEventType, shoot))
	require.Equal(t, http.StatusOK, code, body)
	// Knative's Broker filter counts a non-empty answer that is no CloudEvent as a failed delivery
	// and retries it: a handled event is answered with an empty body.
	assert.Empty(t, body)

	assert.Equal(t, []Key{{Namespace: "garden-dev", Name: "b1"}, {Namespace: "garden-dev", Name: "bastion-of-s1"}}, h.rec.recorded())
	assert.Equal(t, 1.0, testutil.ToFloat64(h.server.metrics.events.WithLabelValues(RefUpdateEventType, "done")))

	t.Run("a predicate drops an event before any read", func(t *testing.T) {
		before, reads := len(h.rec.recorded()), h.readCount()
		code, body := h.send(t, event(t, RefUpdateEventType, `{"apiVersion":"operations.gardener.cloud/v1alpha1","kind":"Bastion","name":"irrelevant","namespace":"garden-dev"}`))
		require.Equal(t, http.StatusOK, code, body)
		assert.Len(t, h.rec.recorded(), before)
		assert.Equal(t, reads, h.readCount())
		assert.Equal(t, 1.0, testutil.ToFloat64(h.server.metrics.filtered.WithLabelValues("main", "Bastion")))
	})
	t.Run("an event of a cluster the function does not watch is refused", func(t *testing.T) {
		e := event(t, RefUpdateEventType, ref)
		e.SetExtension(ClusterExtension, "target")
		code, body := h.send(t, e)
		assert.Equal(t, http.StatusUnprocessableEntity, code)
		assert.Contains(t, body, "target cluster")
	})
	t.Run("the garden's events are the Source's of a function that works on the garden, no other's", func(t *testing.T) {
		e := event(t, RefUpdateEventType, `{"apiVersion":"operations.gardener.cloud/v1alpha1","kind":"Bastion","name":"b2","namespace":"garden-dev"}`)
		e.SetExtension(ClusterExtension, "garden")
		code, body := h.send(t, e)
		assert.Equal(t, http.StatusBadRequest, code)
		assert.Contains(t, body, "does not work on the garden")
		assert.NotContains(t, h.rec.recorded(), Key{Namespace: "garden-dev", Name: "b2"})

		h.server.fn.WorksOnGarden = true
		t.Cleanup(func() { h.server.fn.WorksOnGarden = false })
		code, body = h.send(t, e)
		require.Equal(t, http.StatusOK, code, body)
		assert.Contains(t, h.rec.recorded(), Key{Namespace: "garden-dev", Name: "b2"})
	})
}

func TestBadEventsGetAFinalAnswerWithAReason(t *testing.T) {
	h := newHarness(t, &recorder{})
	for _, tc := range []struct {
		name   string
		event  cloudevents.Event
		code   int
		reason string
	}{
		{"reference without a name", event(t, RefAddEventType, `{"apiVersion":"operations.gardener.cloud/v1alpha1","kind":"Bastion"}`), 400, "names no object"},
		{"reference that is no JSON", event(t, RefAddEventType, `not json`), 400, "not an object reference"},
		{"resource that is no object", event(t, ResourceAddEventType, `[1,2]`), 400, "not a Kubernetes object"},
		{"kind the function does not watch", event(t, RefAddEventType, `{"apiVersion":"v1","kind":"Secret","name":"s","namespace":"n"}`), 422, "does not watch"},
		{"unknown cluster", withExtension(event(t, RefAddEventType, `{"apiVersion":"v1","kind":"Secret","name":"s","namespace":"n"}`), ClusterExtension, "mars"), 400, "unknown cluster"},
		{"unknown event type", event(t, "com.example.unknown", `{}`), 422, "neither an ApiServerSource nor a PingSource event"},
		{"ping without data", event(t, PingEventType, ""), 422, "no data"},
		{"ping for an unknown sweep", event(t, PingEventType, `{"sweep":"nope"}`), 422, `no sweep "nope"`},
		{"ping with garbage", event(t, PingEventType, `{"sweep":`), 422, "is not"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := h.send(t, tc.event)
			assert.Equal(t, tc.code, code)
			assert.Contains(t, body, tc.reason)
		})
	}
	t.Run("not a CloudEvent", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, h.http.URL, strings.NewReader(`{"hello":"world"}`))
		req.Header.Set("Content-Type", "application/json")
		code, body := do(t, req)
		assert.Equal(t, http.StatusBadRequest, code)
		assert.Contains(t, body, "not a CloudEvent")
	})
	t.Run("GET", func(t *testing.T) {
		resp, err := http.Get(h.http.URL)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	})
	assert.Empty(t, h.rec.recorded(), "no bad event may reach the reconciler")
}

func TestTransientFailuresAskForARetry(t *testing.T) {
	gr := schema.GroupResource{Group: "operations.gardener.cloud", Resource: "bastions"}
	attempts := 0
	rec := &recorder{fail: func(Key) error {
		attempts++
		return apierrors.NewServiceUnavailable("etcd is away")
	}}
	h := newHarness(t, rec)
	ref := `{"apiVersion":"operations.gardener.cloud/v1alpha1","kind":"Bastion","name":"b1","namespace":"ns"}`
	code, body := h.send(t, event(t, RefAddEventType, ref))
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "etcd is away")
	assert.Equal(t, 1, attempts, "only conflicts are retried in-process")

	t.Run("a conflict is reconciled again from live state, then succeeds", func(t *testing.T) {
		attempts = 0
		rec.fail = func(Key) error {
			attempts++
			if attempts == 1 {
				return apierrors.NewConflict(gr, "b1", errors.New("stale"))
			}
			return nil
		}
		code, body := h.send(t, event(t, RefAddEventType, ref))
		assert.Equal(t, http.StatusOK, code, body)
		assert.Equal(t, 2, attempts)
	})
	t.Run("persistent conflicts end in 503 after the bounded retries", func(t *testing.T) {
		attempts = 0
		rec.fail = func(Key) error { attempts++; return apierrors.NewConflict(gr, "b1", errors.New("stale")) }
		code, _ := h.send(t, event(t, RefAddEventType, ref))
		assert.Equal(t, http.StatusServiceUnavailable, code)
		assert.Equal(t, 3, attempts, "first try plus ConflictRetries")
	})
}

func TestTerminalFailuresAreAcknowledgedNotRetried(t *testing.T) {
	bastions := schema.GroupResource{Group: "operations.gardener.cloud", Resource: "bastions"}
	ref := `{"apiVersion":"operations.gardener.cloud/v1alpha1","kind":"Bastion","name":"b1","namespace":"ns"}`
	for _, tc := range []struct {
		name string
		err  error
		code int
	}{
		{"Forbidden", apierrors.NewForbidden(bastions, "b1", errors.New("RBAC says no")), http.StatusOK},
		{"Invalid", apierrors.NewInvalid(schema.GroupKind{Group: "operations.gardener.cloud", Kind: "Bastion"}, "b1", nil), http.StatusOK},
		{"marked terminal by the reconciler", Terminal(errors.New("spec refused")), http.StatusOK},
		{"NotFound of another object", apierrors.NewNotFound(schema.GroupResource{Group: "core.gardener.cloud", Resource: "shoots"}, "s1"), http.StatusServiceUnavailable},
		{"TooManyRequests", apierrors.NewTooManyRequests("slow down", 1), http.StatusServiceUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			attempts := 0
			h := newHarness(t, &recorder{fail: func(Key) error { attempts++; return tc.err }})
			code, body := h.send(t, event(t, RefAddEventType, ref))
			assert.Equal(t, tc.code, code, body)
			assert.Equal(t, 1, attempts)
			terminal := testutil.ToFloat64(h.server.metrics.terminal.WithLabelValues("Bastion"))
			if tc.code == http.StatusOK {
				assert.Equal(t, 1.0, terminal)
				assert.Equal(t, 1.0, testutil.ToFloat64(h.server.metrics.events.WithLabelValues(RefAddEventType, "terminal")))
			} else {
				assert.Zero(t, terminal)
			}
		})
	}
}

// An event whose object is gone by the time it is handled (duplicated, reordered, or about a
// deletion) has nothing to converge: done, neither retried nor counted as a failure.
func TestEventsOfGoneObjectsAreDone(t *testing.T) {
	gone := apierrors.NewNotFound(schema.GroupResource{Group: "operations.gardener.cloud", Resource: "bastions"}, "b1")
	attempts := 0
	h := newHarness(t, &recorder{fail: func(Key) error { attempts++; return gone }})
	code, body := h.send(t, event(t, RefAddEventType, `{"apiVersion":"operations.gardener.cloud/v1alpha1","kind":"Bastion","name":"b1","namespace":"ns"}`))
	assert.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, 1, attempts)
	assert.Zero(t, testutil.ToFloat64(h.server.metrics.terminal.WithLabelValues("Bastion")))
	assert.Equal(t, 1.0, testutil.ToFloat64(h.server.metrics.events.WithLabelValues(RefAddEventType, "done")))
}

// A create that finds the object means another writer was first: the key is reconciled again
// from live state, like after a conflict.
func TestAlreadyExistsIsReconciledAgain(t *testing.T) {
	attempts := 0
	h := newHarness(t, &recorder{fail: func(Key) error {
		attempts++
		if attempts == 1 {
			return apierrors.NewAlreadyExists(schema.GroupResource{Resource: "namespaces"}, "garden-x")
		}
		return nil
	}})
	code, body := h.send(t, event(t, RefAddEventType, `{"apiVersion":"operations.gardener.cloud/v1alpha1","kind":"Bastion","name":"b1","namespace":"ns"}`))
	assert.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, 2, attempts)
}

func TestPanicsDoNotKillTheProcess(t *testing.T) {
	rec := &recorder{fail: func(k Key) error {
		if k.Name == "boom" {
			panic("reconciler bug")
		}
		return nil
	}}
	h := newHarness(t, rec)
	code, body := h.send(t, event(t, RefAddEventType, `{"apiVersion":"operations.gardener.cloud/v1alpha1","kind":"Bastion","name":"boom","namespace":"ns"}`))
	assert.Equal(t, http.StatusInternalServerError, code)
	assert.Contains(t, body, "reconciler bug")
	code, body = h.send(t, event(t, RefAddEventType, `{"apiVersion":"core.gardener.cloud/v1beta1","kind":"Shoot","name":"panic","namespace":"ns"}`))
	assert.Equal(t, http.StatusInternalServerError, code)
	assert.Contains(t, body, "mapper bug")
	code, body = h.send(t, event(t, RefAddEventType, `{"apiVersion":"operations.gardener.cloud/v1alpha1","kind":"Bastion","name":"fine","namespace":"ns"}`))
	assert.Equal(t, http.StatusOK, code, body)
}

func TestSweepReadsFromOneListPerKind(t *testing.T) {
	var objs []client.Object
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		b := &operationsv1alpha1.Bastion{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
		b.Spec.ShootRef.Name = "shoot-" + name
		b.Spec.SeedName = ptr.To("seed-1")
		objs = append(objs, b)
	}
	for _, s := range []struct{ name, ns, seed string }{{"shoot-a", "ns", "seed-1"}, {"shoot-b", "ns", "seed-1"}, {"shoot-x", "ns", "seed-2"}, {"shoot-y", "other", "seed-1"}} {
		objs = append(objs, &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: s.ns}, Spec: gardencorev1beta1.ShootSpec{SeedName: ptr.To(s.seed)}})
	}
	rec := &recorder{readBack: true}
	h := newHarness(t, rec, objs...)

	code, body := h.send(t, event(t, PingEventType, `{"sweep":"resync"}`))
	require.Equal(t, http.StatusOK, code, body)
	assert.Len(t, rec.recorded(), 5)
	// One LIST of Bastions and one of Shoots (the fake client answers in one page): every Get
	// and the field-selected List were answered from the snapshot.
	assert.Equal(t, 2, h.readCount())
	assert.Equal(t, 5.0, testutil.ToFloat64(h.server.metrics.swept.WithLabelValues("resync")))
	for _, k := range rec.recorded() {
		assert.Equal(t, 2, rec.seedShoots[k], "shoots of seed-1 in namespace ns, from the index, for %s", k)
	}

	t.Run("a failing key is counted, the sweep answers 200", func(t *testing.T) {
		rec.fail = func(k Key) error {
			if k.Name == "c" {
				return errors.New("boom")
			}
			return nil
		}
		defer func() { rec.fail = nil }()
		before := len(rec.recorded())
		code, body := h.send(t, event(t, PingEventType, `{"sweep":"resync"}`))
		assert.Equal(t, http.StatusOK, code, body)
		assert.Len(t, rec.recorded(), before+5)
		assert.Equal(t, 1.0, testutil.ToFloat64(h.server.metrics.keyFailures.WithLabelValues("resync", "transient")))
	})
	t.Run("a failing LIST fails the sweep with 503", func(t *testing.T) {
		h.failList.Store(true)
		defer h.failList.Store(false)
		code, body := h.send(t, event(t, PingEventType, `{"sweep":"resync"}`))
		assert.Equal(t, http.StatusServiceUnavailable, code)
		assert.Contains(t, body, "etcd is away")
	})
}

// waiting is how many ticks wait for the next run.
func (r *sweepRuns) waiting() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.next == nil {
		return 0
	}
	return r.next.waiting
}

// idle says no run is in progress or waiting to start.
func (r *sweepRuns) idle() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.running && r.next == nil
}

func TestConcurrentTicksCoalesce(t *testing.T) {
	b := &operationsv1alpha1.Bastion{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}}
	rec := &recorder{block: make(chan struct{})}
	h := newHarness(t, rec, b)
	tick := func(codes chan<- int) {
		code, _ := h.send(t, event(t, PingEventType, `{"sweep":"resync"}`))
		codes <- code
	}
	first := make(chan int)
	go tick(first)
	require.Eventually(t, func() bool { return len(rec.recorded()) == 1 }, 5*time.Second, 5*time.Millisecond)
	// The first run is blocked in its reconcile, its LIST taken: three more ticks arrive. The
	// running sweep cannot answer for them, so they wait for one more run.
	later := make(chan int, 3)
	for range 3 {
		go tick(later)
	}
	require.Eventually(t, func() bool { return h.server.runs["resync"].waiting() == 3 }, 5*time.Second, 5*time.Millisecond)
	select {
	case code := <-later:
		t.Fatalf("a tick that came during the run was answered (%d) before a run that began after it", code)
	case <-time.After(100 * time.Millisecond):
	}
	close(rec.block)
	assert.Equal(t, http.StatusOK, <-first)
	for range 3 {
		assert.Equal(t, http.StatusOK, <-later)
	}
	assert.Len(t, rec.recorded(), 2, "the running sweep, and one more run for the three ticks that came meanwhile")
	assert.Equal(t, 3.0, testutil.ToFloat64(h.server.metrics.coalesced.WithLabelValues("resync")))
	rec.block = nil
	code, _ := h.send(t, event(t, PingEventType, `{"sweep":"resync"}`))
	assert.Equal(t, http.StatusOK, code)
	assert.Len(t, rec.recorded(), 3, "a tick after the runs end runs the sweep again")
}

func TestCoalescedTickAnswersForTheRunThatServedIt(t *testing.T) {
	b := &operationsv1alpha1.Bastion{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}}
	rec := &recorder{block: make(chan struct{})}
	h := newHarness(t, rec, b)
	first := make(chan int)
	go func() {
		code, _ := h.send(t, event(t, PingEventType, `{"sweep":"resync"}`))
		first <- code
	}()
	require.Eventually(t, func() bool { return len(rec.recorded()) == 1 }, 5*time.Second, 5*time.Millisecond)
	later := make(chan string)
	go func() {
		code, body := h.send(t, event(t, PingEventType, `{"sweep":"resync"}`))
		later <- fmt.Sprint(code, " ", body)
	}()
	require.Eventually(t, func() bool { return h.server.runs["resync"].waiting() == 1 }, 5*time.Second, 5*time.Millisecond)
	// The next run's LIST fails: the waiting tick is told so, and its sender retries.
	h.failList.Store(true)
	defer h.failList.Store(false)
	close(rec.block)
	assert.Equal(t, http.StatusOK, <-first)
	answer := <-later
	assert.Contains(t, answer, fmt.Sprint(http.StatusServiceUnavailable))
	assert.Contains(t, answer, "etcd is away")
}

func TestSweepOffByConfigurationCostsNothing(t *testing.T) {
	b := &operationsv1alpha1.Bastion{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}}
	rec := &recorder{}
	h := newHarness(t, rec, b)
	off := true
	h.server.fn.Sweeps[0].Off = func(any) bool { return off }
	defer func() { h.server.fn.Sweeps[0].Off = nil }()

	code, body := h.send(t, event(t, PingEventType, `{"sweep":"resync"}`))
	assert.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, 1.0, testutil.ToFloat64(h.server.metrics.events.WithLabelValues(metricEventType(PingEventType), "off")))
	assert.Zero(t, h.readCount(), "not a single LIST")
	assert.Empty(t, rec.recorded())

	off = false
	code, body = h.send(t, event(t, PingEventType, `{"sweep":"resync"}`))
	assert.Equal(t, http.StatusOK, code, body)
	assert.Len(t, rec.recorded(), 1)
}

// With ReleaseMemoryAfterSweep every sweep run ends by returning the heap's free memory to the
// OS, whether it succeeded or not; events do not.
func TestSweepRunsReleaseMemory(t *testing.T) {
	h := newHarness(t, &recorder{}, &operationsv1alpha1.Bastion{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}})
	require.Nil(t, h.server.releaseMemory, "not without the option")
	released := 0
	h.server.releaseMemory = func() { released++ }

	code, body := h.send(t, event(t, RefAddEventType, `{"apiVersion":"operations.gardener.cloud/v1alpha1","kind":"Bastion","name":"a","namespace":"ns"}`))
	require.Equal(t, http.StatusOK, code, body)
	assert.Zero(t, released, "not after an event")
	code, body = h.send(t, event(t, PingEventType, `{"sweep":"resync"}`))
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, 1, released, "after a sweep run")
	h.failList.Store(true)
	code, body = h.send(t, event(t, PingEventType, `{"sweep":"resync"}`))
	require.Equal(t, http.StatusServiceUnavailable, code, body)
	assert.Equal(t, 2, released, "after a failed one too")

	s, err := NewServer(testFunction(&recorder{}), Env{Source: fake.NewClientBuilder().WithScheme(scheme.Gardener).Build(), Clock: clock.RealClock{},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Registry: prometheus.NewRegistry()}, Options{ReleaseMemoryAfterSweep: true})
	require.NoError(t, err)
	assert.NotNil(t, s.releaseMemory, "with the option")
}

// A related kind that is Optional and that the cluster does not serve holds nothing, also
// where the client maps the kind from its scheme and the server answers 404 (a shoot without
// Gardener's ManagedResource CRD, listed by the garbage collector); one that is not Optional
// fails the sweep.
func TestSweepOptionalKindNotServed(t *testing.T) {
	b := &operationsv1alpha1.Bastion{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}}
	rec := &recorder{}
	h := newHarness(t, rec, b)
	h.unserved.Store(true)

	code, body := h.send(t, event(t, PingEventType, `{"sweep":"resync"}`))
	assert.Equal(t, http.StatusServiceUnavailable, code, "not optional: %s", body)
	assert.Empty(t, rec.recorded())

	h.server.fn.Sweeps[0].Related[0].Optional = true
	code, body = h.send(t, event(t, PingEventType, `{"sweep":"resync"}`))
	assert.Equal(t, http.StatusOK, code, body)
	assert.Len(t, rec.recorded(), 1, "the Bastion reconciled without Shoots")
}

func TestEventTimeoutAsksForARetry(t *testing.T) {
	rec := &recorder{block: make(chan struct{})}
	defer close(rec.block)
	h := newHarness(t, rec)
	h.server.handlers["main"] = HandlerFunc(func(ctx context.Context, _ Request) error { <-ctx.Done(); return ctx.Err() })
	h.server.opts.EventTimeout = 50 * time.Millisecond
	code, body := h.send(t, event(t, RefAddEventType, `{"apiVersion":"operations.gardener.cloud/v1alpha1","kind":"Bastion","name":"b","namespace":"ns"}`))
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "context deadline exceeded")
}

func TestValidateRejectsInconsistentDeclarations(t *testing.T) {
	fn := testFunction(&recorder{})
	fn.Watches = append(fn.Watches, Watch{Kind: NewKind(corev1.SchemeGroupVersion, "Secret", "secrets"), Reconciler: "main"}, Watch{Kind: bastionKind, Reconciler: "nope"},
		Watch{Kind: bastionKind, Cluster: Target, Reconciler: "main"})
	fn.Sweeps = append(fn.Sweeps, Sweep{Name: "resync", Schedule: "", Reconciler: "main", Primary: List{Kind: shootKind}},
		Sweep{Name: "elsewhere", Schedule: "* * * * *", Reconciler: "main", Primary: List{Kind: bastionKind, Cluster: Target}})
	err := fn.Validate()
	require.Error(t, err)
	for _, want := range []string{
		`watch of Secret for "main": a watch of another kind than the reconciler's needs a mapper`,
		`watch of Bastion for "nope": no such reconciler`,
		"sweep resync: declared twice", "sweep resync: needs a schedule or a period, not both",
		`sweep resync: primary kind Shoot on source is not reconciler "main"'s kind Bastion on source`,
		`watch of Bastion for "main": a watch on another cluster than the reconciler's needs a mapper`,
		`sweep elsewhere: primary kind Bastion on target is not reconciler "main"'s kind Bastion on source`,
	} {
		assert.ErrorContains(t, err, want)
	}
}

func withExtension(e cloudevents.Event, name, value string) cloudevents.Event {
	e.SetExtension(name, value)
	return e
}

// A waiting tick's SweepTimeout counts from its arrival: the run it waits for starts with what
// is left, so that no request outlasts the timeout (nor Knative's revision timeout).
func TestCoalescedTickWaitsWithinItsSweepTimeout(t *testing.T) {
	b := &operationsv1alpha1.Bastion{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}}
	rec := &recorder{block: make(chan struct{})}
	h := newHarness(t, rec, b)
	h.server.opts.SweepTimeout = 100 * time.Millisecond
	first := make(chan int)
	go func() {
		code, _ := h.send(t, event(t, PingEventType, `{"sweep":"resync"}`))
		first <- code
	}()
	require.Eventually(t, func() bool { return len(rec.recorded()) == 1 }, 5*time.Second, 5*time.Millisecond)
	later := make(chan string)
	go func() {
		code, body := h.send(t, event(t, PingEventType, `{"sweep":"resync"}`))
		later <- fmt.Sprint(code, " ", body)
	}()
	require.Eventually(t, func() bool { return h.server.runs["resync"].waiting() == 1 }, 5*time.Second, 5*time.Millisecond)
	time.Sleep(200 * time.Millisecond) // the waiting tick's timeout passes while the first run holds
	close(rec.block)
	<-first
	answer := <-later
	assert.Contains(t, answer, fmt.Sprint(http.StatusServiceUnavailable), "its time ran out waiting: the sender retries")
	assert.Contains(t, answer, context.DeadlineExceeded.Error())
	require.Eventually(t, h.server.runs["resync"].idle, 5*time.Second, 5*time.Millisecond)
	assert.Len(t, rec.recorded(), 1, "nothing reconciled on its behalf after its time ran out")
}

// A run is not a tick's: when the request of the tick that started it ends (its sender's bound
// counts time queued in front of the function too), the run goes on within its own
// SweepTimeout, and its keys are reconciled with a live context.
func TestSweepRunOutlivesItsTicksRequest(t *testing.T) {
	b := &operationsv1alpha1.Bastion{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}}
	rec := &recorder{block: make(chan struct{})}
	h := newHarness(t, rec, b)
	reconciled := make(chan error, 1)
	h.server.handlers["main"] = HandlerFunc(func(ctx context.Context, req Request) error {
		err := rec.Reconcile(ctx, req)
		reconciled <- ctx.Err()
		return err
	})
	ctx, senderGone := context.WithCancel(context.Background())
	answered := make(chan error)
	go func() { answered <- h.server.Sweep(ctx, "resync") }()
	require.Eventually(t, func() bool { return len(rec.recorded()) == 1 }, 5*time.Second, 5*time.Millisecond)
	senderGone()
	err := <-answered
	require.ErrorIs(t, err, errStoppedWaiting)
	require.ErrorIs(t, err, context.Canceled)
	close(rec.block)
	require.NoError(t, <-reconciled, "the run's context outlives the request's")
	require.Eventually(t, h.server.runs["resync"].idle, 5*time.Second, 5*time.Millisecond)
	var done dto.Metric
	require.NoError(t, h.server.metrics.sweeps.WithLabelValues("resync", "done").(prometheus.Metric).Write(&done))
	assert.Equal(t, uint64(1), done.GetHistogram().GetSampleCount(), "the run ended as done")
}

// Events of one key that arrive while its reconcile runs share one more reconcile, as a work
// queue holds a key once however often it is added.
func TestEventsWaitingForAKeyShareOneReconcile(t *testing.T) {
	rec := &recorder{block: make(chan struct{})}
	h := newHarness(t, rec)
	ev := Event{Cluster: Source, Kind: bastionKind.GroupVersionKind, Key: Key{Namespace: "garden-dev", Name: "b1"}}
	errs := make(chan error, 6)
	go func() { errs <- h.server.HandleEvent(context.Background(), ev) }()
	require.Eventually(t, func() bool { return len(rec.recorded()) == 1 }, 5*time.Second, time.Millisecond)
	for range 5 {
		go func() { errs <- h.server.HandleEvent(context.Background(), ev) }()
	}
	require.Eventually(t, func() bool { return h.server.keys.waiting(reconciledKey("main", "", ev.Key)) == 6 }, 5*time.Second, time.Millisecond)
	close(rec.block)
	for range 6 {
		require.NoError(t, <-errs)
	}
	assert.Len(t, rec.recorded(), 2, "the running reconcile and one for the five that waited")
	assert.Equal(t, 4.0, testutil.ToFloat64(h.server.metrics.coalescedKeys.WithLabelValues("main")))
}

// seedConfig is the Config of a function scoped to one seed.
type seedConfig struct {
	Seed string `envconfig:"SEED_NAME"`
}

// scopedFunction is testFunction narrowed to the Bastions of seed a, as gardenlet's part is to
// its seed's installations.
func scopedFunction(rec *recorder) *Function {
	fn := testFunction(rec)
	fn.Sweeps[0].Related = nil
	fn.WorksOnGarden = true
	fn.GardenInputs = map[string]string{"SEED_NAME": "seedName"}
	fn.Config = &seedConfig{}
	fn.Scopes = []Scope{{Kind: bastionKind, Field: "spec.seedName", Setting: "SEED_NAME"}}
	return fn
}

// A scope narrows on the server every LIST the function makes of its kind (its sweeps', its
// mappers', its reconcilers'), added to their own field selectors, and drops events of objects
// outside it before any read: gardenlet's part sees its seed's installations only.
func TestScopeNarrowsListsAndEvents(t *testing.T) {
	bastion := func(name, seed string) client.Object {
		b := &operationsv1alpha1.Bastion{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
		b.Spec.SeedName = ptr.To(seed)
		return b
	}
	var selectors []string
	var mu sync.Mutex
	c := interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme.Gardener).WithObjects(bastion("a1", "a"), bastion("b1", "b"), bastion("a2", "a")).
		WithIndex(&operationsv1alpha1.Bastion{}, "spec.seedName", func(o client.Object) []string {
			return []string{ptr.Deref(o.(*operationsv1alpha1.Bastion).Spec.SeedName, "")}
		}).WithIndex(&operationsv1alpha1.Bastion{}, "metadata.name", func(o client.Object) []string { return []string{o.GetName()} }).
		Build(), interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		o := (&client.ListOptions{}).ApplyOptions(opts)
		mu.Lock()
		selectors = append(selectors, o.FieldSelector.String())
		mu.Unlock()
		return c.List(ctx, list, opts...)
	}})
	rec := &recorder{seedShoots: map[Key]int{}}
	fn := scopedFunction(rec)
	var mapped []string
	fn.Watches[1].Map = func(ctx context.Context, r client.Reader, ev Event) ([]Key, error) {
		// A mapper's own field selector, within the scope: b1 is seed b's.
		list := &operationsv1alpha1.BastionList{}
		if err := r.List(ctx, list, client.MatchingFields{"metadata.name": "b1"}); err != nil {
			return nil, err
		}
		for _, b := range list.Items {
			mapped = append(mapped, b.Name)
		}
		return nil, nil
	}
	s, err := NewServer(fn, Env{Source: c, Clock: clock.RealClock{}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Registry: prometheus.NewRegistry(), Config: &seedConfig{Seed: "a"}},
		Options{EventTimeout: 5 * time.Second, SweepTimeout: 5 * time.Second, SweepConcurrency: 1, ListPageSize: 1, ConflictRetries: 1})
	require.NoError(t, err)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)

	code, body := postBinary(t, srv.URL, event(t, PingEventType, `{"sweep":"resync"}`))
	require.Equal(t, http.StatusOK, code, body)
	assert.ElementsMatch(t, []Key{{Namespace: "ns", Name: "a1"}, {Namespace: "ns", Name: "a2"}}, rec.recorded(), "page by page, seed a's only")
	assert.NotEmpty(t, selectors)
	for _, sel := range selectors {
		assert.Equal(t, "spec.seedName=a", sel)
	}

	selectors = nil
	code, body = postBinary(t, srv.URL, event(t, ResourceUpdateEventType, `{"apiVersion":"core.gardener.cloud/v1beta1","kind":"Shoot","metadata":{"name":"s","namespace":"ns"}}`))
	require.Equal(t, http.StatusOK, code, body)
	assert.Empty(t, mapped, "the mapper's LIST is the scope's too")
	assert.Equal(t, []string{"metadata.name=b1,spec.seedName=a"}, selectors)

	before := len(rec.recorded())
	other := `{"apiVersion":"operations.gardener.cloud/v1alpha1","kind":"Bastion","metadata":{"name":"b1","namespace":"ns"},"spec":{"seedName":"b"}}`
	code, body = postBinary(t, srv.URL, event(t, ResourceUpdateEventType, other))
	require.Equal(t, http.StatusOK, code, body)
	assert.Len(t, rec.recorded(), before, "seed b's Bastion is out of scope")
	assert.Equal(t, 1.0, testutil.ToFloat64(s.metrics.filtered.WithLabelValues("main", "Bastion")))
	own := `{"apiVersion":"operations.gardener.cloud/v1alpha1","kind":"Bastion","metadata":{"name":"a1","namespace":"ns"},"spec":{"seedName":"a"}}`
	code, body = postBinary(t, srv.URL, event(t, ResourceUpdateEventType, own))
	require.Equal(t, http.StatusOK, code, body)
	assert.Len(t, rec.recorded(), before+1)
}

// A scope's setting must reach the function and its source alike: a garden input the Config
// holds; and an empty one would select nothing, so the function does not start.
func TestScopesAreValidated(t *testing.T) {
	rec := &recorder{seedShoots: map[Key]int{}}
	fn := scopedFunction(rec)
	fn.GardenInputs = nil
	assert.ErrorContains(t, fn.Validate(), "none of the garden inputs")
	fn = scopedFunction(rec)
	fn.Config = &struct{}{}
	assert.ErrorContains(t, fn.Validate(), "no string field")
	fn = scopedFunction(rec)
	fn.WorksOnGarden = false
	assert.ErrorContains(t, fn.Validate(), "only a function that works on the garden")
	fn = scopedFunction(rec)
	fn.Scopes = append(fn.Scopes, fn.Scopes[0])
	assert.ErrorContains(t, fn.Validate(), "more than one")
	_, err := NewServer(scopedFunction(rec), Env{Source: fake.NewClientBuilder().WithScheme(scheme.Gardener).Build(), Clock: clock.RealClock{},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Registry: prometheus.NewRegistry(), Config: &seedConfig{}}, Options{})
	assert.ErrorContains(t, err, "SEED_NAME is not set")
}
