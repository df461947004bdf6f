package maintenance

import (
	"fmt"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
)

// candidateImageVersions are the versions of image a worker pool can run: its architecture,
// its machine type's capabilities, its container runtime, its kubelet version, and for in-place
// updates, the versions that can be reached in place from its current one.
func candidateImageVersions(image gardencorev1beta1.MachineImage, worker gardencorev1beta1.Worker, kubelet *semver.Version, machineType *gardencorev1beta1.MachineType, capabilities []gardencorev1beta1.CapabilityDefinition) []gardencorev1beta1.MachineImageVersion {
	// Gardener defaults a pool's architecture to amd64.
	architecture := ptr.Deref(worker.Machine.Architecture, v1beta1constants.ArchitectureAMD64)
	cri := ptr.Deref(worker.CRI, gardencorev1beta1.CRI{Name: gardencorev1beta1.CRINameContainerD})
	inPlace := worker.UpdateStrategy != nil && (*worker.UpdateStrategy == gardencorev1beta1.AutoInPlaceUpdate || *worker.UpdateStrategy == gardencorev1beta1.ManualInPlaceUpdate)
	current := ptr.Deref(worker.Machine.Image.Version, "")

	var candidates []gardencorev1beta1.MachineImageVersion
	for _, v := range image.Versions {
		if !slices.Contains(architectures(v, capabilities), architecture) {
			continue
		}
		if len(capabilities) > 0 && !capabilitiesSupported(machineType.Capabilities, v.CapabilityFlavors, capabilities) {
			continue
		}
		if !runsCRI(v, cri) {
			continue
		}
		if v.KubeletVersionConstraint != nil {
			// A CloudProfile cannot hold an invalid constraint: its validation refuses it.
			if constraint, err := semver.NewConstraint(*v.KubeletVersionConstraint); err == nil && !constraint.Check(kubelet) {
				continue
			}
		}
		if inPlace && !reachableInPlace(v, current) {
			continue
		}
		candidates = append(candidates, v)
	}
	return candidates
}

// architectures are the architectures of an image version: those its capability flavors name
// (all the profile defines if it has no flavors), else its architectures field.
func architectures(v gardencorev1beta1.MachineImageVersion, capabilities []gardencorev1beta1.CapabilityDefinition) []string {
	found := sets.New[string]()
	if len(v.CapabilityFlavors) == 0 {
		for _, c := range capabilities {
			if c.Name == v1beta1constants.ArchitectureName {
				found.Insert(c.Values...)
			}
		}
	}
	for _, flavor := range v.CapabilityFlavors {
		found.Insert(flavor.Capabilities[v1beta1constants.ArchitectureName]...)
	}
	if found.Len() > 0 {
		return found.UnsortedList()
	}
	return v.Architectures
}

// capabilitiesSupported says whether one of the image version's flavors offers, for every
// capability, a value the machine type has (both with the profile's defaults). An image
// version without flavors supports everything.
func capabilitiesSupported(machine gardencorev1beta1.Capabilities, flavors []gardencorev1beta1.MachineImageFlavor, definitions []gardencorev1beta1.CapabilityDefinition) bool {
	if len(flavors) == 0 {
		return true
	}
	machine = gardencorev1beta1.GetCapabilitiesWithAppliedDefaults(machine, definitions)
	for _, flavor := range flavors {
		offered := gardencorev1beta1.GetCapabilitiesWithAppliedDefaults(flavor.Capabilities, definitions)
		compatible := true
		for name, values := range offered {
			if !slices.ContainsFunc(values, func(v string) bool { return slices.Contains(machine[name], v) }) {
				compatible = false
				break
			}
		}
		if compatible {
			return true
		}
	}
	return false
}

func runsCRI(v gardencorev1beta1.MachineImageVersion, cri gardencorev1beta1.CRI) bool {
	i := slices.IndexFunc(v.CRI, func(c gardencorev1beta1.CRI) bool { return c.Name == cri.Name })
	if i < 0 {
		return false
	}
	for _, wanted := range cri.ContainerRuntimes {
		if !slices.ContainsFunc(v.CRI[i].ContainerRuntimes, func(c gardencorev1beta1.ContainerRuntime) bool { return c.Type == wanted.Type }) {
			return false
		}
	}
	return true
}

// reachableInPlace: the current version itself, or a version that supports in-place updates
// from a minimum version not higher than the current one.
func reachableInPlace(v gardencorev1beta1.MachineImageVersion, current string) bool {
	if current == "" || v.InPlaceUpdates == nil || !v.InPlaceUpdates.Supported {
		return false
	}
	if v.Version == current {
		return true
	}
	if v.InPlaceUpdates.MinVersionForUpdate == nil {
		return false
	}
	minimum, err1 := semver.NewVersion(*v.InPlaceUpdates.MinVersionForUpdate)
	cur, err2 := semver.NewVersion(current)
	return err1 == nil && err2 == nil && !minimum.GreaterThan(cur)
}

// imageUpdate decides the update of one worker pool's machine image. ok is false when the pool
// keeps its version (and has no failure to report).
func (p Versions) imageUpdate(image gardencorev1beta1.MachineImage, candidates []gardencorev1beta1.MachineImageVersion, current gardencorev1beta1.ShootMachineImage, autoUpdate bool) (target string, result UpdateResult, ok bool) {
	strategy := ptr.Deref(image.UpdateStrategy, gardencorev1beta1.UpdateStrategyMajor)
	index := slices.IndexFunc(candidates, func(v gardencorev1beta1.MachineImageVersion) bool {
		return current.Version != nil && v.Version == *current.Version
	})
	var expired bool
	switch {
	case image.Name != current.Name || index < 0:
		result.Reason, expired = "Version does not exist in CloudProfile", true
	case p.Expired(candidates[index].ExpirableVersion):
		result.Reason, expired = fmt.Sprintf("Machine image version expired - force update required (image update strategy: %s)", strategy), true
	case autoUpdate:
		result.Reason = fmt.Sprintf("Automatic update of the machine image version is configured (image update strategy: %s)", strategy)
	default:
		return "", UpdateResult{}, false
	}

	var auto, force pickFunc
	switch strategy {
	case gardencorev1beta1.UpdateStrategyPatch:
		auto, force = p.LatestPatch, p.ForceToNextHigherMinor
	case gardencorev1beta1.UpdateStrategyMinor:
		auto, force = p.LatestMinor, p.ForceToNextHigherMajor
	default:
		auto = p.LatestOverall
		force = func([]gardencorev1beta1.ExpirableVersion, string) (bool, string, error) {
			return false, "", fmt.Errorf("either the machine image %q is reaching end of life and migration to another machine image is required or there is a misconfiguration in the CloudProfile. If it is the latter, make sure the machine image in the CloudProfile has at least one version that is not expired, not in preview and greater or equal to the current Shoot image version %q", current.Name, ptr.Deref(current.Version, ""))
		}
	}
	expirable := make([]gardencorev1beta1.ExpirableVersion, 0, len(candidates))
	for _, v := range candidates {
		expirable = append(expirable, v.ExpirableVersion)
	}
	target, err := Target(expirable, ptr.Deref(current.Version, ""), auto, force, expired)
	if err != nil {
		result.Description = fmt.Sprintf("failed to update machine image %q: %s", current.Name,
			fmt.Errorf("failed to determine the target version for maintenance of machine image %q with strategy %q: %w", image.Name, strategy, err).Error())
		return "", result, true
	}
	if target == "" {
		return "", UpdateResult{}, false
	}
	result.Description = fmt.Sprintf("Updated machine image %q from %q to %q", current.Name, ptr.Deref(current.Version, ""), target)
	result.Successful = true
	return target, result, true
}

// findImage is the profile's machine image of the name (case-insensitive, as Gardener
// matches it).
func findImage(images []gardencorev1beta1.MachineImage, name string) (gardencorev1beta1.MachineImage, bool) {
	i := slices.IndexFunc(images, func(image gardencorev1beta1.MachineImage) bool { return strings.EqualFold(image.Name, name) })
	if i < 0 {
		return gardencorev1beta1.MachineImage{}, false
	}
	return images[i], true
}
