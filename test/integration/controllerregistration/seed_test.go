package controllerregistration_test

import (
	"context"
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/controllerregistration/seed"
	"github.com/gardener-knative/gardener-knative/pkg/controller/controllerregistration/seedfinalizer"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
)

// TestSeedInstallationsFollowShoots walks one seed through its life as its shoots come and go:
// the installations of its own provider and of policy Always from the start, those of a shoot's
// provider, OS and of AlwaysExceptNoShoots while it has a shoot, and none of those after; one
// whose installation reports Required stays.
func TestSeedInstallationsFollowShoots(t *testing.T) {
	f := newFixture(t, functiontest.AsFunction())
	ctx := context.Background()
	f.providerRegistration("aws")
	f.providerRegistration("gcp")
	f.registration("os-gardenlinux", "", resource{Kind: "OperatingSystemConfig", Type: "gardenlinux"})
	always := f.registration("always", gardencorev1beta1.ControllerDeploymentPolicyAlways, resource{Kind: "Extension", Type: "always"})
	f.registration("except-no-shoots", gardencorev1beta1.ControllerDeploymentPolicyAlwaysExceptNoShoots, resource{Kind: "Extension", Type: "ens"})
	deployment := &gardencorev1beta1.ControllerDeployment{ObjectMeta: metav1.ObjectMeta{Name: f.name("always")}, Type: "helm",
		ProviderConfig: runtime.RawExtension{Raw: []byte(`{"values":{"replicas":1}}`)}}
	require.NoError(t, env.Client.Create(ctx, deployment))
	t.Cleanup(func() { forceDelete(t, deployment) })
	always.Spec.Deployment.DeploymentRefs = []gardencorev1beta1.DeploymentRef{{Name: deployment.Name}}
	require.NoError(t, env.Client.Update(ctx, always))

	s := f.seed("seed", "aws")
	f.Send("add", s)
	assert.Equal(t, []string{"always", "provider-aws"}, f.registrationNames(s.Name), "its provider's, and Always")
	f.get(s)
	assert.Contains(t, s.Finalizers, seedfinalizer.FinalizerName, "the seed finalizer reconciler protects it")

	ci := f.installations(s.Name)[always.Name]
	assert.Equal(t, seed.InstallationName(always.Name, s.Name), ci.Name, "<registration>-<5 characters>")
	assert.Equal(t, always.Name, ci.Spec.RegistrationRef.Name)
	assert.Equal(t, s.Name, ci.Spec.SeedRef.Name)
	require.NotNil(t, ci.Spec.DeploymentRef)
	assert.Equal(t, deployment.Name, ci.Spec.DeploymentRef.Name)
	for _, label := range []string{seed.LabelSeedSpecHash, seed.LabelRegistrationSpecHash, seed.LabelDeploymentHash} {
		assert.Len(t, ci.Labels[label], 16, label)
	}

	shoot := f.shoot("a", s.Name, "gcp", "gardenlinux")
	f.Send("add", shoot)
	assert.Equal(t, []string{"always", "except-no-shoots", "os-gardenlinux", "provider-aws", "provider-gcp"}, f.registrationNames(s.Name))

	// gardenlet reports the OS extension still required (its resources are being cleaned up).
	osCI := f.installations(s.Name)[f.name("os-gardenlinux")]
	osCI.Status.Conditions = []gardencorev1beta1.Condition{{Type: gardencorev1beta1.ControllerInstallationRequired, Status: gardencorev1beta1.ConditionTrue, Reason: "ExtensionObjectsExist"}}
	require.NoError(t, env.Client.Status().Update(ctx, &osCI))

	require.NoError(t, env.Client.Delete(ctx, shoot))
	f.Send("delete", shoot)
	assert.Equal(t, []string{"always", "os-gardenlinux", "provider-aws"}, f.registrationNames(s.Name), "the shoot's go, except the one still Required")

	osCI.Status.Conditions[0].Status = gardencorev1beta1.ConditionFalse
	require.NoError(t, env.Client.Status().Update(ctx, &osCI))
	f.Send("update", &osCI)
	assert.Equal(t, []string{"always", "provider-aws"}, f.registrationNames(s.Name), "no longer Required: deleted")
}

// TestSeedInstallationsUpdateAndNoOp: an installation follows its registration (a new label
// hash and resourceVersion), a reconcile with nothing changed writes nothing, and a sweep does
// not rewrite an installation whose references differ in their resourceVersions only.
func TestSeedInstallationsUpdateAndNoOp(t *testing.T) {
	f := newFixture(t, functiontest.AsFunction())
	ctx := context.Background()
	provider := f.providerRegistration("aws")
	s := f.seed("seed", "aws")
	f.Send("add", s) // also adds the seed's finalizer: a new resourceVersion
	f.get(s)
	f.Send("update", s)
	before := f.installations(s.Name)[provider.Name]
	assert.Equal(t, s.ResourceVersion, before.Spec.SeedRef.ResourceVersion)

	writes := f.Measure(func() { f.Send("update", s) })
	assert.Zero(t, writes["create"]+writes["patch"]+writes["delete"], "nothing changed, nothing written: %v", writes)

	// gardenlet updates the seed's status: a new resourceVersion, nothing else.
	s.Status.Conditions = []gardencorev1beta1.Condition{{Type: "GardenletReady", Status: gardencorev1beta1.ConditionTrue, Reason: "Ready"}}
	require.NoError(t, env.Client.Status().Update(ctx, s))
	writes = f.Measure(func() { f.Sweep(seed.SweepName) })
	assert.Zero(t, writes["create"]+writes["patch"]+writes["delete"], "a sweep leaves resourceVersions of references alone: %v", writes)

	provider.Spec.Deployment = &gardencorev1beta1.ControllerRegistrationDeployment{Policy: ptr.To(gardencorev1beta1.ControllerDeploymentPolicyOnDemand)}
	require.NoError(t, env.Client.Update(ctx, provider))
	f.Send("update", provider)
	after := f.installations(s.Name)[provider.Name]
	assert.Equal(t, before.Name, after.Name)
	assert.NotEqual(t, before.Labels[seed.LabelRegistrationSpecHash], after.Labels[seed.LabelRegistrationSpecHash])
	assert.Equal(t, provider.ResourceVersion, after.Spec.RegistrationRef.ResourceVersion)
	assert.Equal(t, s.ResourceVersion, after.Spec.SeedRef.ResourceVersion, "an event's reconcile references the versions read, as Gardener's")
}

// TestSeedBackupAndDNS: BackupBuckets and BackupEntries (through their bucket's type), the
// seed's DNS provider and the internal domain Secret of its garden namespace count.
func TestSeedBackupAndDNS(t *testing.T) {
	f := newFixture(t, functiontest.AsFunction())
	ctx := context.Background()
	f.providerRegistration("aws")
	f.registration("backup-s3", "", resource{Kind: "BackupBucket", Type: "s3"}, resource{Kind: "BackupEntry", Type: "s3"})
	f.registration("dns-route53", "", resource{Kind: "DNSRecord", Type: "route53"})
	f.registration("dns-internal", "", resource{Kind: "DNSRecord", Type: "internal"})
	f.registration("unused", "", resource{Kind: "DNSRecord", Type: "unused"})
	s := f.seed("seed", "aws", func(s *gardencorev1beta1.Seed) {
		s.Spec.DNS.Provider = &gardencorev1beta1.SeedDNSProvider{Type: f.name("route53")}
	})

	bucket := &gardencorev1beta1.BackupBucket{ObjectMeta: metav1.ObjectMeta{Name: f.name("bucket")}}
	bucket.Spec.Provider.Type = f.name("s3")
	bucket.Spec.SeedName = ptr.To(f.name("elsewhere"))
	require.NoError(t, env.Client.Create(ctx, bucket))
	t.Cleanup(func() { forceDelete(t, bucket) })
	entry := &gardencorev1beta1.BackupEntry{ObjectMeta: metav1.ObjectMeta{Name: "entry", Namespace: f.ns}}
	entry.Spec.BucketName = bucket.Name
	entry.Spec.SeedName = ptr.To(s.Name)
	require.NoError(t, env.Client.Create(ctx, entry))

	// A shoot is needed for the internal domain to count.
	secretIn(t, "seed-"+s.Name, "internal-domain", map[string]string{
		"dns.gardener.cloud/provider": f.name("internal"), "dns.gardener.cloud/domain": "internal.example.com",
	})
	f.providerRegistration("gcp")
	f.registration("os", "", resource{Kind: "OperatingSystemConfig", Type: "gardenlinux"})
	f.shoot("a", s.Name, "gcp", "gardenlinux")
	f.Send("add", entry)
	assert.Equal(t, []string{"backup-s3", "dns-internal", "dns-route53", "os", "provider-aws", "provider-gcp"}, f.registrationNames(s.Name))
}

// TestSeedMissingRegistration: a kind/type no registration serves is acknowledged (the sender
// cannot help) and changes nothing.
func TestSeedMissingRegistration(t *testing.T) {
	f := newFixture(t, functiontest.AsFunction())
	s := f.seed("seed", "aws")
	f.Send("add", s)
	assert.Empty(t, f.installations(s.Name))
}

// TestSeedDeletion: a seed being deleted loses its installations, then its finalizer once the
// last installation is gone (gardenlet's finalizer keeps one while it uninstalls).
func TestSeedDeletion(t *testing.T) {
	f := newFixture(t, functiontest.AsFunction())
	ctx := context.Background()
	provider := f.providerRegistration("aws")
	f.registration("always", gardencorev1beta1.ControllerDeploymentPolicyAlways, resource{Kind: "Extension", Type: "always"})
	s := f.seed("seed", "aws")
	f.Send("add", s)
	require.Len(t, f.installations(s.Name), 2)
	uninstalling := f.installations(s.Name)[provider.Name]
	uninstalling.Finalizers = []string{"core.gardener.cloud/controllerinstallation"}
	require.NoError(t, env.Client.Update(ctx, &uninstalling))

	require.NoError(t, env.Client.Delete(ctx, s))
	f.get(s)
	f.Send("update", s)
	f.get(&uninstalling)
	assert.NotNil(t, uninstalling.DeletionTimestamp, "a seed being deleted needs nothing")
	f.get(s)
	assert.Contains(t, s.Finalizers, seedfinalizer.FinalizerName, "an installation is left")

	uninstalling.Finalizers = nil
	require.NoError(t, env.Client.Update(ctx, &uninstalling))
	f.Send("delete", &uninstalling)
	err := env.Client.Get(ctx, client.ObjectKeyFromObject(s), s)
	assert.True(t, apierrors.IsNotFound(err), "released once no installation references it: %v", err)
}

// TestSeedConcurrentReconcilesCreateOnce: two reconciles of one seed that both see no
// installation create one, not two (the deterministic name makes the second a conflict).
func TestSeedConcurrentReconcilesCreateOnce(t *testing.T) {
	f := newFixture(t, functiontest.AsFunction())
	f.providerRegistration("aws")
	s := f.seed("seed", "aws")
	done := make(chan struct{})
	for range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			f.Post(f.Event("add", s))
		}()
	}
	for range 4 {
		<-done
	}
	assert.Len(t, f.installations(s.Name), 1)
}

// TestRegistrationEventsConvergeAllSeeds: a new ControllerRegistration and a changed
// ControllerDeployment reach every seed in one pass (a constant number of LISTs).
func TestRegistrationEventsConvergeAllSeeds(t *testing.T) {
	f := newFixture(t, functiontest.AsFunction())
	ctx := context.Background()
	f.providerRegistration("aws")
	a, b := f.seed("a", "aws"), f.seed("b", "aws")
	f.Sweep(seed.SweepName)

	deployment := &gardencorev1beta1.ControllerDeployment{ObjectMeta: metav1.ObjectMeta{Name: f.name("always")}, Type: "helm",
		ProviderConfig: runtime.RawExtension{Raw: []byte(`{"ociRepository":{"ref":"registry/chart:1.0.0"}}`)}}
	require.NoError(t, env.Client.Create(ctx, deployment))
	t.Cleanup(func() { forceDelete(t, deployment) })
	always := &gardencorev1beta1.ControllerRegistration{ObjectMeta: metav1.ObjectMeta{Name: f.name("always")}}
	always.Spec.Resources = []gardencorev1beta1.ControllerResource{{Kind: "Extension", Type: f.name("always")}}
	always.Spec.Deployment = &gardencorev1beta1.ControllerRegistrationDeployment{
		Policy:         ptr.To(gardencorev1beta1.ControllerDeploymentPolicyAlways),
		DeploymentRefs: []gardencorev1beta1.DeploymentRef{{Name: deployment.Name}},
	}
	require.NoError(t, env.Client.Create(ctx, always))

	requests := f.Measure(func() { f.Send("add", always) })
	for _, s := range []*gardencorev1beta1.Seed{a, b} {
		assert.Equal(t, []string{"always", "provider-aws"}, f.registrationNames(s.Name))
	}
	assert.Equal(t, 2, requests["create"])
	hash := f.installations(a.Name)[always.Name].Labels[seed.LabelDeploymentHash]

	deployment.ProviderConfig.Raw = []byte(`{"ociRepository":{"ref":"registry/chart:1.1.0"}}`)
	require.NoError(t, env.Client.Update(ctx, deployment))
	f.Send("update", deployment)
	for _, s := range []*gardencorev1beta1.Seed{a, b} {
		ci := f.installations(s.Name)[always.Name]
		assert.NotEqual(t, hash, ci.Labels[seed.LabelDeploymentHash], "the new chart reaches %s", s.Name)
		assert.Equal(t, deployment.ResourceVersion, ci.Spec.DeploymentRef.ResourceVersion)
	}
}

// TestForeignInstallationDeleted: an installation someone else created for a registration the
// seed does not need is deleted on its creation event.
func TestForeignInstallationDeleted(t *testing.T) {
	f := newFixture(t, functiontest.AsFunction())
	ctx := context.Background()
	f.providerRegistration("aws")
	unused := f.registration("unused", "", resource{Kind: "Extension", Type: "unused"})
	s := f.seed("seed", "aws")
	f.Send("add", s)

	foreign := &gardencorev1beta1.ControllerInstallation{ObjectMeta: metav1.ObjectMeta{GenerateName: unused.Name + "-"}}
	foreign.Spec.RegistrationRef.Name = unused.Name
	foreign.Spec.SeedRef = &corev1.ObjectReference{Name: s.Name}
	require.NoError(t, env.Client.Create(ctx, foreign))
	f.Send("add", foreign)
	assert.Equal(t, []string{"provider-aws"}, f.registrationNames(s.Name))
}

// TestAllSeedsBlockedSeedDoesNotFailOthers: in the pass over all seeds, a seed whose decision is
// blocked (no registration serves its provider) is skipped; the others converge.
func TestAllSeedsBlockedSeedDoesNotFailOthers(t *testing.T) {
	f := newFixture(t, functiontest.AsFunction())
	f.seed("unserved", "nobody")
	served := f.seed("served", "aws")
	provider := f.providerRegistration("aws")
	f.Send("add", provider)
	assert.Equal(t, []string{"provider-aws"}, f.registrationNames(served.Name))
	assert.Empty(t, f.installations(f.name("unserved")))
}

// Another seed's installation holds the first name of a seed's installation (the suffix is
// short): the installation gets the next deterministic name, which two reconciles meeting the
// same taken name share, so that only one of them can create it.
func TestInstallationNameTakenByAnotherSeed(t *testing.T) {
	f := newFixture(t, functiontest.AsFunction())
	ctx := context.Background()
	f.providerRegistration("aws")
	always := f.registration("taken", gardencorev1beta1.ControllerDeploymentPolicyAlways, resource{Kind: "Extension", Type: "taken"})
	s := f.seed("taken-seed", "aws")
	names := seed.InstallationNames(always.Name, s.Name)
	squatter := &gardencorev1beta1.ControllerInstallation{
		ObjectMeta: metav1.ObjectMeta{Name: names[0], Labels: f.testLabels()},
		Spec: gardencorev1beta1.ControllerInstallationSpec{
			SeedRef:         &corev1.ObjectReference{Name: "another-seed"},
			RegistrationRef: corev1.ObjectReference{Name: always.Name},
		},
	}
	require.NoError(t, env.Client.Create(ctx, squatter))
	t.Cleanup(func() { forceDelete(t, squatter) })

	f.Send("add", s)
	ci := f.installations(s.Name)[always.Name]
	assert.Equal(t, names[1], ci.Name, "the second name")
	f.Send("add", s)
	assert.Len(t, f.installations(s.Name), 2, "one installation of each registration, however often reconciled")
}
