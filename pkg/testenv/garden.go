package testenv

import (
	"context"
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Objects gardener-apiserver admits (Options.GardenerAPIServer): what its validation and
// admission plugins ask of a fixture, in one place.

// CloudProfileName is the CloudProfile LocalProvider makes; KubernetesVersion the version it
// offers.
const (
	CloudProfileName  = "local"
	KubernetesVersion = "1.33.0"
)

// LocalProvider creates what Shoots of the provider "local" need, unless it exists: the
// CloudProfile "local" (one region, one machine type and image, KubernetesVersion) and the
// ControllerRegistration "provider-local" of the extension kinds such a Shoot uses (provider
// "local", networking "calico", operating system "local"), without which gardener-apiserver's
// ExtensionValidator refuses the Shoot.
func LocalProvider(ctx context.Context, c client.Client) error {
	profile := &gardencorev1beta1.CloudProfile{
		ObjectMeta: metav1.ObjectMeta{Name: CloudProfileName},
		Spec: gardencorev1beta1.CloudProfileSpec{
			Type:       "local",
			Kubernetes: gardencorev1beta1.KubernetesSettings{Versions: []gardencorev1beta1.ExpirableVersion{{Version: KubernetesVersion}}},
			MachineImages: []gardencorev1beta1.MachineImage{{Name: "local", Versions: []gardencorev1beta1.MachineImageVersion{{
				ExpirableVersion: gardencorev1beta1.ExpirableVersion{Version: "1.0.0"},
				CRI:              []gardencorev1beta1.CRI{{Name: gardencorev1beta1.CRINameContainerD}},
				Architectures:    []string{"amd64"},
			}}}},
			MachineTypes: []gardencorev1beta1.MachineType{{
				Name: "local", CPU: resource.MustParse("1"), GPU: resource.MustParse("0"), Memory: resource.MustParse("1Gi"),
				Architecture: new("amd64"), Usable: new(true),
				Storage: &gardencorev1beta1.MachineTypeStorage{Class: "standard", StorageSize: new(resource.MustParse("20Gi")), Type: "local"},
			}},
			VolumeTypes: []gardencorev1beta1.VolumeType{{Name: "local", Class: "standard", Usable: new(true)}},
			Regions:     []gardencorev1beta1.Region{{Name: "local"}},
		},
	}
	registration := &gardencorev1beta1.ControllerRegistration{
		ObjectMeta: metav1.ObjectMeta{Name: "provider-local"},
		Spec: gardencorev1beta1.ControllerRegistrationSpec{Resources: []gardencorev1beta1.ControllerResource{
			{Kind: "BackupBucket", Type: "local"}, {Kind: "BackupEntry", Type: "local"},
			{Kind: "ControlPlane", Type: "local"}, {Kind: "Infrastructure", Type: "local"}, {Kind: "Worker", Type: "local"},
			{Kind: "Network", Type: "calico"}, {Kind: "OperatingSystemConfig", Type: "local"}, {Kind: "DNSRecord", Type: "local"},
		}},
	}
	for _, obj := range []client.Object{profile, registration} {
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// WorkerlessShoot is a Shoot of LocalProvider without workers (no credentials, machines or
// networking to name), not created.
func WorkerlessShoot(namespace, name string) *gardencorev1beta1.Shoot {
	return &gardencorev1beta1.Shoot{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: gardencorev1beta1.ShootSpec{
			CloudProfile: &gardencorev1beta1.CloudProfileReference{Kind: "CloudProfile", Name: CloudProfileName},
			Region:       "local",
			Provider:     gardencorev1beta1.Provider{Type: "local"},
			Kubernetes:   gardencorev1beta1.Kubernetes{Version: KubernetesVersion},
		},
	}
}

// DeleteConfirmed deletes obj as gardener-apiserver's DeletionConfirmation asks of Shoots,
// Projects and ShootStates: annotated confirmation.gardener.cloud/deletion=true first.
func DeleteConfirmed(ctx context.Context, c client.Client, obj client.Object) error {
	confirm := []byte(`{"metadata":{"annotations":{"` + v1beta1constants.ConfirmationDeletion + `":"true"}}}`)
	if err := c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, confirm)); err != nil {
		return err
	}
	return c.Delete(ctx, obj)
}

// ShootWithWorkers is a Shoot of LocalProvider with one worker pool, whose credentials the
// SecretBinding or CredentialsBinding binding names (set one of them), not created.
func ShootWithWorkers(namespace, name string, configure func(*gardencorev1beta1.ShootSpec)) *gardencorev1beta1.Shoot {
	shoot := WorkerlessShoot(namespace, name)
	shoot.Spec.Networking = &gardencorev1beta1.Networking{Type: new("calico"), Nodes: new("10.0.0.0/16")}
	shoot.Spec.Provider.Workers = []gardencorev1beta1.Worker{{
		Name: "pool",
		Machine: gardencorev1beta1.Machine{
			Type:         "local",
			Image:        &gardencorev1beta1.ShootMachineImage{Name: "local", Version: new("1.0.0")},
			Architecture: new("amd64"),
		},
		CRI:     &gardencorev1beta1.CRI{Name: gardencorev1beta1.CRINameContainerD},
		Minimum: 1, Maximum: 1,
	}}
	if configure != nil {
		configure(&shoot.Spec)
	}
	return shoot
}

// SeedName is the Seed LocalSeed makes.
const SeedName = "local"

// LocalSeed creates the Seed "local" of LocalProvider unless it exists: what gardener-apiserver
// asks of a Seed that BackupBuckets and BackupEntries may name (networks, ingress, DNS).
func LocalSeed(ctx context.Context, c client.Client) error {
	if err := LocalProvider(ctx, c); err != nil {
		return err
	}
	credentials := corev1.ObjectReference{APIVersion: "v1", Kind: "Secret", Namespace: v1beta1constants.GardenNamespace, Name: "local-dns"}
	seed := &gardencorev1beta1.Seed{
		ObjectMeta: metav1.ObjectMeta{Name: SeedName},
		Spec: gardencorev1beta1.SeedSpec{
			Provider: gardencorev1beta1.SeedProvider{Type: "local", Region: "local"},
			Networks: gardencorev1beta1.SeedNetworks{Pods: "10.1.0.0/16", Services: "10.2.0.0/16", Nodes: new("10.3.0.0/16")},
			Ingress:  &gardencorev1beta1.Ingress{Domain: "ingress.local.example.com", Controller: gardencorev1beta1.IngressController{Kind: "nginx"}},
			DNS: gardencorev1beta1.SeedDNS{
				Provider: &gardencorev1beta1.SeedDNSProvider{Type: "local", CredentialsRef: &credentials},
				Internal: &gardencorev1beta1.SeedDNSProviderConfig{Type: "local", Domain: "internal.local.example.com", CredentialsRef: credentials},
			},
		},
	}
	if err := c.Create(ctx, seed); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// BackupEntry is a BackupEntry in namespace of the BackupBucket "local" on LocalSeed, which it
// creates (with its credentials' Secret in the garden namespace) unless they exist; the entry is
// not created.
func BackupEntry(ctx context.Context, c client.Client, namespace, name string) (*gardencorev1beta1.BackupEntry, error) {
	if err := LocalSeed(ctx, c); err != nil {
		return nil, err
	}
	garden := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: v1beta1constants.GardenNamespace}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: garden.Name, Name: "local-backup"}}
	bucket := &gardencorev1beta1.BackupBucket{
		ObjectMeta: metav1.ObjectMeta{Name: "local"},
		Spec: gardencorev1beta1.BackupBucketSpec{
			Provider:       gardencorev1beta1.BackupBucketProvider{Type: "local", Region: "local"},
			CredentialsRef: &corev1.ObjectReference{APIVersion: "v1", Kind: "Secret", Namespace: secret.Namespace, Name: secret.Name},
			SeedName:       new(SeedName),
		},
	}
	for _, obj := range []client.Object{garden, secret, bucket} {
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, err
		}
	}
	return &gardencorev1beta1.BackupEntry{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       gardencorev1beta1.BackupEntrySpec{BucketName: bucket.Name, SeedName: new(SeedName)},
	}, nil
}

// ProjectNamespace creates a Project (named p-<random>, at most 10 characters as
// gardener-apiserver asks) and its namespace garden-<name>, and returns the namespace: where a
// garden with the real API admits Shoots. The provider's objects (LocalProvider) exist too.
func (e *Env) ProjectNamespace(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	if err := LocalProvider(ctx, e.Client); err != nil {
		t.Fatalf("the local provider: %v", err)
	}
	project := &gardencorev1beta1.Project{ObjectMeta: metav1.ObjectMeta{GenerateName: "p-"}}
	if err := e.Client.Create(ctx, project); err != nil {
		t.Fatalf("creating a Project: %v", err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "garden-" + project.Name}}
	if err := e.Client.Create(ctx, ns); err != nil {
		t.Fatalf("creating the namespace of Project %s: %v", project.Name, err)
	}
	project.Spec.Namespace = &ns.Name
	if err := e.Client.Update(ctx, project); err != nil {
		t.Fatalf("naming the namespace of Project %s: %v", project.Name, err)
	}
	return ns.Name
}
