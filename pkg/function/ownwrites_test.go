package function

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	operationsv1alpha1 "github.com/gardener/gardener/pkg/apis/operations/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gardener-knative/gardener-knative/pkg/scheme"
)

// annotator reconciles a Bastion by counting its reconciles in an annotation (a write of its
// own each time); fail makes it fail after the write.
type annotator struct {
	writer     Writer
	reconciles atomic.Int32
	fail       atomic.Bool
}

func (a *annotator) Reconcile(ctx context.Context, req Request) error {
	n := a.reconciles.Add(1)
	b := &operationsv1alpha1.Bastion{}
	if err := req.Reader.Get(ctx, req.Key, b); err != nil {
		return err
	}
	if _, err := a.writer.Patch(ctx, b, func() { metav1.SetMetaDataAnnotation(&b.ObjectMeta, "reconciles", strconv.Itoa(int(n))) }); err != nil {
		return err
	}
	if a.fail.Load() {
		return errors.New("failed after its write")
	}
	return nil
}

func ownWritesServer(t *testing.T, c client.Client) (*Server, *annotator) {
	t.Helper()
	a := &annotator{}
	fn := &Function{
		Name: "test",
		Reconcilers: []Reconciler{{Name: "main", For: bastionKind, New: func(d Deps) (Handler, error) {
			a.writer = d.Source.Writer
			return a, nil
		}}},
		Watches: []Watch{{Kind: bastionKind, Reconciler: "main"}},
	}
	opts := Options{EventTimeout: 5 * time.Second, SweepTimeout: 5 * time.Second, SweepConcurrency: 1, ListPageSize: 10, ConflictRetries: 2}
	s, err := NewServer(fn, Env{Source: c, Clock: clock.RealClock{}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Registry: prometheus.NewRegistry()}, opts)
	require.NoError(t, err)
	return s, a
}

// updateEvent is the event a watch sends of the object as the API server holds it now.
func updateEvent(t *testing.T, c client.Client, key Key) Event {
	t.Helper()
	b := &operationsv1alpha1.Bastion{}
	require.NoError(t, c.Get(context.Background(), key, b))
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(b)
	require.NoError(t, err)
	return Event{Cluster: Source, Kind: bastionKind.GroupVersionKind, Key: key, Object: &unstructured.Unstructured{Object: raw}}
}

func TestEventOfAReconcilesOwnWriteIsNotReconciledAgain(t *testing.T) {
	ctx := context.Background()
	key := Key{Namespace: "garden-dev", Name: "b1"}
	c := fake.NewClientBuilder().WithScheme(scheme.Gardener).WithObjects(&operationsv1alpha1.Bastion{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}).Build()
	s, a := ownWritesServer(t, c)
	echoes := func() float64 { return testutil.ToFloat64(s.metrics.ownWrites.WithLabelValues("main", "Bastion")) }

	first := updateEvent(t, c, key)
	require.NoError(t, s.HandleEvent(ctx, first))
	require.EqualValues(t, 1, a.reconciles.Load())

	require.NoError(t, s.HandleEvent(ctx, updateEvent(t, c, key)), "the echo of the reconcile's write")
	assert.EqualValues(t, 1, a.reconciles.Load(), "the version the reconcile wrote is not reconciled again")
	assert.Equal(t, 1.0, echoes())

	require.NoError(t, s.HandleEvent(ctx, first), "a duplicate of the first event")
	assert.EqualValues(t, 2, a.reconciles.Load(), "a version the function did not write is reconciled")

	changeBySomeoneElse := func(t *testing.T, label string) {
		b := &operationsv1alpha1.Bastion{}
		require.NoError(t, c.Get(ctx, key, b))
		b.Labels = map[string]string{"changed": label}
		require.NoError(t, c.Update(ctx, b))
	}
	t.Run("someone else's change is reconciled", func(t *testing.T) {
		changeBySomeoneElse(t, "once")
		before := a.reconciles.Load()
		require.NoError(t, s.HandleEvent(ctx, updateEvent(t, c, key)))
		assert.Equal(t, before+1, a.reconciles.Load())
	})
	t.Run("a deletion is reconciled whatever version it carries", func(t *testing.T) {
		before := a.reconciles.Load()
		require.NoError(t, s.HandleEvent(ctx, updateEvent(t, c, key)), "the echo")
		require.Equal(t, before, a.reconciles.Load())
		deleted := updateEvent(t, c, key)
		deleted.Deleted = true
		require.NoError(t, s.HandleEvent(ctx, deleted))
		assert.Equal(t, before+1, a.reconciles.Load())
	})
	t.Run("the write of a failed reconcile is reconciled", func(t *testing.T) {
		changeBySomeoneElse(t, "twice")
		a.fail.Store(true)
		require.Error(t, s.HandleEvent(ctx, updateEvent(t, c, key)))
		a.fail.Store(false)
		before, echoed := a.reconciles.Load(), echoes()
		require.NoError(t, s.HandleEvent(ctx, updateEvent(t, c, key)), "the event of the failed reconcile's write")
		assert.Equal(t, before+1, a.reconciles.Load())
		assert.Equal(t, echoed, echoes())
	})
	t.Run("another tenant's object of the same name and version is not the echo", func(t *testing.T) {
		ev := updateEvent(t, c, key)
		w := s.ownWriteOf(ev)
		require.NotNil(t, w)
		reconciled := reconciledKey("main", "", key)
		require.True(t, s.ownWrites.wrote(reconciled, *w), "the echo, as the runtime compares it")
		onTarget := *w
		onTarget.cluster, onTarget.tenant = Target, "shoot--a--b"
		assert.False(t, s.ownWrites.wrote(reconciled, onTarget))
		assert.False(t, s.ownWrites.wrote(reconciledKey("main", "shoot--a--b", key), *w), "another tenant's key")
	})
}

// An echo that arrives while the reconcile that wrote it still runs waits for it (the key lock)
// and is then recognised.
func TestEchoArrivingDuringItsReconcileWaitsAndIsRecognised(t *testing.T) {
	ctx := context.Background()
	key := Key{Namespace: "garden-dev", Name: "b1"}
	c := fake.NewClientBuilder().WithScheme(scheme.Gardener).WithObjects(&operationsv1alpha1.Bastion{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}).Build()
	s, a := ownWritesServer(t, c)
	written, release := make(chan Event), make(chan struct{})
	blocking := &blockingAfterWrite{annotator: a, written: written, release: release, c: c}
	s.handlers["main"] = blocking
	done := make(chan error)
	go func() { done <- s.HandleEvent(ctx, updateEvent(t, c, key)) }()
	echo := <-written
	echoDone := make(chan error)
	go func() { echoDone <- s.HandleEvent(ctx, echo) }()
	require.Eventually(t, func() bool { return s.keys.waiting(reconciledKey("main", "", key)) == 2 }, 5*time.Second, time.Millisecond,
		"the echo waits for the reconcile that wrote it")
	close(release)
	require.NoError(t, <-done)
	require.NoError(t, <-echoDone)
	assert.EqualValues(t, 1, a.reconciles.Load())
	assert.Equal(t, 1.0, testutil.ToFloat64(s.metrics.ownWrites.WithLabelValues("main", "Bastion")))
}

// blockingAfterWrite sends the event of its write and waits before it returns, as a reconcile
// that goes on after a write does while the write's event is delivered.
type blockingAfterWrite struct {
	*annotator
	c       client.Client
	written chan Event
	release chan struct{}
}

func (b *blockingAfterWrite) Reconcile(ctx context.Context, req Request) error {
	if err := b.annotator.Reconcile(ctx, req); err != nil {
		return err
	}
	bastion := &operationsv1alpha1.Bastion{}
	if err := b.c.Get(ctx, req.Key, bastion); err != nil {
		return err
	}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(bastion)
	if err != nil {
		return err
	}
	select {
	case b.written <- Event{Cluster: Source, Kind: bastionKind.GroupVersionKind, Key: req.Key, Object: &unstructured.Unstructured{Object: raw}}:
		<-b.release
	default: // only the first reconcile's write is sent
	}
	return nil
}

// The memory holds digests: every field of the key and the version tells two writes apart, also
// where their fields differ only in where one ends and the next begins.
func TestOwnWritesTellEveryFieldApart(t *testing.T) {
	base := ownWrite{cluster: Target, tenant: "shoot--p--a", kind: schema.GroupKind{Group: "apps", Kind: "Deployment"}, key: Key{Namespace: "ns", Name: "name"}, version: "42"}
	o := newOwnWrites()
	o.add("main/ns/name", []ownWrite{base})
	assert.True(t, o.wrote("main/ns/name", base))
	others := map[string]func(w *ownWrite){
		"cluster":              func(w *ownWrite) { w.cluster = Source },
		"tenant":               func(w *ownWrite) { w.tenant = "shoot--p--b" },
		"group":                func(w *ownWrite) { w.kind.Group = "extensions" },
		"kind":                 func(w *ownWrite) { w.kind.Kind = "StatefulSet" },
		"namespace":            func(w *ownWrite) { w.key.Namespace = "other" },
		"name":                 func(w *ownWrite) { w.key.Name = "other" },
		"version":              func(w *ownWrite) { w.version = "43" },
		"namespace/name split": func(w *ownWrite) { w.key.Namespace, w.key.Name = "nsn", "ame" },
	}
	for name, change := range others {
		w := base
		change(&w)
		assert.False(t, o.wrote("main/ns/name", w), name)
	}
	assert.False(t, o.wrote("other/ns/name", base), "another reconciled key")
}
