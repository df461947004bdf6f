package stale

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func newProject(mutate ...func(*gardencorev1beta1.Project)) *gardencorev1beta1.Project {
	p := &gardencorev1beta1.Project{ObjectMeta: metav1.ObjectMeta{Name: "dev", UID: "dev-uid", CreationTimestamp: metav1.NewTime(created)}}
	p.Spec.Namespace = ptr.To(ns)
	for _, m := range mutate {
		m(p)
	}
	return p
}

func namespace(annotations map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Annotations: annotations}}
}

type fixture struct {
	client.Client
	clock *testclock.FakeClock
	r     *Reconciler
}

func newFixture(t *testing.T, now time.Time, funcs *interceptor.Funcs, objs ...client.Object) *fixture {
	t.Helper()
	b := newFakeClient(objs...)
	if funcs != nil {
		b = b.WithInterceptorFuncs(*funcs)
	}
	c := b.Build()
	clk := testclock.NewFakeClock(now)
	r, err := New(function.Deps{
		Source: function.ClusterClient{Reader: c, Writer: function.NewWriter(c)},
		Clock:  clk, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}, defaults)
	require.NoError(t, err)
	return &fixture{Client: c, clock: clk, r: r}
}

func (f *fixture) sweep(t *testing.T) error {
	t.Helper()
	return f.r.Reconcile(context.Background(), function.Request{Key: client.ObjectKey{Name: "dev"}, Reader: f.Client, Trigger: function.BySweep, Sweep: "stale"})
}

func (f *fixture) project(t *testing.T) *gardencorev1beta1.Project {
	t.Helper()
	p := &gardencorev1beta1.Project{}
	require.NoError(t, f.Get(context.Background(), client.ObjectKey{Name: "dev"}, p))
	return p
}

func (f *fixture) gone(t *testing.T) bool {
	t.Helper()
	err := f.Get(context.Background(), client.ObjectKey{Name: "dev"}, &gardencorev1beta1.Project{})
	if apierrors.IsNotFound(err) {
		return true
	}
	require.NoError(t, err)
	return false
}

// assertTime compares instants: what the API returns is in local time.
func assertTime(t *testing.T, want *time.Time, got *metav1.Time) {
	t.Helper()
	if want == nil || got == nil {
		assert.Equal(t, want == nil, got == nil, "want %v, got %v", want, got)
		return
	}
	assert.True(t, want.Equal(got.Time), "want %v, got %v", want, got)
}

func staleSince(since time.Time, autoDelete *time.Time) func(*gardencorev1beta1.Project) {
	return func(p *gardencorev1beta1.Project) {
		p.Status.StaleSinceTimestamp = at(since)
		if autoDelete != nil {
			p.Status.StaleAutoDeleteTimestamp = at(*autoDelete)
		}
	}
}

func TestReconcile(t *testing.T) {
	old := created.Add(days(100))
	deleteAt := old.Add(days(90))

	t.Run("unused old Project becomes stale, without an auto-delete timestamp yet", func(t *testing.T) {
		f := newFixture(t, old, nil, newProject(), namespace(nil))
		require.NoError(t, f.sweep(t))
		status := f.project(t).Status
		assertTime(t, &old, status.StaleSinceTimestamp)
		assert.Nil(t, status.StaleAutoDeleteTimestamp)
	})
	t.Run("past the grace period it gets an auto-delete timestamp", func(t *testing.T) {
		f := newFixture(t, old.Add(days(14)), nil, newProject(staleSince(old, nil)), namespace(nil))
		require.NoError(t, f.sweep(t))
		assertTime(t, &deleteAt, f.project(t).Status.StaleAutoDeleteTimestamp)
	})
	t.Run("stale timestamps in place: nothing is written", func(t *testing.T) {
		writes := 0
		f := newFixture(t, old.Add(days(20)), &interceptor.Funcs{
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
				writes++
				return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
			},
		}, newProject(staleSince(old, &deleteAt)), namespace(nil))
		require.NoError(t, f.sweep(t))
		assert.Zero(t, writes)
	})
	t.Run("auto-delete timestamp passed: deleted with confirmation", func(t *testing.T) {
		f := newFixture(t, deleteAt, nil, newProject(staleSince(old, &deleteAt), func(p *gardencorev1beta1.Project) {
			p.Finalizers = []string{"gardener"} // keeps it readable after the delete
		}), namespace(nil))
		require.NoError(t, f.sweep(t))
		p := f.project(t)
		assert.NotNil(t, p.DeletionTimestamp)
		assert.Equal(t, "true", p.Annotations[v1beta1constants.ConfirmationDeletion])
		assert.Equal(t, deleteAt.Format(time.RFC3339Nano), p.Annotations[v1beta1constants.GardenerTimestamp])
	})
	t.Run("in use since the sweep's lists: kept, asked live before the deletion", func(t *testing.T) {
		// The live cluster has a Shoot in the namespace that the sweep's snapshot, listed
		// before it, lacks.
		f := newFixture(t, deleteAt, nil, newProject(staleSince(old, &deleteAt)), namespace(nil), shoot(ns, "new"))
		snapshot := newFakeClient(newProject(staleSince(old, &deleteAt)), namespace(nil)).Build()
		require.NoError(t, f.r.Reconcile(context.Background(), function.Request{Key: client.ObjectKey{Name: "dev"}, Reader: snapshot, Trigger: function.BySweep, Sweep: "stale"}))
		require.False(t, f.gone(t))
		p := f.project(t)
		assert.Nil(t, p.DeletionTimestamp)
		assert.Empty(t, p.Annotations[v1beta1constants.ConfirmationDeletion], "no deletion confirmed")
		assert.Nil(t, p.Status.StaleSinceTimestamp, "in use: not stale")
		assert.Nil(t, p.Status.StaleAutoDeleteTimestamp)
	})
	t.Run("auto-delete timestamp not passed yet: kept", func(t *testing.T) {
		f := newFixture(t, deleteAt.Add(-time.Second), nil, newProject(staleSince(old, &deleteAt)), namespace(nil))
		require.NoError(t, f.sweep(t))
		assert.False(t, f.gone(t))
	})
	t.Run("in use again: both timestamps cleared", func(t *testing.T) {
		f := newFixture(t, deleteAt, nil, newProject(staleSince(old, &deleteAt)), namespace(nil), shoot(ns, "s"))
		require.NoError(t, f.sweep(t))
		status := f.project(t).Status
		assert.Nil(t, status.StaleSinceTimestamp)
		assert.Nil(t, status.StaleAutoDeleteTimestamp)
	})
	t.Run("active again: both timestamps cleared, even past the auto-delete timestamp", func(t *testing.T) {
		f := newFixture(t, deleteAt, nil, newProject(staleSince(old, &deleteAt), func(p *gardencorev1beta1.Project) {
			p.Status.LastActivityTimestamp = at(deleteAt.Add(-time.Hour))
		}), namespace(nil))
		require.NoError(t, f.sweep(t))
		status := f.project(t).Status
		assert.Nil(t, status.StaleSinceTimestamp)
		assert.Nil(t, status.StaleAutoDeleteTimestamp)
	})
	t.Run("skip annotation on the namespace: both timestamps cleared", func(t *testing.T) {
		f := newFixture(t, deleteAt, nil, newProject(staleSince(old, &deleteAt)), namespace(map[string]string{v1beta1constants.ProjectSkipStaleCheck: "true"}))
		require.NoError(t, f.sweep(t))
		assert.Nil(t, f.project(t).Status.StaleSinceTimestamp)
	})
	t.Run("too young: not stale", func(t *testing.T) {
		f := newFixture(t, created.Add(days(29)), nil, newProject(), namespace(nil))
		require.NoError(t, f.sweep(t))
		assert.Nil(t, f.project(t).Status.StaleSinceTimestamp)
	})
	t.Run("being deleted: left alone", func(t *testing.T) {
		f := newFixture(t, old, nil, newProject(func(p *gardencorev1beta1.Project) {
			p.Finalizers = []string{"gardener"}
			p.DeletionTimestamp = at(created.Add(days(99)))
		}), namespace(nil))
		require.NoError(t, f.sweep(t))
		assert.Nil(t, f.project(t).Status.StaleSinceTimestamp)
	})
	t.Run("no namespace yet: left alone", func(t *testing.T) {
		f := newFixture(t, old, nil, newProject(func(p *gardencorev1beta1.Project) { p.Spec.Namespace = nil }))
		require.NoError(t, f.sweep(t))
		assert.Nil(t, f.project(t).Status.StaleSinceTimestamp)
	})
	t.Run("namespace missing: left alone", func(t *testing.T) {
		f := newFixture(t, old, nil, newProject())
		require.NoError(t, f.sweep(t))
		assert.Nil(t, f.project(t).Status.StaleSinceTimestamp)
	})
	t.Run("project gone: nothing to do", func(t *testing.T) {
		f := newFixture(t, old, nil, namespace(nil))
		require.NoError(t, f.sweep(t))
	})
}

// conflictOnce makes the first n status patches conflict, as when the Activity reconciler
// recorded activity between the sweep's read and its write.
func conflictOnce(n int, beforeConflict func(client.Client)) *interceptor.Funcs {
	return &interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if n > 0 {
				n--
				if beforeConflict != nil {
					beforeConflict(c)
				}
				return apierrors.NewConflict(schema.GroupResource{Group: gardencorev1beta1.GroupName, Resource: "projects"}, obj.GetName(), nil)
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	}
}

func TestReconcileConflict(t *testing.T) {
	old := created.Add(days(100))

	t.Run("decided again on the Project as it is now", func(t *testing.T) {
		f := newFixture(t, old, conflictOnce(1, func(c client.Client) {
			p := &gardencorev1beta1.Project{}
			require.NoError(t, c.Get(context.Background(), client.ObjectKey{Name: "dev"}, p))
			p.Status.LastActivityTimestamp = at(old)
			require.NoError(t, c.Status().Update(context.Background(), p))
		}), newProject(), namespace(nil))
		require.NoError(t, f.sweep(t))
		status := f.project(t).Status
		assert.Nil(t, status.StaleSinceTimestamp, "the activity recorded meanwhile makes it not stale")
		assertTime(t, &old, status.LastActivityTimestamp)
	})
	t.Run("a second conflict is left to the next sweep, not retried with a live reader", func(t *testing.T) {
		f := newFixture(t, old, conflictOnce(2, nil), newProject(), namespace(nil))
		err := f.sweep(t)
		require.Error(t, err)
		assert.False(t, apierrors.IsConflict(err))
	})
}

func TestNewRefusesNegativeSettings(t *testing.T) {
	_, err := New(function.Deps{}, Settings{MinimumLifetimeDays: -1})
	assert.Error(t, err)
}
