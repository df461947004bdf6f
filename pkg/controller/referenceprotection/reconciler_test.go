package referenceprotection

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	testclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/scheme"
)

type recordedEvent struct{ object, eventType, reason, message string }

type recorder struct{ events []recordedEvent }

func (r *recorder) Event(_ context.Context, obj client.Object, eventType, reason, message string) {
	r.events = append(r.events, recordedEvent{obj.GetName(), eventType, reason, message})
}

func (r *recorder) Eventf(ctx context.Context, obj client.Object, eventType, reason, format string, args ...any) {
	r.Event(ctx, obj, eventType, reason, fmt.Sprintf(format, args...))
}

// requests counts the fake client's calls by verb.
type requests map[string]int

// newClient returns a fake client holding objs whose calls are counted, and an uncounted view
// of the same objects for the test's own reads.
func newClient(counted requests, objs ...client.Object) (client.WithWatch, client.Client) {
	count := func(verb string) { counted[verb]++ }
	raw := fake.NewClientBuilder().WithScheme(scheme.Gardener).WithObjects(objs...).Build()
	return interceptor.NewClient(raw, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			count("get")
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			count("list")
			return c.List(ctx, list, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			count("patch")
			return c.Patch(ctx, obj, patch, opts...)
		},
	}), raw
}

func newReconciler(p *Protection, c client.Client, events *recorder) *Reconciler {
	return &Reconciler{Protection: p, Writer: function.NewWriter(c), Events: events, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

func named(ec *gardencorev1beta1.ExposureClass, name string) *gardencorev1beta1.ExposureClass {
	ec.Name = name
	return ec
}

func get(t *testing.T, c client.Client, name string) *gardencorev1beta1.ExposureClass {
	t.Helper()
	ec := &gardencorev1beta1.ExposureClass{}
	err := c.Get(context.Background(), client.ObjectKey{Name: name}, ec)
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(t, err)
	return ec
}

func reconcile(t *testing.T, r *Reconciler, c client.Client, name string) {
	t.Helper()
	require.NoError(t, r.Reconcile(context.Background(), function.Request{Key: function.Key{Name: name}, Reader: c, Trigger: function.ByEvent}))
}

func TestReconcileAddsFinalizer(t *testing.T) {
	counted := requests{}
	c, view := newClient(counted, named(exposureClass(false, "other"), "ec"))
	events := &recorder{}
	r := newReconciler(exposureClassProtection(), c, events)

	reconcile(t, r, c, "ec")
	assert.Equal(t, []string{"other", finalizer}, get(t, view, "ec").Finalizers, "added, others kept")
	assert.Equal(t, requests{"get": 1, "patch": 1}, counted, "unreferenced or not, the finalizer is added without looking at referrers")

	delete(counted, "get")
	delete(counted, "patch")
	reconcile(t, r, c, "ec")
	assert.Equal(t, requests{"get": 1}, counted, "protected already: one read, no write")
	assert.Empty(t, events.events)
}

func TestReconcileBlocksDeletionWhileReferenced(t *testing.T) {
	counted := requests{}
	c, view := newClient(counted,
		named(exposureClass(true, finalizer), "ec"),
		shoot("garden-b", "second", 1, 1, "ec"),
		shoot("garden-a", "first", 1, 1, "ec"),
		shoot("garden-a", "unrelated", 1, 1, "other-ec"),
	)
	events := &recorder{}
	r := newReconciler(exposureClassProtection(), c, events)

	reconcile(t, r, c, "ec")
	require.NotNil(t, get(t, view, "ec"), "still referenced: the finalizer stays")
	assert.Equal(t, []string{finalizer}, get(t, view, "ec").Finalizers)
	assert.Zero(t, counted["patch"])
	assert.Equal(t, []recordedEvent{{"ec", corev1.EventTypeNormal, "ResourceReferenced", "ec is used by [garden-a/first garden-b/second]"}}, events.events,
		"the referrers, sorted, in the Event Gardener records")

	r.RecordEvent = false
	reconcile(t, r, c, "ec")
	assert.Len(t, events.events, 1, "no Event where the protection records none")
}

func TestReconcileReleasesUnreferenced(t *testing.T) {
	counted := requests{}
	c, view := newClient(counted,
		named(exposureClass(true, "other", finalizer), "ec"),
		shoot("garden-a", "unrelated", 1, 1, "other-ec"),
	)
	events := &recorder{}
	r := newReconciler(exposureClassProtection(), c, events)

	reconcile(t, r, c, "ec")
	assert.Equal(t, []string{"other"}, get(t, view, "ec").Finalizers, "only its own finalizer is removed")
	assert.Equal(t, requests{"get": 1, "list": 1, "patch": 1}, counted)
	assert.Empty(t, events.events)

	reconcile(t, r, c, "ec")
	assert.Equal(t, 1, counted["patch"], "released already: nothing to do")
}

func TestReconcileLastFinalizerLetsTheObjectGo(t *testing.T) {
	c, view := newClient(requests{}, named(exposureClass(true, finalizer), "ec"))
	r := newReconciler(exposureClassProtection(), c, &recorder{})
	reconcile(t, r, c, "ec")
	assert.Nil(t, get(t, view, "ec"))
	reconcile(t, r, c, "ec") // gone: nothing to converge, no error
}

func TestReconcileSameNamespaceReferrers(t *testing.T) {
	profile := &gardencorev1beta1.NamespacedCloudProfile{ObjectMeta: *objectMeta(true, finalizer)}
	profile.Namespace, profile.Name = "garden-a", "profile"
	elsewhere := shoot("garden-b", "s", 1, 1, "")
	elsewhere.Spec.CloudProfile = &gardencorev1beta1.CloudProfileReference{Kind: "NamespacedCloudProfile", Name: "profile"}
	c, view := newClient(requests{}, profile, elsewhere)
	r := newReconciler(namespacedProtection(), c, &recorder{})

	require.NoError(t, r.Reconcile(context.Background(), function.Request{Key: client.ObjectKeyFromObject(profile), Reader: c, Trigger: function.ByEvent}))
	err := view.Get(context.Background(), client.ObjectKeyFromObject(profile), &gardencorev1beta1.NamespacedCloudProfile{})
	assert.True(t, apierrors.IsNotFound(err), "a Shoot of another namespace with the same name does not reference it: %v", err)
}

// The sweep answers "is it referenced?" from its snapshot's reverse index: one LIST per kind,
// no GET, however many protected objects there are.
func TestSweepDecidesFromTheSnapshot(t *testing.T) {
	for _, n := range []int{3, 30} {
		counted := requests{}
		objs := []client.Object{}
		for i := range n {
			objs = append(objs,
				named(exposureClass(false), "new-"+strconv.Itoa(i)),
				named(exposureClass(false, finalizer), "kept-"+strconv.Itoa(i)),
				named(exposureClass(true, finalizer), "blocked-"+strconv.Itoa(i)),
				named(exposureClass(true, finalizer), "released-"+strconv.Itoa(i)),
				shoot("garden", "s-"+strconv.Itoa(i), 1, 1, "blocked-"+strconv.Itoa(i)),
			)
		}
		c, view := newClient(counted, objs...)
		server, err := function.NewServer(exposureClassProtection().Function(), function.Env{
			Source: c, Clock: testclock.NewFakeClock(time.Now()), Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Registry: prometheus.NewRegistry(),
		}, function.Options{EventTimeout: time.Minute, SweepTimeout: time.Minute, SweepConcurrency: 4, ListPageSize: 500})
		require.NoError(t, err)

		require.NoError(t, server.Sweep(context.Background(), ResyncSweep))
		for i := range n {
			assert.Contains(t, get(t, view, "new-"+strconv.Itoa(i)).Finalizers, finalizer)
			assert.Contains(t, get(t, view, "blocked-"+strconv.Itoa(i)).Finalizers, finalizer)
			assert.Nil(t, get(t, view, "released-"+strconv.Itoa(i)))
		}
		assert.Equal(t, 2, counted["list"], "n=%d: one LIST of ExposureClasses, one of Shoots", n)
		assert.Zero(t, counted["get"], "n=%d", n)
		assert.Equal(t, 2*n, counted["patch"], "n=%d: a finalizer added or removed per object that needs it", n)
	}
}
