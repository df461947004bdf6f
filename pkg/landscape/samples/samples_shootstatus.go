package samples

import (
	"context"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// shootStatusSamples creates a project namespace whose Shoots show the shoot function's status
// reconcilers at work:
//   - retry: "rate-limited" failed with ERR_INFRA_RATE_LIMITS_EXCEEDED 15 minutes ago and is
//     annotated gardener.cloud/operation=retry by the first retry sweep; "rate-limited-soon"
//     failed 8 minutes ago and is annotated 2 to 7 minutes after start (10 minutes plus its
//     jitter); "quota-exceeded" failed with another code and is never retried;
//   - quota: the SecretBinding "trial" lists the Quota "one-day" (clusterLifetimeDays 1):
//     "expired" is past its expiration and is deleted by the first quota sweep, "expires-in-3m"
//     three minutes after start, and "trial" gets the expiration annotation (creation + 1 day);
//   - statuslabel: every Shoot gets shoot.gardener.cloud/status; "healthy", "progressing",
//     "unknown" show the values the failed ones (unhealthy) do not;
//   - the shootstate function: "migrating" is in its Migrate operation, and its ShootState gets
//     the finalizer core.gardener.cloud/shootstate from the first sweep.
func shootStatusSamples(ctx context.Context, c client.Client) error {
	const ns = "garden-shoot-status"
	now := time.Now()
	oneDay := &gardencorev1beta1.Quota{ObjectMeta: metav1.ObjectMeta{Name: "one-day", Namespace: ns}}
	oneDay.Spec.Scope = corev1.ObjectReference{APIVersion: "v1", Kind: "Secret"}
	oneDay.Spec.ClusterLifetimeDays = ptr.To[int32](1)
	if err := createReferenceSamples(ctx, c,
		referenceSamplesNamespace(ns),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cloud", Namespace: ns}},
		oneDay,
		&gardencorev1beta1.SecretBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "trial", Namespace: ns},
			SecretRef:  corev1.SecretReference{Name: "cloud", Namespace: ns},
			Provider:   &gardencorev1beta1.SecretBindingProvider{Type: "local"},
			Quotas:     []corev1.ObjectReference{{Name: "one-day", Namespace: ns}},
		},
	); err != nil {
		return err
	}

	failed := func(ago time.Duration, code gardencorev1beta1.ErrorCode) func(*gardencorev1beta1.ShootStatus) {
		return func(st *gardencorev1beta1.ShootStatus) {
			st.LastOperation = &gardencorev1beta1.LastOperation{
				Type: gardencorev1beta1.LastOperationTypeReconcile, State: gardencorev1beta1.LastOperationStateFailed,
				Description: "infrastructure reconciliation failed", LastUpdateTime: metav1.NewTime(now.Add(-ago)),
			}
			st.LastErrors = []gardencorev1beta1.LastError{{Description: "the provider refused the request", Codes: []gardencorev1beta1.ErrorCode{code}}}
		}
	}
	reconciled := func(conditionStatus gardencorev1beta1.ConditionStatus) func(*gardencorev1beta1.ShootStatus) {
		return func(st *gardencorev1beta1.ShootStatus) {
			st.LastOperation = &gardencorev1beta1.LastOperation{
				Type: gardencorev1beta1.LastOperationTypeReconcile, State: gardencorev1beta1.LastOperationStateSucceeded,
				Description: "Shoot cluster has been successfully reconciled.", LastUpdateTime: metav1.NewTime(now), Progress: 100,
			}
			st.Conditions = []gardencorev1beta1.Condition{
				{Type: gardencorev1beta1.ShootAPIServerAvailable, Status: gardencorev1beta1.ConditionTrue, LastTransitionTime: metav1.NewTime(now), LastUpdateTime: metav1.NewTime(now)},
				{Type: gardencorev1beta1.ShootEveryNodeReady, Status: conditionStatus, LastTransitionTime: metav1.NewTime(now), LastUpdateTime: metav1.NewTime(now)},
			}
		}
	}
	for _, sample := range []struct {
		name, expiration string
		status           func(*gardencorev1beta1.ShootStatus)
	}{
		{name: "rate-limited", status: failed(15*time.Minute, gardencorev1beta1.ErrorInfraRateLimitsExceeded)},
		{name: "rate-limited-soon", status: failed(8*time.Minute, gardencorev1beta1.ErrorInfraRateLimitsExceeded)},
		{name: "quota-exceeded", status: failed(time.Hour, gardencorev1beta1.ErrorInfraQuotaExceeded)},
		{name: "expired", expiration: now.Add(-time.Minute).UTC().Format(time.RFC3339), status: reconciled(gardencorev1beta1.ConditionTrue)},
		{name: "expires-in-3m", expiration: now.Add(3 * time.Minute).UTC().Format(time.RFC3339), status: reconciled(gardencorev1beta1.ConditionTrue)},
		{name: "trial", status: reconciled(gardencorev1beta1.ConditionTrue)},
		{name: "healthy", status: reconciled(gardencorev1beta1.ConditionTrue)},
		{name: "progressing", status: reconciled(gardencorev1beta1.ConditionProgressing)},
		{name: "unknown", status: reconciled(gardencorev1beta1.ConditionUnknown)},
		{name: "migrating", status: func(st *gardencorev1beta1.ShootStatus) {
			st.LastOperation = &gardencorev1beta1.LastOperation{
				Type: gardencorev1beta1.LastOperationTypeMigrate, State: gardencorev1beta1.LastOperationStateProcessing,
				Description: "Migrating the control plane.", LastUpdateTime: metav1.NewTime(now), Progress: 40,
			}
		}},
	} {
		shoot := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: sample.name, Namespace: ns}}
		if sample.expiration != "" || sample.name == "trial" {
			shoot.Spec.SecretBindingName = ptr.To("trial")
		}
		if sample.expiration != "" {
			shoot.Annotations = map[string]string{v1beta1constants.ShootExpirationTimestamp: sample.expiration}
		}
		if err := c.Create(ctx, shoot); err != nil {
			if client.IgnoreAlreadyExists(err) != nil {
				return err
			}
			continue
		}
		shoot.Status.ObservedGeneration = shoot.Generation
		sample.status(&shoot.Status)
		if err := setStatus(ctx, c, shoot); err != nil {
			return err
		}
	}
	return client.IgnoreAlreadyExists(c.Create(ctx, &gardencorev1beta1.ShootState{ObjectMeta: metav1.ObjectMeta{Name: "migrating", Namespace: ns}}))
}
