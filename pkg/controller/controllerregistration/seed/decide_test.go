package seed

import (
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

var deleting = &metav1.Time{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}

func testSeed(mutate ...func(*gardencorev1beta1.Seed)) *gardencorev1beta1.Seed {
	s := &gardencorev1beta1.Seed{ObjectMeta: metav1.ObjectMeta{Name: "seed", Labels: map[string]string{"env": "prod"}}}
	s.Spec.Provider.Type = "aws"
	for _, m := range mutate {
		m(s)
	}
	return s
}

type res = gardencorev1beta1.ControllerResource

func registration(name string, policy gardencorev1beta1.ControllerDeploymentPolicy, resources ...res) gardencorev1beta1.ControllerRegistration {
	r := gardencorev1beta1.ControllerRegistration{ObjectMeta: metav1.ObjectMeta{Name: name}}
	r.Spec.Resources = resources
	if policy != "" {
		r.Spec.Deployment = &gardencorev1beta1.ControllerRegistrationDeployment{Policy: &policy}
	}
	return r
}

func withSelector(r gardencorev1beta1.ControllerRegistration, labels map[string]string) gardencorev1beta1.ControllerRegistration {
	r = *r.DeepCopy()
	if r.Spec.Deployment == nil {
		r.Spec.Deployment = &gardencorev1beta1.ControllerRegistrationDeployment{}
	}
	r.Spec.Deployment.SeedSelector = &metav1.LabelSelector{MatchLabels: labels}
	return r
}

func inDeletion(r gardencorev1beta1.ControllerRegistration) gardencorev1beta1.ControllerRegistration {
	r.DeletionTimestamp = deleting
	return r
}

// providerAWS serves the seed's own kinds.
var providerAWS = registration("provider-aws", "", res{Kind: "ControlPlane", Type: "aws"}, res{Kind: "Infrastructure", Type: "aws"}, res{Kind: "Worker", Type: "aws"})

func installation(name, registration string, required bool) gardencorev1beta1.ControllerInstallation {
	ci := gardencorev1beta1.ControllerInstallation{ObjectMeta: metav1.ObjectMeta{Name: name}}
	ci.Spec.RegistrationRef.Name = registration
	if required {
		ci.Status.Conditions = []gardencorev1beta1.Condition{{Type: gardencorev1beta1.ControllerInstallationRequired, Status: gardencorev1beta1.ConditionTrue}}
	}
	return ci
}

func shoot(name string, mutate ...func(*gardencorev1beta1.Shoot)) gardencorev1beta1.Shoot {
	s := gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "garden-p"}}
	s.Spec.Provider.Type = "gcp"
	s.Spec.Provider.Workers = []gardencorev1beta1.Worker{{Name: "w", Machine: gardencorev1beta1.Machine{Image: &gardencorev1beta1.ShootMachineImage{Name: "gardenlinux"}}}}
	for _, m := range mutate {
		m(&s)
	}
	return s
}

func bucket(name, seed, provider string) *gardencorev1beta1.BackupBucket {
	b := &gardencorev1beta1.BackupBucket{ObjectMeta: metav1.ObjectMeta{Name: name}}
	b.Spec.Provider.Type = provider
	if seed != "" {
		b.Spec.SeedName = ptr.To(seed)
	}
	return b
}

func TestDecide(t *testing.T) {
	gcp := registration("provider-gcp", "", res{Kind: "ControlPlane", Type: "gcp"}, res{Kind: "Infrastructure", Type: "gcp"}, res{Kind: "Worker", Type: "gcp"})
	os := registration("os-gardenlinux", "", res{Kind: "OperatingSystemConfig", Type: "gardenlinux"})
	always := registration("always", gardencorev1beta1.ControllerDeploymentPolicyAlways, res{Kind: "Extension", Type: "always"})
	exceptNoShoots := registration("except-no-shoots", gardencorev1beta1.ControllerDeploymentPolicyAlwaysExceptNoShoots, res{Kind: "Extension", Type: "ens"})
	onDemandExt := registration("ext-foo", "", res{Kind: "Extension", Type: "foo"})
	shootBasics := []gardencorev1beta1.ControllerRegistration{providerAWS, gcp, os}

	for _, tc := range []struct {
		name          string
		state         State
		wanted        []string
		deploy        []string
		deleted       []string
		err           string
		missingBucket []string
	}{
		{
			name:   "seed without anything: its provider's registration",
			state:  State{Seed: testSeed(), Registrations: []gardencorev1beta1.ControllerRegistration{providerAWS, gcp}},
			wanted: []string{"provider-aws"},
		},
		{
			name:   "policy Always on every seed, AlwaysExceptNoShoots only with shoots",
			state:  State{Seed: testSeed(), Registrations: []gardencorev1beta1.ControllerRegistration{providerAWS, always, exceptNoShoots}},
			wanted: []string{"always", "provider-aws"},
		},
		{
			name:   "AlwaysExceptNoShoots with a shoot",
			state:  State{Seed: testSeed(), Registrations: append([]gardencorev1beta1.ControllerRegistration{exceptNoShoots}, shootBasics...), Shoots: []gardencorev1beta1.Shoot{shoot("a")}},
			wanted: []string{"except-no-shoots", "os-gardenlinux", "provider-aws", "provider-gcp"},
		},
		{
			name: "seed selector excludes a non-matching seed, also for kind/types it needs",
			state: State{Seed: testSeed(), Registrations: []gardencorev1beta1.ControllerRegistration{
				providerAWS, withSelector(always, map[string]string{"env": "dev"}), withSelector(os, map[string]string{"env": "dev"}), gcp,
			}, Shoots: []gardencorev1beta1.Shoot{shoot("a")}},
			wanted: []string{"provider-aws", "provider-gcp"},
		},
		{
			name:   "seed selector matching",
			state:  State{Seed: testSeed(), Registrations: []gardencorev1beta1.ControllerRegistration{providerAWS, withSelector(always, map[string]string{"env": "prod"})}},
			wanted: []string{"always", "provider-aws"},
		},
		{
			name: "seed being deleted: neither its own kinds nor Always, but its shoots still count",
			state: State{Seed: testSeed(func(s *gardencorev1beta1.Seed) { s.DeletionTimestamp = deleting }),
				Registrations: append([]gardencorev1beta1.ControllerRegistration{always, exceptNoShoots}, shootBasics...),
				Shoots:        []gardencorev1beta1.Shoot{shoot("a")},
				Installations: []gardencorev1beta1.ControllerInstallation{installation("always-x", "always", false)}},
			// The shoot still needs the seed provider's ControlPlane (Gardener's work-around).
			wanted:  []string{"except-no-shoots", "os-gardenlinux", "provider-aws", "provider-gcp"},
			deleted: []string{"always-x"},
		},
		{
			name: "registration being deleted: stays wanted where needed, but is not deployed; Always no longer applies",
			state: State{Seed: testSeed(), Registrations: []gardencorev1beta1.ControllerRegistration{inDeletion(providerAWS), inDeletion(always)},
				Installations: []gardencorev1beta1.ControllerInstallation{installation("aws-x", "provider-aws", false), installation("always-x", "always", false)}},
			wanted:  []string{"provider-aws"},
			deploy:  []string{},
			deleted: []string{"always-x"},
		},
		{
			name: "installation still Required is kept",
			state: State{Seed: testSeed(), Registrations: []gardencorev1beta1.ControllerRegistration{providerAWS, onDemandExt},
				Installations: []gardencorev1beta1.ControllerInstallation{installation("foo-x", "ext-foo", true)}},
			wanted: []string{"ext-foo", "provider-aws"},
		},
		{
			name: "installation no longer needed is deleted",
			state: State{Seed: testSeed(), Registrations: []gardencorev1beta1.ControllerRegistration{providerAWS, onDemandExt},
				Installations: []gardencorev1beta1.ControllerInstallation{installation("foo-x", "ext-foo", false), installation("aws-x", "provider-aws", false)}},
			wanted:  []string{"provider-aws"},
			deleted: []string{"foo-x"},
		},
		{
			name: "backup buckets and entries: their provider types, an entry's bucket from elsewhere",
			state: State{Seed: testSeed(), Registrations: []gardencorev1beta1.ControllerRegistration{providerAWS,
				registration("backup-s3", "", res{Kind: "BackupBucket", Type: "s3"}), registration("backup-gcs", "", res{Kind: "BackupEntry", Type: "gcs"})},
				Buckets: map[string]*gardencorev1beta1.BackupBucket{"b1": bucket("b1", "seed", "s3"), "b2": bucket("b2", "other", "gcs")},
				Entries: []gardencorev1beta1.BackupEntry{
					{ObjectMeta: metav1.ObjectMeta{Name: "e1"}, Spec: gardencorev1beta1.BackupEntrySpec{BucketName: "b2"}},
					{ObjectMeta: metav1.ObjectMeta{Name: "e2"}, Spec: gardencorev1beta1.BackupEntrySpec{BucketName: "gone"}},
				}},
			wanted:        []string{"backup-gcs", "backup-s3", "provider-aws"},
			missingBucket: []string{"gone"},
		},
		{
			name:  "a required kind/type without registration is an error",
			state: State{Seed: testSeed(), Registrations: []gardencorev1beta1.ControllerRegistration{gcp}},
			err:   `need to install an extension controller for "ControlPlane/aws" but no appropriate ControllerRegistration found`,
		},
		{
			name: "an installation of a registration that does not exist is an error",
			state: State{Seed: testSeed(), Registrations: []gardencorev1beta1.ControllerRegistration{providerAWS},
				Installations: []gardencorev1beta1.ControllerInstallation{installation("x", "gone", false)}},
			err: `ControllerRegistration "gone" does not exist`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := Decide(tc.state)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wanted, plan.Wanted)
			deploy := tc.deploy
			if deploy == nil {
				deploy = tc.wanted
			}
			assert.Equal(t, deploy, append([]string{}, plan.Deploy...))
			var deleted []string
			for _, ci := range plan.Delete {
				deleted = append(deleted, ci.Name)
			}
			assert.Equal(t, tc.deleted, deleted)
			assert.Equal(t, tc.missingBucket, plan.MissingBuckets)
		})
	}
}

func ids(s sets.Set[string]) []string { return sets.List(s) }

func TestKindTypesForShoot(t *testing.T) {
	seed := testSeed(func(s *gardencorev1beta1.Seed) {
		s.Spec.Backup = &gardencorev1beta1.Backup{Provider: "s3"}
	})
	autoEnable := []gardencorev1beta1.ControllerRegistration{
		registration("ext", "",
			res{Kind: "Extension", Type: "auto-shoot", AutoEnable: []gardencorev1beta1.ClusterType{gardencorev1beta1.ClusterTypeShoot}},
			res{Kind: "Extension", Type: "auto-workerless", AutoEnable: []gardencorev1beta1.ClusterType{gardencorev1beta1.ClusterTypeShoot}, WorkerlessSupported: ptr.To(true)},
			res{Kind: "Extension", Type: "auto-disabled", AutoEnable: []gardencorev1beta1.ClusterType{gardencorev1beta1.ClusterTypeShoot}},
			res{Kind: "Extension", Type: "auto-seed", AutoEnable: []gardencorev1beta1.ClusterType{gardencorev1beta1.ClusterTypeSeed}},
		),
	}
	full := shoot("full", func(s *gardencorev1beta1.Shoot) {
		s.Spec.Networking = &gardencorev1beta1.Networking{Type: ptr.To("calico")}
		s.Spec.Provider.Workers[0].CRI = &gardencorev1beta1.CRI{Name: "containerd", ContainerRuntimes: []gardencorev1beta1.ContainerRuntime{{Type: "gvisor"}}}
		s.Spec.DNS = &gardencorev1beta1.DNS{Domain: ptr.To("a.dev.example.com"), Providers: []gardencorev1beta1.DNSProvider{
			{Type: ptr.To("aws-route53"), Primary: ptr.To(true)}, {Type: ptr.To("azure-dns")},
		}}
		s.Spec.Extensions = []gardencorev1beta1.Extension{{Type: "explicit"}, {Type: "auto-disabled", Disabled: ptr.To(true)}}
	})
	assert.Equal(t, []string{
		"BackupBucket/s3", "BackupEntry/s3", "ContainerRuntime/gvisor", "ControlPlane/aws", "ControlPlane/gcp",
		"DNSRecord/aws-route53", "DNSRecord/default-dns", "DNSRecord/internal-dns",
		"Extension/auto-shoot", "Extension/auto-workerless", "Extension/explicit",
		"Infrastructure/gcp", "Network/calico", "OperatingSystemConfig/gardenlinux", "Worker/gcp",
	}, ids(KindTypesForShoot(&full, seed, autoEnable, &Domain{Domain: "internal.example.com", Provider: "internal-dns"}, []Domain{{Domain: "dev.example.com", Provider: "default-dns"}})))

	workerless := shoot("workerless", func(s *gardencorev1beta1.Shoot) {
		s.Spec.Provider.Workers = nil
		s.Spec.Networking = &gardencorev1beta1.Networking{Type: ptr.To("calico")}
	})
	assert.Equal(t, []string{"BackupBucket/s3", "BackupEntry/s3", "ControlPlane/aws", "Extension/auto-workerless"}, ids(KindTypesForShoot(&workerless, seed, autoEnable, &Domain{Provider: "unmanaged"}, nil)),
		"workerless: no provider, network or OS kinds, only extensions supporting workerless; an unmanaged internal domain needs no DNSRecord")

	selfHosted := shoot("self-hosted", func(s *gardencorev1beta1.Shoot) {
		s.Spec.Provider.Workers[0].ControlPlane = &gardencorev1beta1.WorkerControlPlane{
			Backup:   &gardencorev1beta1.Backup{Provider: "gcs"},
			Exposure: &gardencorev1beta1.Exposure{Extension: &gardencorev1beta1.ExtensionExposure{}},
		}
		s.Spec.DNS = &gardencorev1beta1.DNS{Domain: ptr.To("x.example.com")}
	})
	assert.Equal(t, []string{
		"BackupBucket/gcs", "BackupEntry/gcs", "ControlPlane/gcp", "Infrastructure/gcp", "OperatingSystemConfig/gardenlinux", "SelfHostedShootExposure/gcp", "Worker/gcp",
	}, ids(KindTypesForShoot(&selfHosted, nil, nil, nil, nil)), "self-hosted without managed infrastructure: its pool's backup and exposure, an unmanaged external domain")
}

func TestKindTypesForSeed(t *testing.T) {
	seed := testSeed(func(s *gardencorev1beta1.Seed) {
		s.Spec.DNS.Provider = &gardencorev1beta1.SeedDNSProvider{Type: "aws-route53"}
		s.Spec.Extensions = []gardencorev1beta1.Extension{{Type: "seed-ext"}, {Type: "auto-seed-disabled", Disabled: ptr.To(true)}}
	})
	regs := []gardencorev1beta1.ControllerRegistration{registration("ext", "",
		res{Kind: "Extension", Type: "auto-seed", AutoEnable: []gardencorev1beta1.ClusterType{gardencorev1beta1.ClusterTypeSeed}},
		res{Kind: "Extension", Type: "auto-seed-disabled", AutoEnable: []gardencorev1beta1.ClusterType{gardencorev1beta1.ClusterTypeSeed}},
		res{Kind: "Extension", Type: "auto-shoot", AutoEnable: []gardencorev1beta1.ClusterType{gardencorev1beta1.ClusterTypeShoot}},
	)}
	assert.Equal(t, []string{"ControlPlane/aws", "DNSRecord/aws-route53", "Extension/auto-seed", "Extension/seed-ext", "Infrastructure/aws", "Worker/aws"}, ids(KindTypesForSeed(seed, regs)))
	seed.DeletionTimestamp = deleting
	assert.Empty(t, KindTypesForSeed(seed, regs), "a seed being deleted needs nothing of its own")
}

func TestExternalDomainProvider(t *testing.T) {
	withDNS := func(domain string, providers ...gardencorev1beta1.DNSProvider) *gardencorev1beta1.Shoot {
		s := shoot("s")
		s.Spec.DNS = &gardencorev1beta1.DNS{Providers: providers}
		if domain != "" {
			s.Spec.DNS.Domain = ptr.To(domain)
		}
		return &s
	}
	defaults := []Domain{{Domain: "dev.example.com", Provider: "high"}, {Domain: "example.com", Provider: "low"}}
	primary := gardencorev1beta1.DNSProvider{Type: ptr.To("primary-type"), Primary: ptr.To(true)}
	assert.Equal(t, "", externalDomainProvider(withDNS("", primary), false, defaults), "no domain")
	assert.Equal(t, "high", externalDomainProvider(withDNS("a.dev.example.com", primary), false, defaults), "the first default domain it is below")
	assert.Equal(t, "low", externalDomainProvider(withDNS("a.example.com"), false, defaults))
	assert.Equal(t, "primary-type", externalDomainProvider(withDNS("a.other.com", primary), false, defaults))
	assert.Equal(t, "", externalDomainProvider(withDNS("a.other.com", gardencorev1beta1.DNSProvider{Type: ptr.To("secondary")}), false, defaults), "incomplete DNS configuration")
	assert.Equal(t, "unmanaged", externalDomainProvider(withDNS("a.dev.example.com", primary), true, defaults), "self-hosted without managed infrastructure")
}

func TestSortDefaultDomains(t *testing.T) {
	secret := func(name, priority string) *metav1.PartialObjectMetadata {
		s := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if priority != "" {
			s.Annotations = map[string]string{annotationDNSDefaultPriority: priority}
		}
		return s
	}
	secrets := []client.Object{secret("none", ""), secret("ten", "10"), secret("bad", "x"), secret("five", "5")}
	SortDefaultDomains(secrets)
	var names []string
	for _, s := range secrets {
		names = append(names, s.GetName())
	}
	assert.Equal(t, []string{"ten", "five", "none", "bad"}, names)
}
