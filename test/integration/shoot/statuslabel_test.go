package shoot_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gardener-knative/gardener-knative/pkg/controller/shoot/quota"
	"github.com/gardener-knative/gardener-knative/pkg/controller/shoot/statuslabel"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

// shootWithSpec creates a Shoot in the fixture's namespace; spec (may be nil) shapes it first.
func (f *fixture) shootWithSpec(t testing.TB, name string, spec func(*gardencorev1beta1.Shoot)) *gardencorev1beta1.Shoot {
	t.Helper()
	s := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns}}
	if spec != nil {
		spec(s)
	}
	require.NoError(t, env.Client.Create(context.Background(), s))
	return s
}

// writeShootStatus is gardenlet reporting on the Shoot: it has observed the Shoot's spec and
// changes its status as the API server has it; it returns the Shoot as written.
func writeShootStatus(t testing.TB, s *gardencorev1beta1.Shoot, mutate func(*gardencorev1beta1.ShootStatus)) *gardencorev1beta1.Shoot {
	t.Helper()
	s = fresh(t, s)
	s.Status.ObservedGeneration = s.Generation
	mutate(&s.Status)
	require.NoError(t, env.Client.Status().Update(context.Background(), s))
	return s
}

func lastOperation(opType gardencorev1beta1.LastOperationType, state gardencorev1beta1.LastOperationState) *gardencorev1beta1.LastOperation {
	return &gardencorev1beta1.LastOperation{Type: opType, State: state, LastUpdateTime: metav1.Now()}
}

// shootPages is how many pages of 500 a sweep's LIST of every Shoot reads (other tests' Shoots
// included).
func shootPages(t testing.TB) int {
	t.Helper()
	shoots := &metav1.PartialObjectMetadataList{}
	shoots.SetGroupVersionKind(gardencorev1beta1.SchemeGroupVersion.WithKind("ShootList"))
	require.NoError(t, env.Client.List(context.Background(), shoots))
	return max(1, (len(shoots.Items)+499)/500)
}

func statusLabel(t testing.TB, s *gardencorev1beta1.Shoot) string {
	t.Helper()
	return fresh(t, s).Labels[statuslabel.Label]
}

func TestStatusLabelFollowsTheShootsHealth(t *testing.T) {
	f := newFixture(t, functiontest.AsFunction())
	s := f.shootWithSpec(t, "health", nil)
	f.Send("add", s)
	assert.Equal(t, "healthy", statusLabel(t, s), "not reconciled yet")

	s = writeShootStatus(t, s, func(st *gardencorev1beta1.ShootStatus) {
		st.LastOperation = lastOperation(gardencorev1beta1.LastOperationTypeReconcile, gardencorev1beta1.LastOperationStateSucceeded)
		st.Conditions = []gardencorev1beta1.Condition{
			{Type: gardencorev1beta1.ShootAPIServerAvailable, Status: gardencorev1beta1.ConditionTrue},
			{Type: gardencorev1beta1.ShootEveryNodeReady, Status: gardencorev1beta1.ConditionProgressing},
		}
	})
	f.Send("update", s)
	assert.Equal(t, "progressing", statusLabel(t, s))

	s = writeShootStatus(t, s, func(st *gardencorev1beta1.ShootStatus) {
		st.LastOperation = lastOperation(gardencorev1beta1.LastOperationTypeReconcile, gardencorev1beta1.LastOperationStateFailed)
	})
	f.Send("update", s)
	assert.Equal(t, "unhealthy", statusLabel(t, s))

	// The label is right: the event of the reconciler's own patch is filtered (by every
	// reconciler of the function).
	counts := f.Measure(func() { f.Send("update", fresh(t, s)) })
	assert.Empty(t, counts)
}

func TestStatusLabelSweep(t *testing.T) {
	f := newFixture(t, functiontest.AsFunction())
	fresh := f.shootWithSpec(t, "new", nil)
	failed := writeShootStatus(t, f.shootWithSpec(t, "failed", nil), func(st *gardencorev1beta1.ShootStatus) {
		st.LastOperation = lastOperation(gardencorev1beta1.LastOperationTypeReconcile, gardencorev1beta1.LastOperationStateFailed)
	})
	unknown := writeShootStatus(t, f.shootWithSpec(t, "unknown", nil), func(st *gardencorev1beta1.ShootStatus) {
		st.LastOperation = lastOperation(gardencorev1beta1.LastOperationTypeReconcile, gardencorev1beta1.LastOperationStateSucceeded)
		st.Conditions = []gardencorev1beta1.Condition{{Type: gardencorev1beta1.ShootControlPlaneHealthy, Status: gardencorev1beta1.ConditionUnknown}}
	})
	wrong := f.shootWithSpec(t, "wrong", func(s *gardencorev1beta1.Shoot) { s.Labels = map[string]string{statuslabel.Label: "unhealthy"} })

	f.Sweep(statuslabel.Name)
	assert.Equal(t, "healthy", statusLabel(t, fresh))
	assert.Equal(t, "unhealthy", statusLabel(t, failed))
	assert.Equal(t, "unknown", statusLabel(t, unknown))
	assert.Equal(t, "healthy", statusLabel(t, wrong))

	counts := f.Measure(func() { f.Sweep(statuslabel.Name) })
	assert.Equal(t, map[string]int{"list": shootPages(t)}, counts, "a sweep with nothing changed: one paginated LIST of the Shoots, no write")
}

// BenchmarkSweeps10000Shoots measures the statuslabel and quota sweeps over a garden of 10,000
// Shoots (bound to a SecretBinding with a Quota of 30 days), against a real kube-apiserver,
// through HTTP: the first sweep, which labels (annotates) every Shoot, once ("first-*"), and a
// sweep with nothing changed per iteration (requests by verb per sweep, and its wall time as
// ns/op).
func BenchmarkSweeps10000Shoots(b *testing.B) {
	f := newFixture(b)
	ctx := context.Background()
	f.secretBindingWithQuotas(b, "trial", f.quotaWithLifetime(b, "month", ptr.To[int32](30)))
	require.NoError(b, testenv.Parallel(10000, func(i int) error {
		s := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("shoot-%05d", i), Namespace: f.ns}}
		s.Spec.SecretBindingName = ptr.To("trial")
		s.Spec.SeedName = ptr.To("seed-a")
		s.Spec.Provider.Workers = []gardencorev1beta1.Worker{{Name: "worker", Machine: gardencorev1beta1.Machine{Type: "m5.large"}, Minimum: 1, Maximum: 3}}
		return env.Client.Create(ctx, s)
	}))
	for _, sweep := range []string{statuslabel.Name, quota.Name} {
		b.Run(sweep, func(b *testing.B) {
			start := time.Now()
			first := f.Measure(func() { f.Sweep(sweep) })
			firstDuration := time.Since(start)
			var noop map[string]int
			for b.Loop() {
				noop = f.Measure(func() { f.Sweep(sweep) })
			}
			b.ReportMetric(float64(firstDuration.Milliseconds()), "first-ms")
			b.ReportMetric(float64(first["list"]), "first-lists")
			b.ReportMetric(float64(first["patch"]), "first-patches")
			b.ReportMetric(float64(noop["list"]), "lists/sweep")
			b.ReportMetric(float64(noop["get"]+noop["patch"]+noop["delete"]), "other-requests/sweep")
		})
	}
}
