// Package seed is the "main" reconciler of GCM's ControllerRegistration controller: for one Seed
// it computes which ControllerRegistrations the seed needs (Decide) and converges the seed's
// ControllerInstallations to that: creates or updates those wanted, deletes the others.
package seed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/function"
)

// ReconcilerName names the main reconciler.
const ReconcilerName = "seed"

// pageSize bounds the live LISTs of an event's reconcile (a seed may host hundreds of Shoots).
const pageSize = 500

// Reconciler converges one Seed's ControllerInstallations.
type Reconciler struct {
	Writer function.Writer
	// Live reads the garden past a sweep's snapshot: a create that collides is checked live.
	Live client.Reader
	Log  *slog.Logger
}

// New builds the reconciler.
func New(deps function.Deps) (function.Handler, error) {
	return &Reconciler{Writer: deps.Source.Writer, Live: deps.Source.Reader, Log: deps.Log}, nil
}

// Reconcile reads the seed's state, decides, and writes what differs.
func (r *Reconciler) Reconcile(ctx context.Context, req function.Request) error {
	seed := &gardencorev1beta1.Seed{}
	if err := req.Reader.Get(ctx, req.Key, seed); err != nil {
		return client.IgnoreNotFound(err)
	}
	return r.Converge(ctx, req.Trigger, ReaderSource{Reader: req.Reader}, seed)
}

// Converge decides the seed's installations from src and writes what differs. A sweep (trigger
// BySweep) leaves installations alone whose references differ in resourceVersions only.
func (r *Reconciler) Converge(ctx context.Context, trigger function.Trigger, src Source, seed *gardencorev1beta1.Seed) error {
	if metav1.HasLabel(seed.ObjectMeta, v1beta1constants.LabelSelfHostedShootCluster) {
		// A self-hosted shoot's seed shares its installations with the shoot's (spec.shootRef),
		// which Gardener's shoot reconciler owns; this function does not run that one, so it
		// leaves such seeds alone rather than install extensions twice.
		r.Log.Info("Skipping the seed of a self-hosted shoot", "seed", seed.Name)
		return nil
	}
	state, err := Read(ctx, src, seed)
	if err != nil {
		return err
	}
	plan, err := Decide(state)
	if err != nil {
		return err
	}
	for _, bucket := range plan.MissingBuckets {
		r.Log.Error("Couldn't find referenced BackupBucket for BackupEntry", "seed", seed.Name, "backupBucketName", bucket)
	}

	registrations := map[string]*gardencorev1beta1.ControllerRegistration{}
	for i := range state.Registrations {
		registrations[state.Registrations[i].Name] = &state.Registrations[i]
	}
	for _, name := range plan.Deploy {
		if err := r.deploy(ctx, trigger, src, seed, registrations[name], plan.Existing[name]); err != nil {
			return err
		}
	}
	for _, installation := range plan.Delete {
		r.Log.Info("Deleting unneeded ControllerInstallation for ControllerRegistration", "seed", seed.Name,
			"controllerRegistrationName", installation.Spec.RegistrationRef.Name, "controllerInstallationName", installation.Name)
		if err := r.Writer.Delete(ctx, installation); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

// deploy creates or updates the seed's installation of registration.
func (r *Reconciler) deploy(ctx context.Context, trigger function.Trigger, src Source, seed *gardencorev1beta1.Seed, registration *gardencorev1beta1.ControllerRegistration, existing *gardencorev1beta1.ControllerInstallation) error {
	var deployment *gardencorev1beta1.ControllerDeployment
	if registration.Spec.Deployment != nil && len(registration.Spec.Deployment.DeploymentRefs) > 0 {
		// Only one deploymentRef is allowed today.
		var err error
		if deployment, err = src.Deployment(ctx, registration.Spec.Deployment.DeploymentRefs[0].Name); err != nil {
			err = fmt.Errorf("cannot deploy ControllerInstallation because the referenced ControllerDeployment cannot be retrieved: %w", err)
			if apierrors.IsNotFound(err) {
				// The ControllerDeployment's creation brings the seed back.
				return blocked(err)
			}
			return err
		}
	}
	if existing != nil {
		if existing.DeletionTimestamp != nil {
			// The installation's deletion event brings the seed back.
			return blocked(fmt.Errorf("cannot deploy new ControllerInstallation for %q because the deletion of the old ControllerInstallation is still pending", registration.Name))
		}
		changed, err := r.Writer.Patch(ctx, existing, func() {
			before := existing.DeepCopy()
			DesiredInstallation(existing, seed, registration, deployment)
			if trigger == function.BySweep && OnlyReferenceVersionsDiffer(existing, before) {
				before.DeepCopyInto(existing)
			}
		})
		if changed && err == nil {
			r.Log.Info("Updated ControllerInstallation for ControllerRegistration", "seed", seed.Name, "controllerRegistrationName", registration.Name, "controllerInstallationName", existing.Name)
		}
		return err
	}

	var err error
	for _, name := range InstallationNames(registration.Name, seed.Name) {
		installation := &gardencorev1beta1.ControllerInstallation{ObjectMeta: metav1.ObjectMeta{Name: name}}
		DesiredInstallation(installation, seed, registration, deployment)
		if err = r.Writer.Create(ctx, installation); err == nil {
			r.Log.Info("Created ControllerInstallation for ControllerRegistration", "seed", seed.Name, "controllerRegistrationName", registration.Name, "controllerInstallationName", installation.Name)
			return nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return err
		}
		taken := &gardencorev1beta1.ControllerInstallation{}
		if getErr := r.Live.Get(ctx, client.ObjectKeyFromObject(installation), taken); getErr != nil {
			return errors.Join(err, getErr)
		}
		if taken.Spec.SeedRef != nil && taken.Spec.SeedRef.Name == seed.Name && taken.Spec.RegistrationRef.Name == registration.Name {
			// A concurrent reconcile of this seed was first: retried from live state, it
			// finds that installation.
			return err
		}
		// Another seed's installation has the name (the suffix is short): the next name.
	}
	return fmt.Errorf("every name of the installation of %q on seed %q is another seed's (%v)", registration.Name, seed.Name, err)
}

// Read gathers the seed's State from src: the registrations, the seed's installations, its
// BackupBuckets and BackupEntries (and the buckets its entries name from elsewhere), the Shoots
// scheduled to it or running on it, and the garden's domains for it.
func Read(ctx context.Context, src Source, seed *gardencorev1beta1.Seed) (State, error) {
	s := State{Seed: seed, Buckets: map[string]*gardencorev1beta1.BackupBucket{}}
	var err error
	if s.Registrations, err = src.Registrations(ctx); err != nil {
		return s, err
	}
	if s.Installations, err = src.Installations(ctx, seed.Name); err != nil {
		return s, err
	}
	buckets, err := src.Buckets(ctx, seed.Name)
	if err != nil {
		return s, err
	}
	for i := range buckets {
		s.Buckets[buckets[i].Name] = &buckets[i]
	}
	if s.Entries, err = src.Entries(ctx, seed.Name); err != nil {
		return s, err
	}
	for _, entry := range s.Entries {
		name := entry.Spec.BucketName
		if _, known := s.Buckets[name]; known {
			continue
		}
		bucket, err := src.Bucket(ctx, name)
		if err != nil {
			if apierrors.IsNotFound(err) {
				continue // Decide reports it
			}
			return s, err
		}
		s.Buckets[name] = bucket
	}
	if s.Shoots, err = src.Shoots(ctx, seed.Name); err != nil {
		return s, err
	}
	if s.InternalDomain, err = internalDomain(ctx, src, seed); err != nil {
		return s, blocked(fmt.Errorf("failed computing kind/types for shoots: failed to read internal domain from garden cluster: %w", err))
	}
	if s.DefaultDomains, err = defaultDomains(ctx, src, seed); err != nil {
		return s, blocked(fmt.Errorf("failed computing kind/types for shoots: failed to read default domains from garden cluster: %w", err))
	}
	return s, nil
}

// GardenNamespace is the namespace of the seed's garden Secrets ("seed-<name>"), where its
// internal and default domain Secrets are when its spec does not configure them.
func GardenNamespace(seedName string) string { return "seed-" + seedName }

// internalDomain is the seed's spec.dns.internal, else the one internal-domain Secret of its
// garden namespace, else none. Gardener also reads the credentials spec.dns.internal names;
// only the provider type matters here, so they are not read (see the docs).
func internalDomain(ctx context.Context, src Source, seed *gardencorev1beta1.Seed) (*Domain, error) {
	if internal := seed.Spec.DNS.Internal; internal != nil {
		return &Domain{Domain: internal.Domain, Provider: internal.Type}, nil
	}
	secrets, err := src.DomainSecrets(ctx, seed.Name, v1beta1constants.GardenRoleInternalDomain)
	if err != nil || len(secrets) == 0 {
		return nil, err
	}
	if len(secrets) > 1 {
		return nil, fmt.Errorf("found more than one internal domain secret")
	}
	d, err := DomainFromAnnotations(secrets[0].GetAnnotations())
	if err != nil {
		return nil, fmt.Errorf("error constructing internal domain from secret %s: %w", client.ObjectKeyFromObject(secrets[0]), err)
	}
	return &d, nil
}

// defaultDomains are the seed's spec.dns.defaults, else the default-domain Secrets of its
// garden namespace by priority.
func defaultDomains(ctx context.Context, src Source, seed *gardencorev1beta1.Seed) ([]Domain, error) {
	var domains []Domain
	if len(seed.Spec.DNS.Defaults) > 0 {
		for _, d := range seed.Spec.DNS.Defaults {
			domains = append(domains, Domain{Domain: d.Domain, Provider: d.Type})
		}
		return domains, nil
	}
	secrets, err := src.DomainSecrets(ctx, seed.Name, v1beta1constants.GardenRoleDefaultDomain)
	if err != nil {
		return nil, err
	}
	SortDefaultDomains(secrets)
	for _, secret := range secrets {
		d, err := DomainFromAnnotations(secret.GetAnnotations())
		if err != nil {
			return nil, fmt.Errorf("error constructing default domain from secret %s: %w", client.ObjectKeyFromObject(secret), err)
		}
		domains = append(domains, d)
	}
	return domains, nil
}
