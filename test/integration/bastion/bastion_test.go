// Package bastion_test serves the bastion function in-process (functiontest) against a real
// kube-apiserver and etcd, and sends it the CloudEvents its sources would.
package bastion_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	operationsv1alpha1 "github.com/gardener/gardener/pkg/apis/operations/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/bastion"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

// fixture is the bastion function served over HTTP with its own namespace.
type fixture struct {
	*functiontest.Harness
	ns string
}

func newFixture(t testing.TB, options ...functiontest.Option) *fixture {
	t.Helper()
	options = append([]functiontest.Option{functiontest.WithConfig(&bastion.Config{MaxLifetime: 24 * time.Hour})}, options...)
	f := &fixture{Harness: functiontest.New(t, env, bastion.Function, options...)}
	f.ns = env.Namespace(t)
	return f
}

// shoot creates a Shoot scheduled to seed (spec and status, as after its first reconcile).
func (f *fixture) shoot(t testing.TB, name, seed string, finalizers ...string) *gardencorev1beta1.Shoot {
	t.Helper()
	ctx := context.Background()
	s := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns, Finalizers: finalizers}}
	s.Spec.SeedName = ptr.To(seed)
	require.NoError(t, env.Client.Create(ctx, s))
	s.Status.SeedName = ptr.To(seed)
	require.NoError(t, env.Client.Status().Update(ctx, s))
	return s
}

func (f *fixture) bastion(t testing.TB, name, shoot, seed string, expiresIn *time.Duration) *operationsv1alpha1.Bastion {
	t.Helper()
	ctx := context.Background()
	b := &operationsv1alpha1.Bastion{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns}}
	b.Spec.ShootRef.Name = shoot
	b.Spec.SeedName = ptr.To(seed)
	require.NoError(t, env.Client.Create(ctx, b))
	if expiresIn != nil {
		b.Status.ExpirationTimestamp = &metav1.Time{Time: f.Clock.Now().Add(*expiresIn)}
		require.NoError(t, env.Client.Status().Update(ctx, b))
	}
	return b
}

func exists(t testing.TB, b *operationsv1alpha1.Bastion) bool {
	t.Helper()
	err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(b), &operationsv1alpha1.Bastion{})
	if apierrors.IsNotFound(err) {
		return false
	}
	require.NoError(t, err)
	return true
}

func TestBastionEvents(t *testing.T) {
	ctx := context.Background()
	hour := time.Hour

	t.Run("live bastion stays", func(t *testing.T) {
		f := newFixture(t)
		f.shoot(t, "shoot", "seed-a")
		b := f.bastion(t, "bastion", "shoot", "seed-a", &hour)
		f.Send("update", b)
		assert.True(t, exists(t, b))
	})
	t.Run("shoot gone", func(t *testing.T) {
		f := newFixture(t)
		b := f.bastion(t, "bastion", "no-such-shoot", "seed-a", &hour)
		f.Send("add", b)
		assert.False(t, exists(t, b))
	})
	t.Run("shoot being deleted: the Shoot's event takes its Bastions, not others", func(t *testing.T) {
		f := newFixture(t)
		s := f.shoot(t, "shoot", "seed-a", "gardener")
		f.shoot(t, "other", "seed-a")
		b1 := f.bastion(t, "bastion-1", "shoot", "seed-a", &hour)
		b2 := f.bastion(t, "bastion-2", "shoot", "seed-a", &hour)
		keep := f.bastion(t, "bastion-of-other", "other", "seed-a", &hour)
		require.NoError(t, env.Client.Delete(ctx, s))
		require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(s), s))
		f.Send("update", s)
		assert.False(t, exists(t, b1))
		assert.False(t, exists(t, b2))
		assert.True(t, exists(t, keep))
		s.Finalizers = nil
		require.NoError(t, env.Client.Update(ctx, s))
	})
	t.Run("shoot deleted: the delete event takes its Bastions", func(t *testing.T) {
		f := newFixture(t)
		s := f.shoot(t, "shoot", "seed-a")
		b := f.bastion(t, "bastion", "shoot", "seed-a", &hour)
		require.NoError(t, env.Client.Delete(ctx, s))
		f.Send("delete", s)
		assert.False(t, exists(t, b))
	})
	t.Run("shoot migrated to another seed", func(t *testing.T) {
		f := newFixture(t)
		s := f.shoot(t, "shoot", "seed-a")
		b := f.bastion(t, "bastion", "shoot", "seed-a", &hour)
		s.Spec.SeedName = ptr.To("seed-b")
		require.NoError(t, env.Client.Update(ctx, s))
		f.Send("update", s)
		assert.False(t, exists(t, b))
	})
	t.Run("created expired: its creation event takes it", func(t *testing.T) {
		f := newFixture(t)
		f.shoot(t, "shoot", "seed-a")
		b := f.bastion(t, "bastion", "shoot", "seed-a", &hour)
		f.Clock.Step(hour + time.Second)
		f.Send("add", b)
		assert.False(t, exists(t, b))
	})
	t.Run("a heartbeat costs nothing: expiration and lifetime are the sweep's", func(t *testing.T) {
		f := newFixture(t)
		f.shoot(t, "shoot", "seed-a")
		expiring := f.bastion(t, "expiring", "shoot", "seed-a", &hour)
		rotten := f.bastion(t, "rotten", "shoot", "seed-a", nil)
		f.Clock.Step(24*time.Hour + time.Minute)
		assert.Empty(t, f.Measure(func() { f.Send("update", expiring); f.Send("update", rotten) }))
		assert.True(t, exists(t, expiring))
		f.Sweep("resync")
		assert.False(t, exists(t, expiring), "expired")
		assert.False(t, exists(t, rotten), "max lifetime reached")
	})
	t.Run("duplicated and reordered events are harmless", func(t *testing.T) {
		f := newFixture(t)
		b := f.bastion(t, "bastion", "no-such-shoot", "seed-a", &hour)
		f.Send("delete", b)
		f.Send("add", b)
		f.Send("add", b)
		assert.False(t, exists(t, b))
	})
}

// Events can be dropped (the sources give up after their retries) or never sent (objects that
// existed before the source started): the resync sweep alone converges.
func TestSweepCatchesExpirationsAndMissedEvents(t *testing.T) {
	f := newFixture(t)
	hour := time.Hour
	f.shoot(t, "shoot", "seed-a")
	live := f.bastion(t, "live", "shoot", "seed-a", &hour)
	expiring := f.bastion(t, "expiring", "shoot", "seed-a", ptr.To(10*time.Minute))
	orphan := f.bastion(t, "orphan", "gone", "seed-a", &hour)
	f.Clock.Step(11 * time.Minute)

	f.Sweep("resync")
	assert.True(t, exists(t, live))
	assert.False(t, exists(t, expiring))
	assert.False(t, exists(t, orphan))
}

// A heartbeat between the read and the delete must not be lost: the delete is conditional on
// the resourceVersion that was read, the API server answers with a conflict, and the runtime's
// retry from live state keeps the Bastion.
func TestDeleteIsConditionalOnWhatWasRead(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.shoot(t, "shoot", "seed-a")
	b := f.bastion(t, "bastion", "shoot", "seed-a", ptr.To(time.Minute))
	stale := b.DeepCopy()
	f.Clock.Step(2 * time.Minute)

	b.Status.ExpirationTimestamp = &metav1.Time{Time: f.Clock.Now().Add(time.Hour)} // heartbeat
	require.NoError(t, env.Client.Status().Update(ctx, b))

	reconciler := &bastion.Reconciler{Writer: function.NewWriter(env.Client), Clock: f.Clock, MaxLifetime: 24 * time.Hour, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	err := reconciler.Reconcile(ctx, function.Request{Key: client.ObjectKeyFromObject(b), Reader: staleReader{Reader: env.Client, bastion: stale}, Trigger: function.ByEvent})
	assert.True(t, apierrors.IsConflict(err), "want a conflict, got %v", err)
	assert.True(t, exists(t, b), "the extended Bastion must survive")

	f.Send("add", stale) // a late creation event: the function decides on live state
	assert.True(t, exists(t, b), "read from live state, the extended Bastion lives")
}

type staleReader struct {
	client.Reader
	bastion *operationsv1alpha1.Bastion
}

func (r staleReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if b, ok := obj.(*operationsv1alpha1.Bastion); ok {
		r.bastion.DeepCopyInto(b)
		return nil
	}
	return r.Reader.Get(ctx, key, obj, opts...)
}

// TestAPIRequestCost pins what events and sweeps cost in API requests; the numbers are the
// ones docs/functions/bastion.md reports.
func TestAPIRequestCost(t *testing.T) {
	f := newFixture(t)
	hour := time.Hour
	f.shoot(t, "shoot", "seed-a")
	b := f.bastion(t, "bastion", "shoot", "seed-a", &hour)

	measure := func(do func()) (gets, lists, deletes int) {
		g, l, d := f.Requests("get"), f.Requests("list"), f.Requests("delete")
		do()
		return f.Requests("get") - g, f.Requests("list") - l, f.Requests("delete") - d
	}

	// The first event of a process also asks discovery for the kinds' REST mappings once.
	f.Send("add", b)
	f.Send("delete", f.shoot(t, "warm-up", "seed-a"))

	gets, lists, deletes := measure(func() { f.Send("add", b) })
	assert.Equal(t, [3]int{2, 0, 0}, [3]int{gets, lists, deletes}, "a live Bastion's creation: GET Bastion, GET Shoot")
	gets, lists, deletes = measure(func() { f.Send("update", b) })
	assert.Equal(t, [3]int{0, 0, 0}, [3]int{gets, lists, deletes}, "a Bastion's update (heartbeat): filtered by the predicate, no request")

	unrelated := f.shoot(t, "unrelated", "seed-a")
	gets, lists, deletes = measure(func() { f.Send("update", unrelated) })
	assert.Equal(t, [3]int{0, 0, 0}, [3]int{gets, lists, deletes}, "a Shoot update that neither deletes nor moves it: filtered by the predicate, no request")

	require.NoError(t, env.Client.Delete(context.Background(), unrelated))
	gets, lists, deletes = measure(func() { f.Send("delete", unrelated) })
	assert.Equal(t, [3]int{0, 1, 0}, [3]int{gets, lists, deletes}, "a Shoot without Bastions deleted: one metadata-only LIST by field selector")

	// A sweep over 1,000 Bastions of one Shoot: two pages of Bastions, and one GET of the
	// Shoot, however many Bastions name it (Shoots are not listed, see the declaration).
	ctx := context.Background()
	for i := range 999 {
		nb := &operationsv1alpha1.Bastion{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bastion-%04d", i), Namespace: f.ns}}
		nb.Spec.ShootRef.Name = "shoot"
		nb.Spec.SeedName = ptr.To("seed-a")
		require.NoError(t, env.Client.Create(ctx, nb))
	}
	all := &operationsv1alpha1.BastionList{}
	require.NoError(t, env.Client.List(ctx, all))
	gets, lists, deletes = measure(func() { f.Sweep("resync") })
	assert.Zero(t, deletes)
	assert.Equal(t, (len(all.Items)+499)/500, lists, "pages of 500 Bastions")
	shoots := map[client.ObjectKey]bool{}
	for _, b := range all.Items {
		shoots[client.ObjectKey{Namespace: b.Namespace, Name: b.Spec.ShootRef.Name}] = true
	}
	assert.Equal(t, len(shoots), gets, "one GET per distinct Shoot, however many Bastions name it")
	t.Logf("no-op sweep over %d Bastions: %d GET, %d LIST, %d DELETE", len(all.Items), gets, lists, deletes)
}
