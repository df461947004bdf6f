package seed

import (
	"context"

	"github.com/gardener/gardener/pkg/apis/core"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/kinds"
	"github.com/gardener-knative/gardener-knative/pkg/kube"
)

// Source is where Read finds a seed's state: a reader (an event's live reads, a sweep's
// snapshot) with field-selected LISTs, or a Garden listed once for every seed.
type Source interface {
	Registrations(ctx context.Context) ([]gardencorev1beta1.ControllerRegistration, error)
	// Installations whose spec.seedRef names the seed.
	Installations(ctx context.Context, seed string) ([]gardencorev1beta1.ControllerInstallation, error)
	// Buckets and Entries whose spec.seedName is the seed.
	Buckets(ctx context.Context, seed string) ([]gardencorev1beta1.BackupBucket, error)
	Entries(ctx context.Context, seed string) ([]gardencorev1beta1.BackupEntry, error)
	// Bucket is one BackupBucket by name; NotFound when it does not exist.
	Bucket(ctx context.Context, name string) (*gardencorev1beta1.BackupBucket, error)
	// Shoots whose spec.seedName or status.seedName is the seed, each once.
	Shoots(ctx context.Context, seed string) ([]gardencorev1beta1.Shoot, error)
	// DomainSecrets are the Secrets of a gardener.cloud/role in the seed's garden namespace,
	// metadata only.
	DomainSecrets(ctx context.Context, seed, role string) ([]client.Object, error)
	// Deployment is one ControllerDeployment by name; NotFound when it does not exist.
	Deployment(ctx context.Context, name string) (*gardencorev1beta1.ControllerDeployment, error)
}

// ReaderSource reads with field-selected LISTs, which gardener-apiserver answers per seed and a
// sweep's snapshot from its indexes.
type ReaderSource struct{ Reader client.Reader }

var _ Source = ReaderSource{}

// Registrations lists every ControllerRegistration.
func (r ReaderSource) Registrations(ctx context.Context) ([]gardencorev1beta1.ControllerRegistration, error) {
	list := &gardencorev1beta1.ControllerRegistrationList{}
	err := r.Reader.List(ctx, list)
	return list.Items, err
}

// Installations lists by spec.seedRef.name.
func (r ReaderSource) Installations(ctx context.Context, seed string) ([]gardencorev1beta1.ControllerInstallation, error) {
	list := &gardencorev1beta1.ControllerInstallationList{}
	err := r.Reader.List(ctx, list, client.MatchingFields{core.SeedRefName: seed})
	return list.Items, err
}

// Buckets lists by spec.seedName.
func (r ReaderSource) Buckets(ctx context.Context, seed string) ([]gardencorev1beta1.BackupBucket, error) {
	list := &gardencorev1beta1.BackupBucketList{}
	err := r.Reader.List(ctx, list, client.MatchingFields{core.BackupBucketSeedName: seed})
	return list.Items, err
}

// Entries lists by spec.seedName.
func (r ReaderSource) Entries(ctx context.Context, seed string) ([]gardencorev1beta1.BackupEntry, error) {
	list := &gardencorev1beta1.BackupEntryList{}
	err := r.Reader.List(ctx, list, client.MatchingFields{core.BackupEntrySeedName: seed})
	return list.Items, err
}

// Bucket GETs.
func (r ReaderSource) Bucket(ctx context.Context, name string) (*gardencorev1beta1.BackupBucket, error) {
	bucket := &gardencorev1beta1.BackupBucket{}
	return bucket, r.Reader.Get(ctx, client.ObjectKey{Name: name}, bucket)
}

// Shoots lists by spec.seedName and by status.seedName, in pages.
func (r ReaderSource) Shoots(ctx context.Context, seed string) ([]gardencorev1beta1.Shoot, error) {
	var shoots []gardencorev1beta1.Shoot
	seen := map[client.ObjectKey]bool{}
	for _, field := range []string{core.ShootSeedName, core.ShootStatusSeedName} {
		items, err := kube.ListAll(ctx, r.Reader, &gardencorev1beta1.ShootList{}, pageSize, client.MatchingFields{field: seed})
		if err != nil {
			return nil, err
		}
		for _, item := range items {
			if key := client.ObjectKeyFromObject(item); !seen[key] {
				seen[key] = true
				shoots = append(shoots, *item.(*gardencorev1beta1.Shoot))
			}
		}
	}
	return shoots, nil
}

// DomainSecrets lists metadata-only by namespace and label.
func (r ReaderSource) DomainSecrets(ctx context.Context, seed, role string) ([]client.Object, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	if err := r.Reader.List(ctx, list, client.InNamespace(GardenNamespace(seed)), client.MatchingLabels{v1beta1constants.GardenRole: role}); err != nil {
		return nil, err
	}
	secrets := make([]client.Object, 0, len(list.Items))
	for i := range list.Items {
		secrets = append(secrets, &list.Items[i])
	}
	return secrets, nil
}

// Deployment GETs.
func (r ReaderSource) Deployment(ctx context.Context, name string) (*gardencorev1beta1.ControllerDeployment, error) {
	deployment := &gardencorev1beta1.ControllerDeployment{}
	return deployment, r.Reader.Get(ctx, client.ObjectKey{Name: name}, deployment)
}

// Garden is the whole garden as one pass over every seed needs it, listed once (in pages) and
// grouped by seed: the Source of a reconcile that converges every seed at once.
type Garden struct {
	Seeds         []gardencorev1beta1.Seed
	registrations []gardencorev1beta1.ControllerRegistration
	deployments   map[string]*gardencorev1beta1.ControllerDeployment
	installations map[string][]gardencorev1beta1.ControllerInstallation
	buckets       map[string]*gardencorev1beta1.BackupBucket
	bucketsOn     map[string][]gardencorev1beta1.BackupBucket
	entriesOn     map[string][]gardencorev1beta1.BackupEntry
	shootsOn      map[string][]gardencorev1beta1.Shoot
	domainSecrets []client.Object
}

var _ Source = &Garden{}

// DomainSecretSelector selects the Secrets the internal and default domains are read from.
var DomainSecretSelector = v1beta1constants.GardenRole + " in (" + v1beta1constants.GardenRoleInternalDomain + "," + v1beta1constants.GardenRoleDefaultDomain + ")"

// LoadGarden lists what Read needs of every seed: one LIST (per page) of each kind.
func LoadGarden(ctx context.Context, reader client.Reader) (*Garden, error) {
	g := &Garden{
		deployments:   map[string]*gardencorev1beta1.ControllerDeployment{},
		installations: map[string][]gardencorev1beta1.ControllerInstallation{},
		buckets:       map[string]*gardencorev1beta1.BackupBucket{},
		bucketsOn:     map[string][]gardencorev1beta1.BackupBucket{},
		entriesOn:     map[string][]gardencorev1beta1.BackupEntry{},
		shootsOn:      map[string][]gardencorev1beta1.Shoot{},
	}
	list := func(list client.ObjectList, opts ...client.ListOption) ([]client.Object, error) {
		return kube.ListAll(ctx, reader, list, pageSize, opts...)
	}
	items, err := list(&gardencorev1beta1.SeedList{})
	if err != nil {
		return nil, err
	}
	for _, item := range items {
		g.Seeds = append(g.Seeds, *item.(*gardencorev1beta1.Seed))
	}
	if items, err = list(&gardencorev1beta1.ControllerRegistrationList{}); err != nil {
		return nil, err
	}
	for _, item := range items {
		g.registrations = append(g.registrations, *item.(*gardencorev1beta1.ControllerRegistration))
	}
	if items, err = list(&gardencorev1beta1.ControllerDeploymentList{}); err != nil {
		return nil, err
	}
	for _, item := range items {
		g.deployments[item.GetName()] = item.(*gardencorev1beta1.ControllerDeployment)
	}
	if items, err = list(&gardencorev1beta1.ControllerInstallationList{}); err != nil {
		return nil, err
	}
	for _, item := range items {
		ci := item.(*gardencorev1beta1.ControllerInstallation)
		if ci.Spec.SeedRef != nil {
			g.installations[ci.Spec.SeedRef.Name] = append(g.installations[ci.Spec.SeedRef.Name], *ci)
		}
	}
	if items, err = list(&gardencorev1beta1.BackupBucketList{}); err != nil {
		return nil, err
	}
	for _, item := range items {
		bucket := item.(*gardencorev1beta1.BackupBucket)
		g.buckets[bucket.Name] = bucket
		if bucket.Spec.SeedName != nil {
			g.bucketsOn[*bucket.Spec.SeedName] = append(g.bucketsOn[*bucket.Spec.SeedName], *bucket)
		}
	}
	if items, err = list(&gardencorev1beta1.BackupEntryList{}); err != nil {
		return nil, err
	}
	for _, item := range items {
		entry := item.(*gardencorev1beta1.BackupEntry)
		if entry.Spec.SeedName != nil {
			g.entriesOn[*entry.Spec.SeedName] = append(g.entriesOn[*entry.Spec.SeedName], *entry)
		}
	}
	if items, err = list(&gardencorev1beta1.ShootList{}); err != nil {
		return nil, err
	}
	for _, item := range items {
		shoot := item.(*gardencorev1beta1.Shoot)
		specSeed, statusSeed := ptr.Deref(shoot.Spec.SeedName, ""), ptr.Deref(shoot.Status.SeedName, "")
		if specSeed != "" {
			g.shootsOn[specSeed] = append(g.shootsOn[specSeed], *shoot)
		}
		if statusSeed != "" && statusSeed != specSeed {
			g.shootsOn[statusSeed] = append(g.shootsOn[statusSeed], *shoot)
		}
	}
	secrets := &metav1.PartialObjectMetadataList{}
	secrets.SetGroupVersionKind(kinds.Secret.GroupVersion().WithKind("SecretList"))
	selector, err := labels.Parse(DomainSecretSelector)
	if err != nil {
		return nil, err
	}
	if g.domainSecrets, err = list(secrets, client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return nil, err
	}
	return g, nil
}

// Registrations are all of them.
func (g *Garden) Registrations(context.Context) ([]gardencorev1beta1.ControllerRegistration, error) {
	return g.registrations, nil
}

// Installations of the seed.
func (g *Garden) Installations(_ context.Context, seed string) ([]gardencorev1beta1.ControllerInstallation, error) {
	return g.installations[seed], nil
}

// Buckets on the seed.
func (g *Garden) Buckets(_ context.Context, seed string) ([]gardencorev1beta1.BackupBucket, error) {
	return g.bucketsOn[seed], nil
}

// Entries on the seed.
func (g *Garden) Entries(_ context.Context, seed string) ([]gardencorev1beta1.BackupEntry, error) {
	return g.entriesOn[seed], nil
}

// Bucket by name.
func (g *Garden) Bucket(_ context.Context, name string) (*gardencorev1beta1.BackupBucket, error) {
	if bucket, ok := g.buckets[name]; ok {
		return bucket, nil
	}
	return nil, apierrors.NewNotFound(kinds.BackupBucket.GroupResource(), name)
}

// Shoots on the seed (spec or status).
func (g *Garden) Shoots(_ context.Context, seed string) ([]gardencorev1beta1.Shoot, error) {
	return g.shootsOn[seed], nil
}

// DomainSecrets of the seed's garden namespace and the role.
func (g *Garden) DomainSecrets(_ context.Context, seed, role string) ([]client.Object, error) {
	var secrets []client.Object
	for _, s := range g.domainSecrets {
		if s.GetNamespace() == GardenNamespace(seed) && s.GetLabels()[v1beta1constants.GardenRole] == role {
			secrets = append(secrets, s)
		}
	}
	return secrets, nil
}

// Deployment by name.
func (g *Garden) Deployment(_ context.Context, name string) (*gardencorev1beta1.ControllerDeployment, error) {
	if deployment, ok := g.deployments[name]; ok {
		return deployment, nil
	}
	return nil, apierrors.NewNotFound(kinds.ControllerDeployment.GroupResource(), name)
}
