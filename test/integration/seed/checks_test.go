package seed_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gardener-knative/gardener-knative/pkg/controller/seed/backupbucketscheck"
	"github.com/gardener-knative/gardener-knative/pkg/controller/seed/extensionscheck"
)

func newBackupBucket(t *testing.T, seedName, name string) *gardencorev1beta1.BackupBucket {
	t.Helper()
	b := &gardencorev1beta1.BackupBucket{ObjectMeta: metav1.ObjectMeta{Name: name}}
	b.Spec.SeedName = ptr.To(seedName)
	b.Spec.Provider.Type = "local"
	require.NoError(t, env.Client.Create(context.Background(), b))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), b) })
	return b
}

func setLastError(t *testing.T, b *gardencorev1beta1.BackupBucket, description string) {
	t.Helper()
	b.Status.LastError = nil
	if description != "" {
		b.Status.LastError = &gardencorev1beta1.LastError{Description: description}
	}
	require.NoError(t, env.Client.Status().Update(context.Background(), b))
}

func TestBackupBucketsCheck(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	s := newSeed(t)
	healthy := newBackupBucket(t, s.Name, s.Name+"-a")
	broken := newBackupBucket(t, s.Name, s.Name+"-b")

	h.Send("add", healthy)
	c := condition(t, s.Name, gardencorev1beta1.SeedBackupBucketsReady)
	require.NotNil(t, c)
	assert.Equal(t, gardencorev1beta1.ConditionTrue, c.Status)
	assert.Equal(t, backupbucketscheck.ReasonAvailable, c.Reason)
	assert.Equal(t, backupbucketscheck.MessageAvailable, c.Message)

	setLastError(t, broken, "access denied")
	h.Send("update", broken)
	c = condition(t, s.Name, gardencorev1beta1.SeedBackupBucketsReady)
	assert.Equal(t, gardencorev1beta1.ConditionFalse, c.Status, "without a threshold it fails at once")
	assert.Equal(t, backupbucketscheck.ReasonError, c.Reason)
	assert.Equal(t, fmt.Sprintf("The following BackupBuckets have issues:\n* Name: %s, Error: access denied", broken.Name), c.Message)

	assert.Equal(t, map[string]int{"get": 1, "list": 1}, h.Measure(func() { h.Send("update", broken) }), "an unchanged situation writes nothing")

	setLastError(t, broken, "")
	h.Send("update", broken)
	assert.Equal(t, gardencorev1beta1.ConditionTrue, condition(t, s.Name, gardencorev1beta1.SeedBackupBucketsReady).Status)

	t.Run("deleted buckets are the sweep's", func(t *testing.T) {
		require.NoError(t, env.Client.Delete(ctx, healthy))
		require.NoError(t, env.Client.Delete(ctx, broken))
		assert.Empty(t, h.Measure(func() { h.Send("delete", broken) }), "deletions are filtered, as Gardener's")
		h.Sweep(backupbucketscheck.ReconcilerName)
		c := condition(t, s.Name, gardencorev1beta1.SeedBackupBucketsReady)
		assert.Equal(t, gardencorev1beta1.ConditionUnknown, c.Status)
		assert.Equal(t, backupbucketscheck.ReasonGone, c.Reason)
	})
}

func TestBackupBucketsCheckThreshold(t *testing.T) {
	h := newHarness(t, withThresholds(time.Minute, 0))
	s := newSeed(t)
	b := newBackupBucket(t, s.Name, s.Name+"-a")
	h.Send("add", b)
	require.Equal(t, gardencorev1beta1.ConditionTrue, condition(t, s.Name, gardencorev1beta1.SeedBackupBucketsReady).Status)

	setLastError(t, b, "flaky")
	h.Send("update", b)
	assert.Equal(t, gardencorev1beta1.ConditionProgressing, condition(t, s.Name, gardencorev1beta1.SeedBackupBucketsReady).Status, "Progressing first")

	h.Clock.Step(30 * time.Second)
	h.Sweep(backupbucketscheck.ReconcilerName)
	assert.Equal(t, gardencorev1beta1.ConditionProgressing, condition(t, s.Name, gardencorev1beta1.SeedBackupBucketsReady).Status, "within the threshold")

	h.Clock.Step(31 * time.Second)
	h.Sweep(backupbucketscheck.ReconcilerName)
	c := condition(t, s.Name, gardencorev1beta1.SeedBackupBucketsReady)
	assert.Equal(t, gardencorev1beta1.ConditionFalse, c.Status, "False once the threshold expired")
	assert.Equal(t, backupbucketscheck.ReasonError, c.Reason)
}

// newInstallation creates a ControllerInstallation of the seed with the four checked conditions.
func newInstallation(t *testing.T, seedName, name string, healthy gardencorev1beta1.ConditionStatus) *gardencorev1beta1.ControllerInstallation {
	t.Helper()
	ctx := context.Background()
	ci := &gardencorev1beta1.ControllerInstallation{ObjectMeta: metav1.ObjectMeta{Name: name}}
	ci.Spec.SeedRef = &corev1.ObjectReference{Name: seedName}
	ci.Spec.RegistrationRef = corev1.ObjectReference{Name: name}
	require.NoError(t, env.Client.Create(ctx, ci))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), ci) })
	setInstallationHealth(t, ci, healthy)
	return ci
}

func setInstallationHealth(t *testing.T, ci *gardencorev1beta1.ControllerInstallation, healthy gardencorev1beta1.ConditionStatus) {
	t.Helper()
	now := metav1.NewTime(start)
	ci.Status.Conditions = nil
	for conditionType, status := range map[gardencorev1beta1.ConditionType]gardencorev1beta1.ConditionStatus{
		gardencorev1beta1.ControllerInstallationValid: "True", gardencorev1beta1.ControllerInstallationInstalled: "True",
		gardencorev1beta1.ControllerInstallationHealthy: healthy, gardencorev1beta1.ControllerInstallationProgressing: "False",
	} {
		ci.Status.Conditions = append(ci.Status.Conditions, gardencorev1beta1.Condition{Type: conditionType, Status: status, Reason: "Test",
			Message: string(conditionType) + " is " + string(status), LastTransitionTime: now, LastUpdateTime: now})
	}
	require.NoError(t, env.Client.Status().Update(context.Background(), ci))
}

func TestExtensionsCheck(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, withThresholds(0, time.Minute))
	s := newSeed(t)
	a := newInstallation(t, s.Name, s.Name+"-ext-a", "True")
	b := newInstallation(t, s.Name, s.Name+"-ext-b", "True")

	h.Send("add", a)
	c := condition(t, s.Name, gardencorev1beta1.SeedExtensionsReady)
	require.NotNil(t, c)
	assert.Equal(t, gardencorev1beta1.ConditionTrue, c.Status)
	assert.Equal(t, extensionscheck.ReasonReady, c.Reason)
	assert.Equal(t, extensionscheck.MessageReady, c.Message)

	setInstallationHealth(t, b, "False")
	h.Send("update", b)
	c = condition(t, s.Name, gardencorev1beta1.SeedExtensionsReady)
	assert.Equal(t, gardencorev1beta1.ConditionProgressing, c.Status, "Progressing within the threshold")
	assert.Equal(t, extensionscheck.ReasonNotHealthy, c.Reason)
	assert.Equal(t, fmt.Sprintf("Some extensions are not healthy: map[%s:Healthy is False]", b.Name), c.Message)

	h.Clock.Step(61 * time.Second)
	h.Sweep(extensionscheck.ReconcilerName)
	assert.Equal(t, gardencorev1beta1.ConditionFalse, condition(t, s.Name, gardencorev1beta1.SeedExtensionsReady).Status, "False once the threshold expired")

	require.NoError(t, env.Client.Delete(ctx, b))
	h.Send("delete", b)
	assert.Equal(t, gardencorev1beta1.ConditionTrue, condition(t, s.Name, gardencorev1beta1.SeedExtensionsReady).Status, "the deletion of the unhealthy one heals the seed")
}
