package namespacedcloudprofile

import (
	"slices"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	"k8s.io/utils/ptr"
)

// MergedSpec is the CloudProfileSpec a NamespacedCloudProfile exposes in its status: its parent
// CloudProfile's spec with the namespaced overrides applied, as Gardener merges them:
//
//   - Kubernetes versions: only versions the parent offers; an override sets the version's
//     expirationDate (to none, if the override has none). Versions only the namespaced profile
//     lists are ignored.
//   - Machine images: added when the parent lacks them; otherwise an override's updateStrategy
//     wins when set, and its versions are merged: a version the parent lacks is added; a
//     version the parent has is replaced by the override when the override sets architectures,
//     capability flavors, CRIs, a kubelet version constraint or a classification, else only
//     its expirationDate is taken.
//   - Machine types and volume types: added when the parent lacks them, else replaced whole.
//   - The namespaced profile's machine images and machine types are first brought into the
//     parent's format (capability flavors when the parent defines machine capabilities, legacy
//     architectures otherwise).
//   - caBundle: the namespaced bundle is appended to the parent's.
//   - limits.maxNodesTotal: the namespaced value wins when it is positive (higher or lower).
//   - providerConfig, regions and everything else: the parent's. (Provider extensions merge
//     the namespaced providerConfig into the status themselves, by their webhook on it.)
//   - Finally every machine type and machine image version gets an architecture where it has
//     none: the one its capabilities (with the parent's defaults) name, else amd64.
//
// The parent's order is kept; additions follow in the namespaced profile's order. Neither
// argument is modified.
func MergedSpec(profile *gardencorev1beta1.NamespacedCloudProfile, parent *gardencorev1beta1.CloudProfile) gardencorev1beta1.CloudProfileSpec {
	merged := *parent.Spec.DeepCopy()
	overrides := profile.Spec.DeepCopy()

	if overrides.Kubernetes != nil {
		merged.Kubernetes.Versions = mergeByKey(merged.Kubernetes.Versions, overrides.Kubernetes.Versions, expirableVersionKey, withExpirationDate, false)
	}
	uniform := ToParentFormat(*overrides, parent.Spec.MachineCapabilities)
	merged.MachineImages = mergeByKey(merged.MachineImages, uniform.MachineImages, machineImageKey, mergeMachineImage, true)
	merged.MachineTypes = mergeByKey(merged.MachineTypes, uniform.MachineTypes, machineTypeKey, nil, true)
	merged.VolumeTypes = mergeByKey(merged.VolumeTypes, overrides.VolumeTypes, volumeTypeKey, nil, true)
	if overrides.CABundle != nil {
		merged.CABundle = ptr.To(ptr.Deref(merged.CABundle, "") + *overrides.CABundle)
	}
	if overrides.Limits != nil {
		if merged.Limits == nil {
			merged.Limits = &gardencorev1beta1.Limits{}
		}
		if ptr.Deref(overrides.Limits.MaxNodesTotal, 0) > 0 {
			merged.Limits.MaxNodesTotal = overrides.Limits.MaxNodesTotal
		}
	}
	defaultArchitectures(&merged)
	return merged
}

func expirableVersionKey(v gardencorev1beta1.ExpirableVersion) string       { return v.Version }
func machineImageKey(i gardencorev1beta1.MachineImage) string               { return i.Name }
func machineImageVersionKey(v gardencorev1beta1.MachineImageVersion) string { return v.Version }
func machineTypeKey(t gardencorev1beta1.MachineType) string                 { return t.Name }
func volumeTypeKey(t gardencorev1beta1.VolumeType) string                   { return t.Name }

// mergeByKey merges overrides into base by key, keeping base's order and appending additions
// (when allowed) in the overrides' order. An override of an existing element replaces it, or
// is combined with it by merge when given. An empty result is base itself, so that an empty
// list stays empty rather than becoming absent.
func mergeByKey[T any](base, overrides []T, key func(T) string, merge func(base, override T) T, allowAdditional bool) []T {
	var order []string
	values := make(map[string]T, len(base)+len(overrides))
	for _, v := range base {
		k := key(v)
		if _, seen := values[k]; !seen {
			order = append(order, k)
		}
		values[k] = v
	}
	for _, override := range overrides {
		k := key(override)
		existing, exists := values[k]
		switch {
		case !exists && !allowAdditional:
			continue
		case !exists:
			order = append(order, k)
			values[k] = override
		case merge != nil:
			values[k] = merge(existing, override)
		default:
			values[k] = override
		}
	}
	if len(order) == 0 {
		return base
	}
	result := make([]T, 0, len(order))
	for _, k := range order {
		result = append(result, values[k])
	}
	return result
}

func withExpirationDate(base, override gardencorev1beta1.ExpirableVersion) gardencorev1beta1.ExpirableVersion {
	base.ExpirationDate = override.ExpirationDate
	return base
}

func mergeMachineImage(base, override gardencorev1beta1.MachineImage) gardencorev1beta1.MachineImage {
	if ptr.Deref(override.UpdateStrategy, "") != "" {
		base.UpdateStrategy = override.UpdateStrategy
	}
	base.Versions = mergeByKey(base.Versions, override.Versions, machineImageVersionKey, mergeMachineImageVersion, true)
	return base
}

// mergeMachineImageVersion: an override that describes the version itself (it was the
// namespaced profile's own version before the parent got one of the same name) replaces the
// parent's; one that only sets an expiration date extends or shortens the parent's.
func mergeMachineImageVersion(base, override gardencorev1beta1.MachineImageVersion) gardencorev1beta1.MachineImageVersion {
	if len(override.Architectures) > 0 || len(override.CapabilityFlavors) > 0 || len(override.CRI) > 0 ||
		ptr.Deref(override.KubeletVersionConstraint, "") != "" || ptr.Deref(override.Classification, "") != "" {
		return override
	}
	base.ExpirableVersion = withExpirationDate(base.ExpirableVersion, override.ExpirableVersion)
	return base
}

// ToParentFormat brings the namespaced profile's machine images and machine types into the
// format of its parent: with capability definitions, legacy architectures become capability
// flavors (image versions) and an architecture capability (machine types); without, capability
// flavors become architectures and capabilities are dropped. spec is not modified.
func ToParentFormat(spec gardencorev1beta1.NamespacedCloudProfileSpec, definitions []gardencorev1beta1.CapabilityDefinition) gardencorev1beta1.NamespacedCloudProfileSpec {
	capabilityFormat := len(definitions) > 0
	out := spec.DeepCopy()
	for i := range out.MachineImages {
		for j := range out.MachineImages[i].Versions {
			version := &out.MachineImages[i].Versions[j]
			switch {
			case capabilityFormat && len(version.CapabilityFlavors) == 0:
				version.CapabilityFlavors = []gardencorev1beta1.MachineImageFlavor{}
				for _, arch := range version.Architectures {
					version.CapabilityFlavors = append(version.CapabilityFlavors, gardencorev1beta1.MachineImageFlavor{
						Capabilities: gardencorev1beta1.Capabilities{v1beta1constants.ArchitectureName: {arch}},
					})
				}
			case !capabilityFormat:
				if len(version.Architectures) == 0 {
					version.Architectures = architecturesOf(version.CapabilityFlavors)
				}
				version.CapabilityFlavors = nil
			}
		}
	}
	for i := range out.MachineTypes {
		machineType := &out.MachineTypes[i]
		if capabilityFormat {
			if len(machineType.Capabilities) > 0 {
				continue
			}
			arch := machineType.GetArchitecture(definitions)
			if arch == "" {
				arch = ptr.Deref(machineType.Architecture, v1beta1constants.ArchitectureAMD64)
			}
			machineType.Capabilities = gardencorev1beta1.Capabilities{v1beta1constants.ArchitectureName: {arch}}
			continue
		}
		if machineType.Architecture == nil {
			if archs := machineType.Capabilities[v1beta1constants.ArchitectureName]; len(archs) > 0 {
				machineType.Architecture = ptr.To(archs[0])
			}
		}
		machineType.Capabilities = nil
	}
	return *out
}

// defaultArchitectures gives every machine type and machine image version an architecture:
// the one its capabilities (with the definitions' defaults) name, else amd64.
func defaultArchitectures(spec *gardencorev1beta1.CloudProfileSpec) {
	definitions := spec.MachineCapabilities
	for i := range spec.MachineTypes {
		machineType := &spec.MachineTypes[i]
		switch arch := machineType.GetArchitecture(definitions); {
		case arch == "":
			machineType.Architecture = ptr.To(v1beta1constants.ArchitectureAMD64)
		case machineType.Architecture == nil:
			machineType.Architecture = ptr.To(arch)
		}
	}
	for i := range spec.MachineImages {
		for j := range spec.MachineImages[i].Versions {
			version := &spec.MachineImages[i].Versions[j]
			if len(version.Architectures) > 0 {
				continue
			}
			archs := architecturesOf(flavorsWithDefaults(version.CapabilityFlavors, definitions))
			if len(archs) == 0 {
				archs = []string{v1beta1constants.ArchitectureAMD64}
			}
			version.Architectures = archs
		}
	}
}

// flavorsWithDefaults fills each flavor's missing capabilities with the definitions' values; no
// flavors stand for one flavor with every defined value.
func flavorsWithDefaults(flavors []gardencorev1beta1.MachineImageFlavor, definitions []gardencorev1beta1.CapabilityDefinition) []gardencorev1beta1.MachineImageFlavor {
	if len(flavors) == 0 {
		return []gardencorev1beta1.MachineImageFlavor{{Capabilities: gardencorev1beta1.GetCapabilitiesWithAppliedDefaults(nil, definitions)}}
	}
	result := make([]gardencorev1beta1.MachineImageFlavor, 0, len(flavors))
	for _, flavor := range flavors {
		result = append(result, gardencorev1beta1.MachineImageFlavor{Capabilities: gardencorev1beta1.GetCapabilitiesWithAppliedDefaults(flavor.Capabilities, definitions)})
	}
	return result
}

// architecturesOf collects the flavors' architectures, each once and sorted (Gardener leaves
// their order to a set, which would make the status differ from one computation to the next).
func architecturesOf(flavors []gardencorev1beta1.MachineImageFlavor) []string {
	archs := []string{}
	for _, flavor := range flavors {
		for _, arch := range flavor.Capabilities[v1beta1constants.ArchitectureName] {
			if !slices.Contains(archs, arch) {
				archs = append(archs, arch)
			}
		}
	}
	slices.Sort(archs)
	return archs
}
