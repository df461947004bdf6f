package seed

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gardener/gardener/pkg/apis/core"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
)

// ExtensionID is Gardener's identifier of an extension kind/type combination: "<kind>/<type>".
func ExtensionID(kind, extensionType string) string { return kind + "/" + extensionType }

// Domain is what the required-set computation needs of a DNS domain the garden configures for a
// seed (internal or default domain): the domain and the DNS provider type serving it.
type Domain struct {
	Domain   string
	Provider string
}

// KindTypesForSeed are the kind/types the seed itself needs (Gardener's
// ComputeRequiredExtensionsForSeed): its DNS provider's DNSRecord, the Extensions it enables or
// registrations auto-enable for seeds, and ControlPlane, Infrastructure and Worker of its
// provider type. A seed being deleted needs none, so that its installations can go.
func KindTypesForSeed(seed *gardencorev1beta1.Seed, registrations []gardencorev1beta1.ControllerRegistration) sets.Set[string] {
	wanted := sets.New[string]()
	if seed.DeletionTimestamp != nil {
		return wanted
	}
	if seed.Spec.DNS.Provider != nil {
		wanted.Insert(ExtensionID(extensionsv1alpha1.DNSRecordResource, seed.Spec.DNS.Provider.Type))
	}
	for t := range enabledExtensionTypes(gardencorev1beta1.ClusterTypeSeed, seed.Spec.Extensions, registrations, nil) {
		wanted.Insert(ExtensionID(extensionsv1alpha1.ExtensionResource, t))
	}
	wanted.Insert(
		ExtensionID(extensionsv1alpha1.ControlPlaneResource, seed.Spec.Provider.Type),
		ExtensionID(extensionsv1alpha1.InfrastructureResource, seed.Spec.Provider.Type),
		ExtensionID(extensionsv1alpha1.WorkerResource, seed.Spec.Provider.Type),
	)
	return wanted
}

// KindTypesForShoot are the kind/types a shoot hosted on seed needs (Gardener's
// ComputeRequiredExtensionsForShoot): backup of the seed (or of a self-hosted shoot's control
// plane pool), the seed's ControlPlane type, its provider's ControlPlane, Infrastructure, Worker
// and Network unless workerless, each pool's OperatingSystemConfig, ContainerRuntimes and
// exposure extension, the DNSRecords of its primary DNS provider, the internal domain and its
// external domain, and the Extensions it enables or registrations auto-enable for shoots.
func KindTypesForShoot(shoot *gardencorev1beta1.Shoot, seed *gardencorev1beta1.Seed, registrations []gardencorev1beta1.ControllerRegistration, internalDomain *Domain, defaultDomains []Domain) sets.Set[string] {
	wanted := sets.New[string]()
	workers := shoot.Spec.Provider.Workers
	workerless := len(workers) == 0
	controlPlanePool := controlPlaneWorkerPool(workers)

	if backup := backupConfig(controlPlanePool, seed); backup != nil {
		wanted.Insert(
			ExtensionID(extensionsv1alpha1.BackupBucketResource, backup.Provider),
			ExtensionID(extensionsv1alpha1.BackupEntryResource, backup.Provider),
		)
	}
	if seed != nil {
		// Gardener's work-around: the seed provider's control plane extension may bring webhooks
		// that configure how shoot control planes are exposed.
		wanted.Insert(ExtensionID(extensionsv1alpha1.ControlPlaneResource, seed.Spec.Provider.Type))
	}
	if !workerless {
		wanted.Insert(
			ExtensionID(extensionsv1alpha1.ControlPlaneResource, shoot.Spec.Provider.Type),
			ExtensionID(extensionsv1alpha1.InfrastructureResource, shoot.Spec.Provider.Type),
			ExtensionID(extensionsv1alpha1.WorkerResource, shoot.Spec.Provider.Type),
		)
		if shoot.Spec.Networking != nil && shoot.Spec.Networking.Type != nil {
			wanted.Insert(ExtensionID(extensionsv1alpha1.NetworkResource, *shoot.Spec.Networking.Type))
		}
	}
	for _, pool := range workers {
		if pool.Machine.Image != nil {
			wanted.Insert(ExtensionID(extensionsv1alpha1.OperatingSystemConfigResource, pool.Machine.Image.Name))
		}
		if pool.CRI != nil {
			for _, runtime := range pool.CRI.ContainerRuntimes {
				wanted.Insert(ExtensionID(extensionsv1alpha1.ContainerRuntimeResource, runtime.Type))
			}
		}
		if pool.ControlPlane != nil && pool.ControlPlane.Exposure != nil && pool.ControlPlane.Exposure.Extension != nil {
			wanted.Insert(ExtensionID(extensionsv1alpha1.SelfHostedShootExposureResource, exposureExtensionType(shoot, controlPlanePool)))
		}
	}
	if shoot.Spec.DNS != nil {
		for _, provider := range shoot.Spec.DNS.Providers {
			if provider.Type != nil && *provider.Type != core.DNSUnmanaged && ptr.Deref(provider.Primary, false) {
				wanted.Insert(ExtensionID(extensionsv1alpha1.DNSRecordResource, *provider.Type))
			}
		}
	}
	if internalDomain != nil && internalDomain.Provider != core.DNSUnmanaged {
		wanted.Insert(ExtensionID(extensionsv1alpha1.DNSRecordResource, internalDomain.Provider))
	}
	if provider := externalDomainProvider(shoot, controlPlanePool != nil, defaultDomains); provider != "" && provider != core.DNSUnmanaged {
		wanted.Insert(ExtensionID(extensionsv1alpha1.DNSRecordResource, provider))
	}
	supported := func(resource gardencorev1beta1.ControllerResource) bool {
		return !workerless || ptr.Deref(resource.WorkerlessSupported, false)
	}
	for t := range enabledExtensionTypes(gardencorev1beta1.ClusterTypeShoot, shoot.Spec.Extensions, registrations, supported) {
		wanted.Insert(ExtensionID(extensionsv1alpha1.ExtensionResource, t))
	}
	return wanted
}

// externalDomainProvider is the DNS provider type of the shoot's external domain, as Gardener's
// ConstructExternalDomain determines it: none without spec.dns.domain; "unmanaged" for a
// self-hosted shoot without managed infrastructure; a default domain's provider when the domain
// is below one (the first in the defaults' order); else the primary DNS provider's type. Gardener
// also reads the primary provider's credentials there; their absence only ever drops a type the
// primary provider contributes anyway, so it is not read here.
func externalDomainProvider(shoot *gardencorev1beta1.Shoot, selfHosted bool, defaultDomains []Domain) string {
	if shoot.Spec.DNS == nil || shoot.Spec.DNS.Domain == nil {
		return ""
	}
	if selfHosted && shoot.Spec.CredentialsBindingName == nil && shoot.Spec.SecretBindingName == nil {
		return core.DNSUnmanaged
	}
	for _, d := range defaultDomains {
		if strings.HasSuffix(*shoot.Spec.DNS.Domain, "."+d.Domain) {
			return d.Provider
		}
	}
	for _, provider := range shoot.Spec.DNS.Providers {
		if ptr.Deref(provider.Primary, false) {
			return ptr.Deref(provider.Type, "")
		}
	}
	return ""
}

func controlPlaneWorkerPool(workers []gardencorev1beta1.Worker) *gardencorev1beta1.Worker {
	for i := range workers {
		if workers[i].ControlPlane != nil {
			return &workers[i]
		}
	}
	return nil
}

// backupConfig is the seed's backup for hosted shoots, the control plane pool's for a
// self-hosted one.
func backupConfig(controlPlanePool *gardencorev1beta1.Worker, seed *gardencorev1beta1.Seed) *gardencorev1beta1.Backup {
	if controlPlanePool != nil {
		return controlPlanePool.ControlPlane.Backup
	}
	if seed == nil {
		return nil
	}
	return seed.Spec.Backup
}

func exposureExtensionType(shoot *gardencorev1beta1.Shoot, controlPlanePool *gardencorev1beta1.Worker) string {
	if controlPlanePool == nil || controlPlanePool.ControlPlane.Exposure == nil || controlPlanePool.ControlPlane.Exposure.Extension == nil {
		return shoot.Spec.Provider.Type
	}
	return ptr.Deref(controlPlanePool.ControlPlane.Exposure.Extension.Type, shoot.Spec.Provider.Type)
}

// enabledExtensionTypes are the Extension types a cluster enables: those it lists and does not
// disable, plus those a registration auto-enables for its cluster type unless the cluster
// disables them. accept, when set, filters the registrations' resources.
func enabledExtensionTypes(clusterType gardencorev1beta1.ClusterType, extensions []gardencorev1beta1.Extension, registrations []gardencorev1beta1.ControllerRegistration, accept func(gardencorev1beta1.ControllerResource) bool) sets.Set[string] {
	enabled, disabled := sets.New[string](), sets.New[string]()
	for _, e := range extensions {
		if ptr.Deref(e.Disabled, false) {
			disabled.Insert(e.Type)
		} else {
			enabled.Insert(e.Type)
		}
	}
	for _, registration := range registrations {
		for _, resource := range registration.Spec.Resources {
			if accept != nil && !accept(resource) {
				continue
			}
			if resource.Kind == extensionsv1alpha1.ExtensionResource && !disabled.Has(resource.Type) && slices.Contains(resource.AutoEnable, clusterType) {
				enabled.Insert(resource.Type)
			}
		}
	}
	return enabled
}

// KindTypesForBackupBuckets are the BackupBucket types of the buckets on the seed.
func KindTypesForBackupBuckets(seedName string, buckets map[string]*gardencorev1beta1.BackupBucket) sets.Set[string] {
	wanted := sets.New[string]()
	for _, bucket := range buckets {
		if ptr.Deref(bucket.Spec.SeedName, "") == seedName {
			wanted.Insert(ExtensionID(extensionsv1alpha1.BackupBucketResource, bucket.Spec.Provider.Type))
		}
	}
	return wanted
}

// KindTypesForBackupEntries are the BackupEntry types of the entries on the seed: the provider
// type of the bucket each names. An entry whose bucket is missing contributes nothing (Gardener
// logs it); the names of those buckets are returned for the log.
func KindTypesForBackupEntries(entries []gardencorev1beta1.BackupEntry, buckets map[string]*gardencorev1beta1.BackupBucket) (sets.Set[string], []string) {
	wanted := sets.New[string]()
	var missing []string
	for _, entry := range entries {
		bucket, ok := buckets[entry.Spec.BucketName]
		if !ok {
			missing = append(missing, entry.Spec.BucketName)
			continue
		}
		wanted.Insert(ExtensionID(extensionsv1alpha1.BackupEntryResource, bucket.Spec.Provider.Type))
	}
	return wanted, missing
}

// Domain secrets: Gardener's annotations on the garden's internal and default domain Secrets.
const (
	annotationDNSProvider        = "dns.gardener.cloud/provider"
	annotationDNSDomain          = "dns.gardener.cloud/domain"
	annotationDNSDefaultPriority = "dns.gardener.cloud/domain-default-priority"
)

// DomainFromAnnotations reads a domain Secret's annotations as Gardener's
// GetDomainInfoFromAnnotations does: domain and provider are required.
func DomainFromAnnotations(annotations map[string]string) (Domain, error) {
	if annotations == nil {
		return Domain{}, fmt.Errorf("domain secret has no annotations")
	}
	d := Domain{Domain: annotations[annotationDNSDomain], Provider: annotations[annotationDNSProvider]}
	if d.Domain == "" {
		return Domain{}, fmt.Errorf("missing dns domain annotation on domain secret")
	}
	if d.Provider == "" {
		return Domain{}, fmt.Errorf("missing dns provider annotation on domain secret")
	}
	return d, nil
}
