package function

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	operationsv1alpha1 "github.com/gardener/gardener/pkg/apis/operations/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	knsources "knative.dev/eventing/pkg/apis/sources"
	sourcesv1 "knative.dev/eventing/pkg/apis/sources/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gardener-knative/gardener-knative/pkg/scheme"
	"github.com/gardener-knative/gardener-knative/sources"
)

var (
	bastionGK = schema.GroupKind{Group: "operations.gardener.cloud", Kind: "Bastion"}
	shootGK   = schema.GroupKind{Group: "core.gardener.cloud", Kind: "Shoot"}
)

// recorder is a Reconciler that records its keys and reads each Bastion and its Shoot.
type recorder struct {
	mu       sync.Mutex
	keys     []Key
	fail     func(Key) error
	readBack bool
}

func (r *recorder) Reconcile(ctx context.Context, reader client.Reader, key Key) error {
	r.mu.Lock()
	r.keys = append(r.keys, key)
	r.mu.Unlock()
	if r.readBack {
		b := &operationsv1alpha1.Bastion{}
		if err := reader.Get(ctx, key, b); err != nil {
			return client.IgnoreNotFound(err)
		}
		if err := reader.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: b.Spec.ShootRef.Name}, &gardencorev1beta1.Shoot{}); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	if r.fail != nil {
		return r.fail(key)
	}
	return nil
}

func (r *recorder) recorded() []Key {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Key(nil), r.keys...)
}

var testFeed = sources.Feed{
	Function: "test",
	Resources: []sources.Resource{
		{APIVersion: "operations.gardener.cloud/v1alpha1", Kind: "Bastion", Plural: "bastions"},
		{APIVersion: "core.gardener.cloud/v1beta1", Kind: "Shoot", Plural: "shoots"},
	},
	Pings: []sources.Ping{{Sweep: "resync", Schedule: "* * * * *"}},
}

func testFunction() Function {
	return Function{
		Feed: testFeed,
		Watches: map[schema.GroupKind]Mapper{
			bastionGK: MapToSelf,
			// Shoots map to a Bastion of the same name, to see mapping at work.
			shootGK: func(_ context.Context, _ client.Reader, obj Object) ([]Key, error) {
				if obj.Key.Name == "panic" {
					panic("mapper bug")
				}
				return []Key{{Namespace: obj.Key.Namespace, Name: "bastion-of-" + obj.Key.Name}}, nil
			},
		},
		Sweeps: map[string]Sweep{"resync": {Primary: &operationsv1alpha1.BastionList{}, Related: []client.ObjectList{&gardencorev1beta1.ShootList{}}}},
		New:    func(Deps) (Reconciler, error) { return nil, errors.New("not used in tests") },
	}
}

type harness struct {
	server   *Server
	http     *httptest.Server
	rec      *recorder
	registry *prometheus.Registry
	reads    *int
	mu       *sync.Mutex
}

func newHarness(t *testing.T, rec *recorder, objs ...client.Object) *harness {
	t.Helper()
	var mu sync.Mutex
	reads := 0
	count := func() { mu.Lock(); reads++; mu.Unlock() }
	c := fake.NewClientBuilder().WithScheme(scheme.Gardener).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			count()
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			count()
			return c.List(ctx, list, opts...)
		},
	}).Build()
	reg := prometheus.NewRegistry()
	opts := Options{EventTimeout: 5e9, SweepTimeout: 5e9, SweepConcurrency: 4, ListPageSize: 2, ConflictRetries: 2}
	s, err := NewServer(testFunction(), rec, c, scheme.Gardener, opts, slog.New(slog.NewTextHandler(io.Discard, nil)), reg)
	require.NoError(t, err)
	h := &harness{server: s, http: httptest.NewServer(s), rec: rec, registry: reg, reads: &reads, mu: &mu}
	t.Cleanup(h.http.Close)
	return h
}

func (h *harness) readCount() int { h.mu.Lock(); defer h.mu.Unlock(); return *h.reads }

// send posts the event in binary mode and returns the status code and body.
func (h *harness) send(t *testing.T, e cloudevents.Event) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.http.URL, bytes.NewReader(e.Data()))
	require.NoError(t, err)
	req.Header.Set("Ce-Specversion", "1.0")
	req.Header.Set("Ce-Id", e.ID())
	req.Header.Set("Ce-Source", e.Source())
	req.Header.Set("Ce-Type", e.Type())
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

	assert.Equal(t, []Key{{Namespace: "garden-dev", Name: "b1"}, {Namespace: "garden-dev", Name: "bastion-of-s1"}}, h.rec.recorded())
	assert.Equal(t, 1.0, testutil.ToFloat64(h.server.metrics.events.WithLabelValues(RefUpdateEventType, "done")))
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
		objs = append(objs, b)
	}
	objs = append(objs, &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: "shoot-a", Namespace: "ns"}})
	rec := &recorder{readBack: true}
	h := newHarness(t, rec, objs...)

	code, body := h.send(t, event(t, PingEventType, `{"sweep":"resync"}`))
	require.Equal(t, http.StatusOK, code, body)
	assert.Len(t, rec.recorded(), 5)
	// One LIST of Bastions, one of Shoots, and no Get reached the API. (The fake client does
	// not paginate; the integration tests count pages against a real kube-apiserver.)
	assert.Equal(t, 2, h.readCount())
	assert.Equal(t, 5.0, testutil.ToFloat64(h.server.metrics.swept.WithLabelValues("resync")))

	t.Run("a failing key fails the sweep with 503 after every key was tried", func(t *testing.T) {
		rec.fail = func(k Key) error {
			if k.Name == "c" {
				return errors.New("boom")
			}
			return nil
		}
		before := len(rec.recorded())
		code, body := h.send(t, event(t, PingEventType, `{"sweep":"resync"}`))
		assert.Equal(t, http.StatusServiceUnavailable, code)
		assert.Contains(t, body, "1 of 5 objects failed")
		assert.Len(t, rec.recorded(), before+5)
	})
}

func TestValidateRejectsAFunctionThatDoesNotMatchItsFeed(t *testing.T) {
	fn := testFunction()
	delete(fn.Watches, shootGK)
	fn.Watches[schema.GroupKind{Kind: "Secret"}] = MapToSelf
	fn.Sweeps["extra"] = Sweep{Primary: &operationsv1alpha1.BastionList{}}
	err := fn.Validate()
	require.Error(t, err)
	for _, want := range []string{"watches Shoot.core.gardener.cloud but the function has no mapper", "maps Secret", `sweep "extra" but its feed never pings it`} {
		assert.ErrorContains(t, err, want)
	}
}
