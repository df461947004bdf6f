package seed

import (
	"fmt"
	"slices"
	"sort"
	"strconv"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// State is everything the garden holds that decides a seed's ControllerInstallations: the
// inputs of Decide, read live for an event and from the snapshot in a sweep.
type State struct {
	Seed          *gardencorev1beta1.Seed
	Registrations []gardencorev1beta1.ControllerRegistration
	// Installations are the ControllerInstallations whose spec.seedRef names the seed.
	Installations []gardencorev1beta1.ControllerInstallation
	// Buckets are the BackupBuckets on the seed and those its BackupEntries name, by name.
	Buckets map[string]*gardencorev1beta1.BackupBucket
	// Entries are the BackupEntries on the seed (spec.seedName).
	Entries []gardencorev1beta1.BackupEntry
	// Shoots are the Shoots whose spec.seedName or status.seedName is the seed, each once:
	// scheduled, migrating away or towards, and being deleted alike.
	Shoots         []gardencorev1beta1.Shoot
	InternalDomain *Domain
	DefaultDomains []Domain
}

// Plan is what Decide wants done for a seed.
type Plan struct {
	// Wanted are the registrations the seed needs (after the seed selectors), sorted.
	Wanted []string
	// Deploy are the wanted registrations whose installation is created or updated, sorted:
	// the wanted ones that are not being deleted.
	Deploy []string
	// Existing maps a registration to the seed's installation of it.
	Existing map[string]*gardencorev1beta1.ControllerInstallation
	// Delete are the seed's installations of registrations that are not wanted, by name.
	Delete []*gardencorev1beta1.ControllerInstallation
	// MissingBuckets are BackupBuckets named by the seed's BackupEntries that do not exist.
	MissingBuckets []string
}

// RequiredKindTypes is the union of the kind/types the seed's BackupBuckets, BackupEntries and
// Shoots need, and the seed's own.
func RequiredKindTypes(s State) (sets.Set[string], []string) {
	wanted := KindTypesForBackupBuckets(s.Seed.Name, s.Buckets)
	forEntries, missing := KindTypesForBackupEntries(s.Entries, s.Buckets)
	wanted = wanted.Union(forEntries)
	for i := range s.Shoots {
		wanted = wanted.Union(KindTypesForShoot(&s.Shoots[i], s.Seed, s.Registrations, s.InternalDomain, s.DefaultDomains))
	}
	return wanted.Union(KindTypesForSeed(s.Seed, s.Registrations)), missing
}

// Decide computes a seed's plan as Gardener's seed reconciler does.
//
// A registration is wanted when it serves a required kind/type; when its policy is Always
// (unless it or the seed is being deleted) or AlwaysExceptNoShoots and any Shoot is on the seed
// (unless it is being deleted); or when the seed's installation of it reports Required=True
// (gardenlet still needs the extension, e.g. for resources being cleaned up). Only those whose
// seedSelector matches the seed's labels stay wanted. Installations of registrations not wanted
// are deleted; wanted registrations being deleted keep their installation but get none created
// or updated.
//
// A required kind/type no registration serves, and an installation of a registration that does
// not exist, are errors as in Gardener: nothing is changed until the registration exists.
func Decide(s State) (Plan, error) {
	required, missing := RequiredKindTypes(s)
	plan := Plan{MissingBuckets: missing, Existing: map[string]*gardencorev1beta1.ControllerInstallation{}}

	registrations := make(map[string]*gardencorev1beta1.ControllerRegistration, len(s.Registrations))
	byKindType := map[string][]string{}
	wanted := sets.New[string]()
	for i := range s.Registrations {
		r := &s.Registrations[i]
		registrations[r.Name] = r
		if r.DeletionTimestamp == nil {
			switch policy(r) {
			case gardencorev1beta1.ControllerDeploymentPolicyAlways:
				if s.Seed.DeletionTimestamp == nil {
					wanted.Insert(r.Name)
				}
			case gardencorev1beta1.ControllerDeploymentPolicyAlwaysExceptNoShoots:
				if len(s.Shoots) > 0 {
					wanted.Insert(r.Name)
				}
			}
		}
		for _, resource := range r.Spec.Resources {
			id := ExtensionID(resource.Kind, resource.Type)
			byKindType[id] = append(byKindType[id], r.Name)
		}
	}
	for _, id := range sets.List(required) {
		names, ok := byKindType[id]
		if !ok {
			return plan, blocked(fmt.Errorf("need to install an extension controller for %q but no appropriate ControllerRegistration found", id))
		}
		wanted.Insert(names...)
	}
	for _, installation := range s.Installations {
		if isRequired(&installation) {
			wanted.Insert(installation.Spec.RegistrationRef.Name)
		}
	}

	seedLabels := labels.Set(s.Seed.Labels)
	for _, name := range sets.List(wanted) {
		r, ok := registrations[name]
		if !ok {
			// An installation reports Required for a registration that is gone: Gardener fails
			// here too, before changing anything.
			return plan, blocked(fmt.Errorf("ControllerRegistration with name %s not found", name))
		}
		matches, err := seedSelectorMatches(r, seedLabels)
		if err != nil {
			return plan, blocked(err)
		}
		if matches {
			plan.Wanted = append(plan.Wanted, name)
			if r.DeletionTimestamp == nil {
				plan.Deploy = append(plan.Deploy, name)
			}
		}
	}

	for i := range s.Installations {
		installation := &s.Installations[i]
		name := installation.Spec.RegistrationRef.Name
		if _, ok := registrations[name]; !ok {
			return plan, blocked(fmt.Errorf("ControllerRegistration %q does not exist", name))
		}
		// Several installations of one registration on one seed: the last listed is the one
		// reconciled, as in Gardener.
		plan.Existing[name] = installation
	}
	for name, installation := range plan.Existing {
		if !slices.Contains(plan.Wanted, name) {
			plan.Delete = append(plan.Delete, installation)
		}
	}
	sort.Slice(plan.Delete, func(i, j int) bool { return plan.Delete[i].Name < plan.Delete[j].Name })
	return plan, nil
}

func policy(r *gardencorev1beta1.ControllerRegistration) gardencorev1beta1.ControllerDeploymentPolicy {
	if r.Spec.Deployment == nil || r.Spec.Deployment.Policy == nil {
		return gardencorev1beta1.ControllerDeploymentPolicyOnDemand
	}
	return *r.Spec.Deployment.Policy
}

func isRequired(installation *gardencorev1beta1.ControllerInstallation) bool {
	for _, c := range installation.Status.Conditions {
		if c.Type == gardencorev1beta1.ControllerInstallationRequired && c.Status == gardencorev1beta1.ConditionTrue {
			return true
		}
	}
	return false
}

// seedSelectorMatches: no selector matches every seed.
func seedSelectorMatches(r *gardencorev1beta1.ControllerRegistration, seedLabels labels.Set) (bool, error) {
	selector := &metav1.LabelSelector{}
	if r.Spec.Deployment != nil && r.Spec.Deployment.SeedSelector != nil {
		selector = r.Spec.Deployment.SeedSelector
	}
	s, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return false, fmt.Errorf("label selector conversion failed: %v for seedSelector: %w", *selector, err)
	}
	return s.Matches(seedLabels), nil
}

// SortDefaultDomains orders default domain Secrets as Gardener does, highest
// dns.gardener.cloud/domain-default-priority first (0 when absent or not a number), stable
// otherwise: a shoot domain below several default domains takes the first's provider.
func SortDefaultDomains(secrets []client.Object) {
	priority := func(o client.Object) int {
		p, err := strconv.Atoi(o.GetAnnotations()[annotationDNSDefaultPriority])
		if err != nil {
			return 0
		}
		return p
	}
	sort.SliceStable(secrets, func(i, j int) bool { return priority(secrets[i]) > priority(secrets[j]) })
}
