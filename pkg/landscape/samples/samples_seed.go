package samples

import (
	"context"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// seedSamples shows the seed function at work: a Seed whose gardenlet renewed its Lease once at
// start and then fell silent (GardenletReady turns Unknown 40 s later, the conditions of its
// Shoot 200 s after that), a shared garden Secret that is copied into seed-sample, one
// BackupBucket with an error (BackupBucketsReady False) and one healthy ControllerInstallation
// (ExtensionsReady True).
func seedSamples(ctx context.Context, c client.Client) error {
	const seedName = "sample"
	for _, ns := range []string{v1beta1constants.GardenNamespace, gardencorev1beta1.GardenerSeedLeaseNamespace, "garden-seed-sample"} {
		if err := client.IgnoreAlreadyExists(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})); err != nil {
			return err
		}
	}
	now := metav1.NewTime(time.Now())

	// Gardener's annotations of a domain Secret: once copied into seed-<name>, the
	// controllerregistration function reads them for the DNSRecord type every Shoot requires.
	shared := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
		Name: "sample-internal-domain", Namespace: v1beta1constants.GardenNamespace,
		Labels:      map[string]string{v1beta1constants.GardenRole: v1beta1constants.GardenRoleInternalDomain},
		Annotations: map[string]string{"dns.gardener.cloud/provider": "local", "dns.gardener.cloud/domain": "internal.sample.example"},
	}, StringData: map[string]string{"domain": "internal.sample.example"}}
	if err := c.Create(ctx, shared); err != nil {
		return err
	}

	// As a gardenlet does, the Lease first, then the status: a seed reporting ready without a Lease
	// is overdue at once.
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: seedName, Namespace: gardencorev1beta1.GardenerSeedLeaseNamespace}}
	lease.Spec.HolderIdentity = ptr.To(seedName)
	lease.Spec.RenewTime = &metav1.MicroTime{Time: now.Time}
	if err := c.Create(ctx, lease); err != nil {
		return err
	}
	seed := &gardencorev1beta1.Seed{ObjectMeta: metav1.ObjectMeta{Name: seedName}}
	seed.Spec.Provider.Type = "local"
	if err := c.Create(ctx, seed); err != nil {
		return err
	}
	seed.Status.Conditions = []gardencorev1beta1.Condition{{
		Type: gardencorev1beta1.GardenletReady, Status: gardencorev1beta1.ConditionTrue, Reason: "GardenletReady",
		Message: "Gardenlet is posting ready status.", LastTransitionTime: now, LastUpdateTime: now,
	}}
	if err := setStatus(ctx, c, seed); err != nil {
		return err
	}

	shoot := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: "on-silent-seed", Namespace: "garden-seed-sample"}}
	shoot.Spec.SeedName = ptr.To(seedName)
	shoot.Spec.Provider.Type = "local" // served by provider-local (extensionSamples), as the seed's own kinds
	shoot.Spec.Provider.Workers = []gardencorev1beta1.Worker{{Name: "worker"}}
	if err := c.Create(ctx, shoot); err != nil {
		return err
	}
	shoot.Status.SeedName = ptr.To(seedName)
	shoot.Status.Conditions = []gardencorev1beta1.Condition{{
		Type: gardencorev1beta1.ShootAPIServerAvailable, Status: gardencorev1beta1.ConditionTrue, Reason: "HealthzRequestSucceeded",
		Message: "API server /healthz endpoint responded with success status code.", LastTransitionTime: now, LastUpdateTime: now,
	}}
	if err := setStatus(ctx, c, shoot); err != nil {
		return err
	}

	bucket := &gardencorev1beta1.BackupBucket{ObjectMeta: metav1.ObjectMeta{Name: "sample-bucket"}}
	bucket.Spec.SeedName = ptr.To(seedName)
	bucket.Spec.Provider.Type = "local"
	if err := c.Create(ctx, bucket); err != nil {
		return err
	}
	bucket.Status.LastError = &gardencorev1beta1.LastError{Description: "bucket quota exceeded"}
	if err := setStatus(ctx, c, bucket); err != nil {
		return err
	}

	// The installation of provider-local, which the seed needs for its provider: the
	// controllerregistration function keeps it (gardenlet would report its conditions).
	installation := &gardencorev1beta1.ControllerInstallation{ObjectMeta: metav1.ObjectMeta{Name: "provider-local-sample"}}
	installation.Spec.SeedRef = &corev1.ObjectReference{Name: seedName}
	installation.Spec.RegistrationRef = corev1.ObjectReference{Name: "provider-local"}
	if err := c.Create(ctx, installation); err != nil {
		return err
	}
	for _, t := range []struct {
		conditionType gardencorev1beta1.ConditionType
		status        gardencorev1beta1.ConditionStatus
	}{
		{gardencorev1beta1.ControllerInstallationValid, gardencorev1beta1.ConditionTrue},
		{gardencorev1beta1.ControllerInstallationInstalled, gardencorev1beta1.ConditionTrue},
		{gardencorev1beta1.ControllerInstallationHealthy, gardencorev1beta1.ConditionTrue},
		{gardencorev1beta1.ControllerInstallationProgressing, gardencorev1beta1.ConditionFalse},
	} {
		installation.Status.Conditions = append(installation.Status.Conditions, gardencorev1beta1.Condition{
			Type: t.conditionType, Status: t.status, Reason: "Sample", Message: "sample", LastTransitionTime: now, LastUpdateTime: now,
		})
	}
	return setStatus(ctx, c, installation)
}
