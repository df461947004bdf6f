package clustersource

import (
	"context"
	"encoding/json"
	"io"
	"sync"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/cloudevents/sdk-go/v2/protocol"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	sources "knative.dev/eventing/pkg/apis/sources"

	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// recordingSink keeps what it is sent.
type recordingSink struct {
	cloudevents.Client
	mu   sync.Mutex
	sent []cloudevents.Event
}

func (s *recordingSink) Send(_ context.Context, e cloudevents.Event) protocol.Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = append(s.sent, e)
	return nil
}

func (s *recordingSink) events() []cloudevents.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]cloudevents.Event(nil), s.sent...)
}

// A watcher sends Knative's events of what changes after it started, in the mode it is given,
// for the objects its selector selects; a watch the server ends is resumed where it left off,
// nothing lost.
func TestWatcherSendsKnativesEvents(t *testing.T) {
	env, err := testenv.Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = env.Stop() })
	ctx := context.Background()
	clients, err := newClusterClients(env.Config)
	require.NoError(t, err)
	selected := map[string]string{"watched": "yes"}
	before := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "before", Labels: selected}}
	require.NoError(t, env.Client.Create(ctx, before))

	start := func(ref bool) *recordingSink {
		sink := &recordingSink{}
		w := &watcher{res: clients.resource(configMaps), selector: "watched=yes", fieldSelector: "metadata.name!=excluded", source: env.Config.Host, name: "target-clusters",
			ref: ref, sink: sink, log: zap.NewNop().Sugar(), watchTimeout: time.Second}
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); w.run(runCtx) }()
		t.Cleanup(func() { cancel(); <-done })
		return sink
	}
	resources, references := start(false), start(true)
	time.Sleep(500 * time.Millisecond) // both watch

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "changed", Labels: selected}}
	require.NoError(t, env.Client.Create(ctx, cm))
	require.NoError(t, env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "not-selected"}}))
	require.NoError(t, env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "excluded", Labels: selected}}))
	// Updates across several of the server's watch ends (each watch asks for 1 to 2 s).
	const updates = 12
	for i := range updates {
		cm.Data = map[string]string{"i": string(rune('a' + i))}
		require.NoError(t, env.Client.Update(ctx, cm))
		time.Sleep(300 * time.Millisecond)
	}
	require.NoError(t, env.Client.Delete(ctx, cm))

	want := []string{sources.ApiServerSourceAddEventType}
	for range updates {
		want = append(want, sources.ApiServerSourceUpdateEventType)
	}
	want = append(want, sources.ApiServerSourceDeleteEventType)
	require.Eventually(t, func() bool { return len(resources.events()) >= len(want) }, 10*time.Second, 50*time.Millisecond)
	var types []string
	for i, e := range resources.events() {
		types = append(types, e.Type())
		assert.Equal(t, env.Config.Host, e.Source())
		assert.Equal(t, "/apis/v1/namespaces/default/configmaps/changed", e.Subject(), "only the object selected by labels and fields that changed")
		assert.Equal(t, "ConfigMap", e.Extensions()["kind"])
		assert.Equal(t, "v1", e.Extensions()["apiversion"])
		obj := &corev1.ConfigMap{}
		require.NoError(t, json.Unmarshal(e.Data(), obj))
		if i > 0 && i <= updates {
			assert.Equal(t, string(rune('a'+i-1)), obj.Data["i"], "update %d carries the object as it was then", i)
		}
	}
	assert.Equal(t, want, types, "every change once, in order, none of what existed before")

	require.Eventually(t, func() bool { return len(references.events()) >= len(want) }, 10*time.Second, 50*time.Millisecond)
	add := references.events()[0]
	assert.Equal(t, sources.ApiServerSourceAddRefEventType, add.Type())
	ref := &corev1.ObjectReference{}
	require.NoError(t, json.Unmarshal(add.Data(), ref))
	assert.Equal(t, corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: "changed"}, *ref, "a reference, not the object")

	t.Run("a resource the server does not serve is its 404", func(t *testing.T) {
		_, err := clients.resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}).Watch(ctx, metav1.ListOptions{})
		assert.True(t, apierrors.IsNotFound(err), "%v", err)
	})
}

// Where the server no longer has the watch's place (410 Gone), the watcher begins anew from a
// LIST; a resource the cluster does not serve is asked for again until it is served.
func TestWatcherBeginsAnewWhereItsPlaceIsGone(t *testing.T) {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{configMaps: "ConfigMapList"})
	var mu sync.Mutex
	lists, watches := 0, 0
	dyn.PrependReactor("list", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		lists++
		return false, nil, nil
	})
	dyn.PrependWatchReactor("configmaps", func(clienttesting.Action) (bool, watch.Interface, error) {
		mu.Lock()
		defer mu.Unlock()
		watches++
		w := watch.NewFakeWithChanSize(1, false)
		if watches == 1 {
			w.Error(&apierrors.NewResourceExpired("too old resource version").ErrStatus)
		}
		return true, w, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &watcher{res: channelResource{dyn.Resource(configMaps)}, sink: &recordingSink{}, log: zap.NewNop().Sugar()}
	go w.run(ctx)
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return watches == 2 }, 5*time.Second, 10*time.Millisecond)
	mu.Lock()
	assert.Equal(t, 2, lists, "a LIST to begin, and one to begin anew after the 410")
	mu.Unlock()

	// A resource the cluster does not serve is asked for again, and watched once it is served.
	served := false
	notServed := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{configMaps: "ConfigMapList"})
	notServed.PrependReactor("list", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		lists++
		if !served {
			return true, nil, apierrors.NewNotFound(configMaps.GroupResource(), "")
		}
		return false, nil, nil
	})
	notServed.PrependWatchReactor("configmaps", func(clienttesting.Action) (bool, watch.Interface, error) {
		mu.Lock()
		defer mu.Unlock()
		watches++
		return true, watch.NewFakeWithChanSize(1, false), nil
	})
	mu.Lock()
	lists, watches = 0, 0
	mu.Unlock()
	go (&watcher{res: channelResource{notServed.Resource(configMaps)}, sink: &recordingSink{}, log: zap.NewNop().Sugar(), unservedRecheck: 10 * time.Millisecond}).run(ctx)
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return lists >= 3 }, 5*time.Second, 5*time.Millisecond, "asked again")
	mu.Lock()
	assert.Zero(t, watches, "not watched while not served")
	served = true
	mu.Unlock()
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return watches == 1 }, 5*time.Second, 5*time.Millisecond, "watched once served")
}

// A server that ends every watch at once without an error gets its watches backed off, not a loop
// of requests: the next watch waits for the backoff's time (from 0.8 s, with jitter up to twice
// that) to pass.
func TestWatcherBacksOffWatchesThatEndAtOnce(t *testing.T) {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{configMaps: "ConfigMapList"})
	var mu sync.Mutex
	watches := 0
	dyn.PrependWatchReactor("configmaps", func(clienttesting.Action) (bool, watch.Interface, error) {
		mu.Lock()
		defer mu.Unlock()
		watches++
		w := watch.NewFake()
		w.Stop()
		return true, w, nil
	})
	count := func() int { mu.Lock(); defer mu.Unlock(); return watches }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fake := clocktesting.NewFakeClock(time.Now())
	go (&watcher{res: channelResource{dyn.Resource(configMaps)}, sink: &recordingSink{}, log: zap.NewNop().Sugar(), clock: fake}).run(ctx)
	require.Eventually(t, func() bool { return count() == 1 && fake.HasWaiters() }, 5*time.Second, time.Millisecond, "the first watch ended; the watcher waits")
	fake.Step(700 * time.Millisecond)
	require.Never(t, func() bool { return count() > 1 }, 100*time.Millisecond, 10*time.Millisecond, "no new watch before the backoff's 0.8 s")
	fake.Step(time.Second)
	require.Eventually(t, func() bool { return count() == 2 }, 5*time.Second, time.Millisecond, "the next watch once the backoff passed")
}

// channelResource serves a watcher from a client with watch channels (client-go's fake dynamic
// client, whose reactors script the server's answers): each watch's channel read as a stream.
type channelResource struct{ dynamic.ResourceInterface }

func (r channelResource) Watch(ctx context.Context, opts metav1.ListOptions) (stream, error) {
	w, err := r.ResourceInterface.Watch(ctx, opts)
	if err != nil {
		return nil, err
	}
	return channelStream{w}, nil
}

type channelStream struct{ watch.Interface }

func (s channelStream) Next() (watch.Event, error) {
	e, ok := <-s.ResultChan()
	if !ok {
		return watch.Event{}, io.EOF
	}
	return e, nil
}

func (s channelStream) Close() { s.Stop() }
