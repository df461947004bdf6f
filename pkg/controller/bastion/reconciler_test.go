package bastion

import (
	"context"
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
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/scheme"
)

var (
	created = time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC)
	expires = created.Add(time.Hour)
)

const maxLifetime = 24 * time.Hour

func newBastion() *operationsv1alpha1.Bastion {
	b := &operationsv1alpha1.Bastion{ObjectMeta: metav1.ObjectMeta{
		Name: "bastion", Namespace: "garden-dev", UID: "bastion-uid", CreationTimestamp: metav1.NewTime(created),
	}}
	b.Spec.ShootRef.Name = "shoot"
	b.Spec.SeedName = ptr.To("seed-a")
	b.Status.ExpirationTimestamp = &metav1.Time{Time: expires}
	return b
}

func newShoot() *gardencorev1beta1.Shoot {
	s := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: "shoot", Namespace: "garden-dev"}}
	s.Spec.SeedName = ptr.To("seed-a")
	return s
}

func TestDeletionReason(t *testing.T) {
	deleting := metav1.NewTime(created)
	for _, tc := range []struct {
		name    string
		now     time.Time
		bastion func(*operationsv1alpha1.Bastion)
		shoot   func(*gardencorev1beta1.Shoot) *gardencorev1beta1.Shoot
		want    Reason
	}{
		{name: "healthy bastion stays", now: created.Add(time.Minute)},
		{name: "shoot gone", now: created.Add(time.Minute), shoot: func(*gardencorev1beta1.Shoot) *gardencorev1beta1.Shoot { return nil }, want: ShootGone},
		{name: "shoot being deleted", now: created.Add(time.Minute), shoot: func(s *gardencorev1beta1.Shoot) *gardencorev1beta1.Shoot {
			s.DeletionTimestamp = &deleting
			return s
		}, want: ShootDeleting},
		{name: "shoot migrated to another seed", now: created.Add(time.Minute), shoot: func(s *gardencorev1beta1.Shoot) *gardencorev1beta1.Shoot {
			s.Spec.SeedName = ptr.To("seed-b")
			return s
		}, want: ShootMigrated},
		{name: "shoot lost its seed", now: created.Add(time.Minute), shoot: func(s *gardencorev1beta1.Shoot) *gardencorev1beta1.Shoot {
			s.Spec.SeedName = nil
			return s
		}, want: ShootMigrated},
		{name: "neither has a seed yet", now: created.Add(time.Minute),
			bastion: func(b *operationsv1alpha1.Bastion) { b.Spec.SeedName = nil },
			shoot: func(s *gardencorev1beta1.Shoot) *gardencorev1beta1.Shoot {
				s.Spec.SeedName = nil
				return s
			}},
		{name: "at the expiration instant it still lives", now: expires},
		{name: "just after expiration", now: expires.Add(time.Nanosecond), want: Expired},
		{name: "no expiration yet and young", now: expires.Add(time.Hour), bastion: func(b *operationsv1alpha1.Bastion) { b.Status.ExpirationTimestamp = nil }},
		{name: "at max lifetime it still lives", now: created.Add(maxLifetime), bastion: func(b *operationsv1alpha1.Bastion) { b.Status.ExpirationTimestamp = nil }},
		{name: "just past max lifetime", now: created.Add(maxLifetime + time.Nanosecond), bastion: func(b *operationsv1alpha1.Bastion) { b.Status.ExpirationTimestamp = nil }, want: MaxLifetimeReached},
		{name: "heartbeats cannot extend past max lifetime", now: created.Add(maxLifetime + time.Second), bastion: func(b *operationsv1alpha1.Bastion) {
			b.Status.ExpirationTimestamp = &metav1.Time{Time: created.Add(2 * maxLifetime)}
		}, want: MaxLifetimeReached},
		{name: "shoot checks come before expiry", now: expires.Add(time.Second), shoot: func(*gardencorev1beta1.Shoot) *gardencorev1beta1.Shoot { return nil }, want: ShootGone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, s := newBastion(), newShoot()
			if tc.bastion != nil {
				tc.bastion(b)
			}
			if tc.shoot != nil {
				s = tc.shoot(s)
			}
			assert.Equal(t, tc.want, DeletionReason(tc.now, b, s, maxLifetime))
		})
	}
}

func newReconciler(c client.Client, now time.Time) *Reconciler {
	return &Reconciler{Writer: function.NewWriter(c), Clock: testclock.NewFakePassiveClock(now), MaxLifetime: maxLifetime, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

func TestReconcileDeletesCondemnedBastion(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().WithScheme(scheme.Gardener).WithObjects(newBastion(), newShoot()).Build()
	r := newReconciler(c, expires.Add(time.Second))
	key := client.ObjectKey{Namespace: "garden-dev", Name: "bastion"}

	require.NoError(t, r.Reconcile(ctx, function.Request{Key: key, Reader: c, Trigger: function.ByEvent}))
	err := c.Get(ctx, key, &operationsv1alpha1.Bastion{})
	assert.True(t, apierrors.IsNotFound(err), "expired bastion must be deleted, got %v", err)

	// A duplicate event for the same key finds nothing to do.
	require.NoError(t, r.Reconcile(ctx, function.Request{Key: key, Reader: c, Trigger: function.ByEvent}))
}

func TestReconcileKeepsLiveBastion(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().WithScheme(scheme.Gardener).WithObjects(newBastion(), newShoot()).Build()
	key := client.ObjectKey{Namespace: "garden-dev", Name: "bastion"}
	require.NoError(t, newReconciler(c, expires.Add(-time.Second)).Reconcile(ctx, function.Request{Key: key, Reader: c, Trigger: function.ByEvent}))
	require.NoError(t, c.Get(ctx, key, &operationsv1alpha1.Bastion{}))
}

func TestReconcileLeavesDeletingBastionAlone(t *testing.T) {
	ctx := context.Background()
	b := newBastion()
	b.Finalizers = []string{"gardener.cloud/bastion"}
	b.DeletionTimestamp = &metav1.Time{Time: created}
	// No Shoot: were the Bastion not already deleting, it would be deleted.
	c := fake.NewClientBuilder().WithScheme(scheme.Gardener).WithObjects(b).Build()
	r := newReconciler(c, expires.Add(time.Second))
	var deletes int
	r.Writer = countingWriter{Writer: r.Writer, deletes: &deletes}
	require.NoError(t, r.Reconcile(ctx, function.Request{Key: client.ObjectKeyFromObject(b), Reader: c, Trigger: function.ByEvent}))
	assert.Zero(t, deletes)
}

type countingWriter struct {
	function.Writer
	deletes *int
}

func (w countingWriter) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	*w.deletes++
	return w.Writer.Delete(ctx, obj, opts...)
}
