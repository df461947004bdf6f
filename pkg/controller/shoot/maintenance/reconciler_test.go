package maintenance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	testclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/scheme"
)

// recordingWriter applies mutations and records them; the spec patch fails with specErr.
type recordingWriter struct {
	specErr error
	calls   []string
	shoots  []*gardencorev1beta1.Shoot
}

func (w *recordingWriter) Create(context.Context, client.Object) error {
	return errors.New("unexpected create")
}
func (w *recordingWriter) Delete(context.Context, client.Object, ...client.DeleteOption) error {
	return errors.New("unexpected delete")
}

func (w *recordingWriter) Patch(_ context.Context, obj client.Object, mutate func()) (bool, error) {
	mutate()
	shoot := obj.(*gardencorev1beta1.Shoot)
	if w.specErr != nil && len(w.calls) > 0 && w.calls[len(w.calls)-1] == "status" {
		w.calls = append(w.calls, "rejected")
		return true, w.specErr
	}
	w.calls = append(w.calls, "patch")
	w.shoots = append(w.shoots, shoot.DeepCopy())
	return true, nil
}

func (w *recordingWriter) Touch(context.Context, client.Object) error {
	w.calls = append(w.calls, "touch")
	return nil
}

func (w *recordingWriter) PatchStatus(_ context.Context, obj client.Object, mutate func()) (bool, error) {
	mutate()
	w.calls = append(w.calls, "status")
	w.shoots = append(w.shoots, obj.(*gardencorev1beta1.Shoot).DeepCopy())
	return true, nil
}

func (w *recordingWriter) PatchSubResource(_ context.Context, _ client.Object, subResource string, _ func()) (bool, error) {
	w.calls = append(w.calls, subResource)
	return true, nil
}

type recordedEvents []string

func (r *recordedEvents) Event(_ context.Context, _ client.Object, eventType, reason, message string) {
	*r = append(*r, eventType+" "+reason+": "+message)
}

func (r *recordedEvents) Eventf(ctx context.Context, obj client.Object, eventType, reason, format string, args ...any) {
	r.Event(ctx, obj, eventType, reason, fmt.Sprintf(format, args...))
}

func newTestReconciler(w function.Writer, events *recordedEvents) *Reconciler {
	return &Reconciler{Writer: w, Events: events, Clock: testclock.NewFakePassiveClock(now), Config: MaintenanceConfig{RestartControlPlane: true}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

func maintainNowShoot() *gardencorev1beta1.Shoot {
	s := shootWith("1.30.1", true, false)
	s.Namespace = "garden-test"
	s.Annotations = map[string]string{v1beta1constants.GardenerOperation: v1beta1constants.ShootOperationMaintain}
	s.Status.LastOperation = &gardencorev1beta1.LastOperation{State: gardencorev1beta1.LastOperationStateSucceeded}
	return s
}

func TestMaintenanceRejectedByTheAPIServer(t *testing.T) {
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: "core.gardener.cloud", Kind: "Shoot"}, "s", field.ErrorList{field.Forbidden(field.NewPath("spec", "kubernetes", "version"), "no")})
	w := &recordingWriter{specErr: invalid}
	events := &recordedEvents{}
	require.NoError(t, newTestReconciler(w, events).maintain(context.Background(), maintainNowShoot(), profile(), "aws", now))

	assert.Equal(t, []string{"status", "rejected", "patch", "status"}, w.calls)
	processing := w.shoots[0].Status.LastMaintenance
	assert.Equal(t, gardencorev1beta1.LastOperationStateProcessing, processing.State, "reported before the changes are applied, as Gardener does")

	consumed := w.shoots[1]
	assert.Equal(t, "1.30.1", consumed.Spec.Kubernetes.Version, "the Shoot stays as it was")
	assert.NotContains(t, consumed.Annotations, v1beta1constants.GardenerOperation, "the maintain request is consumed")
	assert.NotContains(t, consumed.Annotations, v1beta1constants.ShootTasks)
	assert.Equal(t, now.Format(time.RFC3339), consumed.Annotations[MaintainedAtAnnotation], "not retried before the next window")

	failed := w.shoots[2].Status.LastMaintenance
	assert.Equal(t, gardencorev1beta1.LastOperationStateFailed, failed.State)
	assert.Equal(t, "Maintenance failed", failed.Description)
	assert.Equal(t, "Updates to the Shoot failed to be applied: "+invalid.Error(), *failed.FailureReason)
	assert.Empty(t, *events)
}

func TestMaintenanceWriteFailures(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		events []string
	}{
		{name: "an API error is reported as an Event and retried", err: apierrors.NewInternalError(errors.New("etcd is gone")),
			events: []string{"Warning MaintenanceFailed: Internal error occurred: etcd is gone"}},
		{name: "a conflict is only retried, from live state", err: apierrors.NewConflict(schema.GroupResource{Resource: "shoots"}, "s", errors.New("changed"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &recordingWriter{specErr: tc.err}
			events := &recordedEvents{}
			err := newTestReconciler(w, events).maintain(context.Background(), maintainNowShoot(), profile(), "aws", now)
			assert.ErrorIs(t, err, tc.err)
			assert.Equal(t, []string{"status", "rejected"}, w.calls)
			assert.ElementsMatch(t, tc.events, []string(*events))
		})
	}
}

func TestMaintenanceSucceeds(t *testing.T) {
	w := &recordingWriter{}
	events := &recordedEvents{}
	require.NoError(t, newTestReconciler(w, events).maintain(context.Background(), maintainNowShoot(), profile(), "aws", now))
	assert.Equal(t, []string{"status", "patch", "status"}, w.calls)
	assert.Equal(t, "1.30.5", w.shoots[1].Spec.Kubernetes.Version)
	assert.Equal(t, "reconcile", w.shoots[1].Annotations[v1beta1constants.GardenerOperation])
	assert.Equal(t, gardencorev1beta1.LastOperationStateSucceeded, w.shoots[2].Status.LastMaintenance.State)
	assert.Equal(t, []string{`Normal KubernetesVersionMaintenance: Control Plane: Updated Kubernetes version from "1.30.1" to "1.30.5". Reason: Automatic update of Kubernetes version configured.`}, []string(*events))
}

// The status write that ends a maintenance conflicted after its changes landed (another writer
// in between) and the maintenance is not due again: the next reconcile, by the redelivered event
// or the next sweep, ends it, and maintains nothing twice.
func TestLandedMaintenanceEndedByTheNextReconcile(t *testing.T) {
	shoot := shootWith("1.30.5", true, false)
	shoot.Namespace, shoot.Name = "garden-test", "s"
	shoot.Annotations = map[string]string{MaintainedAtAnnotation: now.Format(time.RFC3339), v1beta1constants.GardenerOperation: v1beta1constants.GardenerOperationReconcile}
	shoot.Status.LastMaintenance = &gardencorev1beta1.LastMaintenance{Description: "Control Plane: Updated", TriggeredTime: metav1.Time{Time: now}, State: gardencorev1beta1.LastOperationStateProcessing}
	c := fake.NewClientBuilder().WithScheme(scheme.Gardener).WithObjects(shoot).WithStatusSubresource(shoot).Build()
	w := &recordingWriter{}
	events := &recordedEvents{}
	r := newTestReconciler(w, events)
	r.Clock = testclock.NewFakePassiveClock(now.Add(time.Minute))

	require.NoError(t, r.Reconcile(context.Background(), function.Request{Key: client.ObjectKeyFromObject(shoot), Reader: c, Trigger: function.BySweep}))
	assert.Equal(t, []string{"status"}, w.calls, "only the missing status write")
	ended := w.shoots[0].Status.LastMaintenance
	assert.Equal(t, gardencorev1beta1.LastOperationStateSucceeded, ended.State)
	assert.Equal(t, "Control Plane: Updated", ended.Description, "the maintenance's own report kept")
	assert.Empty(t, *events)
}
