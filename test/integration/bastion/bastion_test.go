// Package bastion_test runs the bastion function's server in-process against a real
// kube-apiserver and etcd, and sends it real CloudEvents over HTTP.
package bastion_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	operationsv1alpha1 "github.com/gardener/gardener/pkg/apis/operations/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/bastion"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kube"
	"github.com/gardener-knative/gardener-knative/pkg/scheme"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	var err error
	if env, err = testenv.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = env.Stop()
	os.Exit(code)
}

// fixture is one bastion function served over HTTP, with its own namespace, clock and
// request counter.
type fixture struct {
	ns      string
	clock   *testclock.FakeClock
	c       client.Client
	counter *kube.RequestCounter
	sink    string
	sender  cloudevents.Client
}

// newFixture serves the function as the admin, or as the given user.
func newFixture(t testing.TB, user ...string) *fixture {
	t.Helper()
	c, counter, err := env.CountingClient(user...)
	require.NoError(t, err)
	f := &fixture{c: c, counter: counter, clock: testclock.NewFakeClock(time.Now())}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "garden-"}}
	require.NoError(t, env.Client.Create(context.Background(), ns))
	f.ns = ns.Name

	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	reconciler := &bastion.Reconciler{Client: c, Clock: f.clock, MaxLifetime: 24 * time.Hour, Log: log}
	opts := function.Options{EventTimeout: 30 * time.Second, SweepTimeout: time.Minute, SweepConcurrency: 8, ListPageSize: 500, ConflictRetries: 3}
	server, err := function.NewServer(bastion.Function, reconciler, c, scheme.Gardener, opts, log, prometheus.NewRegistry())
	require.NoError(t, err)
	httpServer := httptest.NewServer(server)
	t.Cleanup(httpServer.Close)
	f.sink = httpServer.URL
	f.sender, err = cloudevents.NewClientHTTP()
	require.NoError(t, err)
	return f
}

func (f *fixture) shoot(t testing.TB, name, seed string, finalizers ...string) *gardencorev1beta1.Shoot {
	t.Helper()
	s := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns, Finalizers: finalizers}}
	s.Spec.SeedName = ptr.To(seed)
	require.NoError(t, env.Client.Create(context.Background(), s))
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
		b.Status.ExpirationTimestamp = &metav1.Time{Time: f.clock.Now().Add(*expiresIn)}
		require.NoError(t, env.Client.Status().Update(ctx, b))
	}
	return b
}

// send delivers an ApiServerSource event in Reference mode, as the adapter would.
func (f *fixture) send(t testing.TB, eventType string, obj client.Object, apiVersion, kind string) {
	t.Helper()
	e := cloudevents.NewEvent()
	e.SetID(fmt.Sprintf("%s-%d", obj.GetName(), time.Now().UnixNano()))
	e.SetSource(env.Config.Host)
	e.SetType(eventType)
	require.NoError(t, e.SetData(cloudevents.ApplicationJSON, corev1.ObjectReference{APIVersion: apiVersion, Kind: kind, Name: obj.GetName(), Namespace: obj.GetNamespace()}))
	result := f.sender.Send(cloudevents.ContextWithTarget(context.Background(), f.sink), e)
	require.True(t, cloudevents.IsACK(result), "event not acknowledged: %v", result)
}

func (f *fixture) sendBastion(t testing.TB, b *operationsv1alpha1.Bastion) {
	f.send(t, function.RefUpdateEventType, b, "operations.gardener.cloud/v1alpha1", "Bastion")
}

func (f *fixture) sendShoot(t testing.TB, eventType string, s *gardencorev1beta1.Shoot) {
	f.send(t, eventType, s, "core.gardener.cloud/v1beta1", "Shoot")
}

func (f *fixture) sweep(t testing.TB) {
	t.Helper()
	e := cloudevents.NewEvent()
	e.SetID(fmt.Sprintf("ping-%d", time.Now().UnixNano()))
	e.SetSource("/apis/v1/namespaces/gardener-knative/pingsources/bastion-resync")
	e.SetType(function.PingEventType)
	require.NoError(t, e.SetData(cloudevents.ApplicationJSON, []byte(`{"sweep":"resync"}`)))
	result := f.sender.Send(cloudevents.ContextWithTarget(context.Background(), f.sink), e)
	require.True(t, cloudevents.IsACK(result), "ping not acknowledged: %v", result)
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
		f.sendBastion(t, b)
		assert.True(t, exists(t, b))
	})
	t.Run("shoot gone", func(t *testing.T) {
		f := newFixture(t)
		b := f.bastion(t, "bastion", "no-such-shoot", "seed-a", &hour)
		f.sendBastion(t, b)
		assert.False(t, exists(t, b))
	})
	t.Run("shoot being deleted: the Shoot's event takes its Bastions, not others", func(t *testing.T) {
		f := newFixture(t)
		s := f.shoot(t, "shoot", "seed-a", "gardener")
		other := f.shoot(t, "other", "seed-a")
		b1 := f.bastion(t, "bastion-1", "shoot", "seed-a", &hour)
		b2 := f.bastion(t, "bastion-2", "shoot", "seed-a", &hour)
		keep := f.bastion(t, "bastion-of-other", "other", "seed-a", &hour)
		require.NoError(t, env.Client.Delete(ctx, s))
		f.sendShoot(t, function.RefUpdateEventType, s)
		assert.False(t, exists(t, b1))
		assert.False(t, exists(t, b2))
		assert.True(t, exists(t, keep))
		_ = other
		require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(s), s))
		s.Finalizers = nil
		require.NoError(t, env.Client.Update(ctx, s))
	})
	t.Run("shoot deleted: the delete event takes its Bastions", func(t *testing.T) {
		f := newFixture(t)
		s := f.shoot(t, "shoot", "seed-a")
		b := f.bastion(t, "bastion", "shoot", "seed-a", &hour)
		require.NoError(t, env.Client.Delete(ctx, s))
		f.sendShoot(t, function.RefDeleteEventType, s)
		assert.False(t, exists(t, b))
	})
	t.Run("shoot migrated to another seed", func(t *testing.T) {
		f := newFixture(t)
		s := f.shoot(t, "shoot", "seed-a")
		b := f.bastion(t, "bastion", "shoot", "seed-a", &hour)
		s.Spec.SeedName = ptr.To("seed-b")
		require.NoError(t, env.Client.Update(ctx, s))
		f.sendShoot(t, function.RefUpdateEventType, s)
		assert.False(t, exists(t, b))
	})
	t.Run("expiration reached", func(t *testing.T) {
		f := newFixture(t)
		f.shoot(t, "shoot", "seed-a")
		b := f.bastion(t, "bastion", "shoot", "seed-a", &hour)
		f.clock.Step(hour + time.Second)
		f.sendBastion(t, b)
		assert.False(t, exists(t, b))
	})
	t.Run("max lifetime reached", func(t *testing.T) {
		f := newFixture(t)
		f.shoot(t, "shoot", "seed-a")
		b := f.bastion(t, "bastion", "shoot", "seed-a", nil)
		f.clock.Step(24*time.Hour + time.Minute)
		f.sendBastion(t, b)
		assert.False(t, exists(t, b))
	})
	t.Run("duplicated and reordered events are harmless", func(t *testing.T) {
		f := newFixture(t)
		b := f.bastion(t, "bastion", "no-such-shoot", "seed-a", &hour)
		f.send(t, function.RefDeleteEventType, b, "operations.gardener.cloud/v1alpha1", "Bastion")
		f.sendBastion(t, b)
		f.sendBastion(t, b)
		assert.False(t, exists(t, b))
	})
}

func TestSweepCatchesExpirationsAndMissedEvents(t *testing.T) {
	f := newFixture(t)
	hour := time.Hour
	f.shoot(t, "shoot", "seed-a")
	live := f.bastion(t, "live", "shoot", "seed-a", &hour)
	expiring := f.bastion(t, "expiring", "shoot", "seed-a", ptr.To(10*time.Minute))
	orphan := f.bastion(t, "orphan", "gone", "seed-a", &hour)
	f.clock.Step(11 * time.Minute)

	f.sweep(t)
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
	f.clock.Step(2 * time.Minute)

	b.Status.ExpirationTimestamp = &metav1.Time{Time: f.clock.Now().Add(time.Hour)} // heartbeat
	require.NoError(t, env.Client.Status().Update(ctx, b))

	reconciler := &bastion.Reconciler{Client: f.c, Clock: f.clock, MaxLifetime: 24 * time.Hour, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	err := reconciler.Reconcile(ctx, staleReader{Reader: f.c, bastion: stale}, client.ObjectKeyFromObject(b))
	assert.True(t, apierrors.IsConflict(err), "want a conflict, got %v", err)
	assert.True(t, exists(t, b), "the extended Bastion must survive")

	f.sendBastion(t, b)
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
		g, l, d := f.counter.Total("get"), f.counter.Total("list"), f.counter.Total("delete")
		do()
		return f.counter.Total("get") - g, f.counter.Total("list") - l, f.counter.Total("delete") - d
	}

	// The first event of a process also asks discovery for the kinds' REST mappings once.
	f.sendBastion(t, b)
	f.sendShoot(t, function.RefUpdateEventType, f.shoot(t, "warm-up", "seed-a"))

	gets, lists, deletes := measure(func() { f.sendBastion(t, b) })
	assert.Equal(t, [3]int{2, 0, 0}, [3]int{gets, lists, deletes}, "no-op Bastion event: GET Bastion, GET Shoot")
	t.Logf("no-op Bastion event: %d GET, %d LIST", gets, lists)

	unrelated := f.shoot(t, "unrelated", "seed-a")
	gets, lists, deletes = measure(func() { f.sendShoot(t, function.RefUpdateEventType, unrelated) })
	assert.Equal(t, [3]int{0, 1, 0}, [3]int{gets, lists, deletes}, "no-op Shoot event: one metadata-only LIST by field selector")
	t.Logf("no-op Shoot event: %d GET, %d LIST", gets, lists)

	// A sweep over 1,000 Bastions (and their Shoot) costs two pages of Bastions and one of
	// Shoots: a constant number of LISTs and no GET per object.
	ctx := context.Background()
	for i := range 999 {
		nb := &operationsv1alpha1.Bastion{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bastion-%04d", i), Namespace: f.ns}}
		nb.Spec.ShootRef.Name = "shoot"
		nb.Spec.SeedName = ptr.To("seed-a")
		require.NoError(t, env.Client.Create(ctx, nb))
	}
	others := countBastionsOutside(t, f.ns)
	gets, lists, deletes = measure(func() { f.sweep(t) })
	assert.Zero(t, gets, "a sweep answers reads from its lists")
	assert.Zero(t, deletes)
	bastionPages := (1000 + others + 499) / 500
	assert.Equal(t, bastionPages+1, lists, "pages of 500 Bastions plus one page of Shoots")
	t.Logf("no-op sweep over %d Bastions: %d GET, %d LIST, %d DELETE", 1000+others, gets, lists, deletes)
}

func countBastionsOutside(t testing.TB, ns string) int {
	t.Helper()
	list := &operationsv1alpha1.BastionList{}
	require.NoError(t, env.Client.List(context.Background(), list))
	n := 0
	for _, b := range list.Items {
		if b.Namespace != ns {
			n++
		}
	}
	return n
}
