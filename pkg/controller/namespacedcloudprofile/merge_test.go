package namespacedcloudprofile

import (
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

var (
	expiry      = metav1.NewTime(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC))
	laterExpiry = metav1.NewTime(time.Date(2028, 1, 1, 0, 0, 0, 0, time.UTC))
)

func version(v string) gardencorev1beta1.ExpirableVersion {
	return gardencorev1beta1.ExpirableVersion{Version: v}
}

func imageVersion(v string, archs ...string) gardencorev1beta1.MachineImageVersion {
	return gardencorev1beta1.MachineImageVersion{ExpirableVersion: version(v), Architectures: archs}
}

func parentProfile() *gardencorev1beta1.CloudProfile {
	p := &gardencorev1beta1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: "parent"}}
	p.Spec.Type = "local"
	p.Spec.Kubernetes.Versions = []gardencorev1beta1.ExpirableVersion{version("1.33.0"), {Version: "1.32.0", ExpirationDate: &expiry}}
	p.Spec.MachineImages = []gardencorev1beta1.MachineImage{
		{Name: "gardenlinux", UpdateStrategy: ptr.To(gardencorev1beta1.UpdateStrategyMajor), Versions: []gardencorev1beta1.MachineImageVersion{
			{ExpirableVersion: version("1.0"), Architectures: []string{"amd64"}, CRI: []gardencorev1beta1.CRI{{Name: gardencorev1beta1.CRINameContainerD}}, KubeletVersionConstraint: ptr.To(">= 1.30")},
			imageVersion("2.0", "amd64"),
		}},
		{Name: "ubuntu", Versions: []gardencorev1beta1.MachineImageVersion{imageVersion("22.04", "amd64")}},
	}
	p.Spec.MachineTypes = []gardencorev1beta1.MachineType{
		{Name: "small", CPU: resource.MustParse("2"), Memory: resource.MustParse("4Gi"), Architecture: ptr.To("amd64")},
		{Name: "large", CPU: resource.MustParse("8"), Memory: resource.MustParse("32Gi"), Architecture: ptr.To("amd64")},
	}
	p.Spec.VolumeTypes = []gardencorev1beta1.VolumeType{{Name: "standard", Class: "standard"}, {Name: "fast", Class: "premium"}}
	p.Spec.Regions = []gardencorev1beta1.Region{{Name: "local"}}
	p.Spec.ProviderConfig = &runtime.RawExtension{Raw: []byte(`{"parent":true}`)}
	return p
}

func namespaced(spec gardencorev1beta1.NamespacedCloudProfileSpec) *gardencorev1beta1.NamespacedCloudProfile {
	spec.Parent = gardencorev1beta1.CloudProfileReference{Kind: "CloudProfile", Name: "parent"}
	return &gardencorev1beta1.NamespacedCloudProfile{ObjectMeta: metav1.ObjectMeta{Namespace: "garden-dev", Name: "custom"}, Spec: spec}
}

func TestMergeWithoutOverridesIsTheParent(t *testing.T) {
	parent := parentProfile()
	assert.Equal(t, parent.Spec, MergedSpec(namespaced(gardencorev1beta1.NamespacedCloudProfileSpec{}), parent))
}

func TestMergeKubernetesVersions(t *testing.T) {
	parent := parentProfile()
	merged := MergedSpec(namespaced(gardencorev1beta1.NamespacedCloudProfileSpec{Kubernetes: &gardencorev1beta1.KubernetesSettings{Versions: []gardencorev1beta1.ExpirableVersion{
		{Version: "1.33.0", ExpirationDate: &laterExpiry, Classification: ptr.To(gardencorev1beta1.ClassificationPreview)},
		version("1.32.0"),
		{Version: "1.99.0", ExpirationDate: &laterExpiry},
	}}}), parent)
	assert.Equal(t, []gardencorev1beta1.ExpirableVersion{
		{Version: "1.33.0", ExpirationDate: &laterExpiry}, // only the expiration date is taken
		version("1.32.0"), // an override without one clears the parent's
	}, merged.Kubernetes.Versions, "versions only the namespaced profile lists are ignored; the parent's order stays")
}

func TestMergeMachineImages(t *testing.T) {
	t.Run("an image the parent lacks is added, after the parent's", func(t *testing.T) {
		merged := MergedSpec(namespaced(gardencorev1beta1.NamespacedCloudProfileSpec{MachineImages: []gardencorev1beta1.MachineImage{
			{Name: "custom", Versions: []gardencorev1beta1.MachineImageVersion{imageVersion("0.1", "arm64")}},
		}}), parentProfile())
		require.Len(t, merged.MachineImages, 3)
		assert.Equal(t, []string{"gardenlinux", "ubuntu", "custom"}, []string{merged.MachineImages[0].Name, merged.MachineImages[1].Name, merged.MachineImages[2].Name})
		assert.Equal(t, []gardencorev1beta1.MachineImageVersion{imageVersion("0.1", "arm64")}, merged.MachineImages[2].Versions)
	})
	t.Run("a version override with only an expiration date extends the parent's version", func(t *testing.T) {
		parent := parentProfile()
		merged := MergedSpec(namespaced(gardencorev1beta1.NamespacedCloudProfileSpec{MachineImages: []gardencorev1beta1.MachineImage{
			{Name: "gardenlinux", Versions: []gardencorev1beta1.MachineImageVersion{{ExpirableVersion: gardencorev1beta1.ExpirableVersion{Version: "1.0", ExpirationDate: &laterExpiry}}}},
		}}), parent)
		want := parent.Spec.MachineImages[0].Versions[0]
		want.ExpirationDate = &laterExpiry
		assert.Equal(t, want, merged.MachineImages[0].Versions[0], "CRI, architectures and kubelet constraint stay the parent's")
		assert.Equal(t, parent.Spec.MachineImages[0].UpdateStrategy, merged.MachineImages[0].UpdateStrategy, "no update strategy set: the parent's")
	})
	for name, override := range map[string]gardencorev1beta1.MachineImageVersion{
		"architectures":              imageVersion("1.0", "arm64"),
		"CRI":                        {ExpirableVersion: version("1.0"), CRI: []gardencorev1beta1.CRI{{Name: "other"}}},
		"kubelet version constraint": {ExpirableVersion: version("1.0"), KubeletVersionConstraint: ptr.To("< 1.30")},
		"classification":             {ExpirableVersion: gardencorev1beta1.ExpirableVersion{Version: "1.0", Classification: ptr.To(gardencorev1beta1.ClassificationDeprecated)}},
	} {
		t.Run("a version override with "+name+" replaces the parent's version", func(t *testing.T) {
			merged := MergedSpec(namespaced(gardencorev1beta1.NamespacedCloudProfileSpec{MachineImages: []gardencorev1beta1.MachineImage{
				{Name: "gardenlinux", Versions: []gardencorev1beta1.MachineImageVersion{override}},
			}}), parentProfile())
			want := override
			if len(want.Architectures) == 0 {
				want.Architectures = []string{"amd64"} // defaulted afterwards, like every version without one
			}
			assert.Equal(t, want, merged.MachineImages[0].Versions[0])
		})
	}
	t.Run("a version the parent lacks is added to the parent's image", func(t *testing.T) {
		merged := MergedSpec(namespaced(gardencorev1beta1.NamespacedCloudProfileSpec{MachineImages: []gardencorev1beta1.MachineImage{
			{Name: "gardenlinux", Versions: []gardencorev1beta1.MachineImageVersion{imageVersion("3.0", "arm64")}},
		}}), parentProfile())
		assert.Equal(t, []string{"1.0", "2.0", "3.0"}, []string{merged.MachineImages[0].Versions[0].Version, merged.MachineImages[0].Versions[1].Version, merged.MachineImages[0].Versions[2].Version})
	})
	t.Run("an update strategy override wins", func(t *testing.T) {
		merged := MergedSpec(namespaced(gardencorev1beta1.NamespacedCloudProfileSpec{MachineImages: []gardencorev1beta1.MachineImage{
			{Name: "gardenlinux", UpdateStrategy: ptr.To(gardencorev1beta1.UpdateStrategyMinor)},
		}}), parentProfile())
		assert.Equal(t, ptr.To(gardencorev1beta1.UpdateStrategyMinor), merged.MachineImages[0].UpdateStrategy)
		assert.Len(t, merged.MachineImages[0].Versions, 2, "versions untouched")
	})
}

func TestMergeMachineAndVolumeTypes(t *testing.T) {
	merged := MergedSpec(namespaced(gardencorev1beta1.NamespacedCloudProfileSpec{
		MachineTypes: []gardencorev1beta1.MachineType{
			{Name: "large", CPU: resource.MustParse("16"), Memory: resource.MustParse("64Gi"), Architecture: ptr.To("amd64")},
			{Name: "custom", CPU: resource.MustParse("1"), Memory: resource.MustParse("1Gi")},
		},
		VolumeTypes: []gardencorev1beta1.VolumeType{{Name: "fast", Class: "ultra"}, {Name: "archive", Class: "cold"}},
	}), parentProfile())
	assert.Equal(t, []gardencorev1beta1.MachineType{
		{Name: "small", CPU: resource.MustParse("2"), Memory: resource.MustParse("4Gi"), Architecture: ptr.To("amd64")},
		{Name: "large", CPU: resource.MustParse("16"), Memory: resource.MustParse("64Gi"), Architecture: ptr.To("amd64")},
		{Name: "custom", CPU: resource.MustParse("1"), Memory: resource.MustParse("1Gi"), Architecture: ptr.To("amd64")},
	}, merged.MachineTypes, "replaced whole, added after the parent's, architecture defaulted")
	assert.Equal(t, []gardencorev1beta1.VolumeType{{Name: "standard", Class: "standard"}, {Name: "fast", Class: "ultra"}, {Name: "archive", Class: "cold"}}, merged.VolumeTypes)
}

func TestMergeCABundle(t *testing.T) {
	parent := parentProfile()
	assert.Equal(t, ptr.To("namespaced"), MergedSpec(namespaced(gardencorev1beta1.NamespacedCloudProfileSpec{CABundle: ptr.To("namespaced")}), parent).CABundle)
	parent.Spec.CABundle = ptr.To("parent\n")
	assert.Equal(t, ptr.To("parent\nnamespaced"), MergedSpec(namespaced(gardencorev1beta1.NamespacedCloudProfileSpec{CABundle: ptr.To("namespaced")}), parent).CABundle, "appended")
	assert.Equal(t, ptr.To("parent\n"), MergedSpec(namespaced(gardencorev1beta1.NamespacedCloudProfileSpec{}), parent).CABundle)
}

func TestMergeLimits(t *testing.T) {
	limits := func(max int32) *gardencorev1beta1.Limits { return &gardencorev1beta1.Limits{MaxNodesTotal: &max} }
	for _, tc := range []struct {
		name               string
		parent, namespaced *gardencorev1beta1.Limits
		want               *gardencorev1beta1.Limits
	}{
		{name: "none at all", want: nil},
		{name: "the parent's only", parent: limits(10), want: limits(10)},
		{name: "the namespaced profile's only", namespaced: limits(10), want: limits(10)},
		{name: "a higher override", parent: limits(10), namespaced: limits(99), want: limits(99)},
		{name: "a lower override", parent: limits(124), namespaced: limits(20), want: limits(20)},
		{name: "zero overrides nothing", parent: limits(10), namespaced: limits(0), want: limits(10)},
		{name: "empty limits give empty limits", namespaced: &gardencorev1beta1.Limits{}, want: &gardencorev1beta1.Limits{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent := parentProfile()
			parent.Spec.Limits = tc.parent
			assert.Equal(t, tc.want, MergedSpec(namespaced(gardencorev1beta1.NamespacedCloudProfileSpec{Limits: tc.namespaced}), parent).Limits)
		})
	}
}

func TestMergeTakesTheParentsProviderConfigAndRegions(t *testing.T) {
	merged := MergedSpec(namespaced(gardencorev1beta1.NamespacedCloudProfileSpec{ProviderConfig: &runtime.RawExtension{Raw: []byte(`{"namespaced":true}`)}}), parentProfile())
	assert.Equal(t, `{"parent":true}`, string(merged.ProviderConfig.Raw), "provider extensions merge the namespaced one by their webhook")
	assert.Equal(t, []gardencorev1beta1.Region{{Name: "local"}}, merged.Regions)
}

func TestMergeModifiesNeitherInput(t *testing.T) {
	parent := parentProfile()
	parent.Spec.MachineCapabilities = []gardencorev1beta1.CapabilityDefinition{{Name: "architecture", Values: []string{"amd64", "arm64"}}}
	parent.Spec.MachineTypes = append(parent.Spec.MachineTypes, gardencorev1beta1.MachineType{Name: "bare"})
	profile := namespaced(gardencorev1beta1.NamespacedCloudProfileSpec{
		MachineImages: []gardencorev1beta1.MachineImage{{Name: "gardenlinux", Versions: []gardencorev1beta1.MachineImageVersion{imageVersion("9.0", "arm64"), {ExpirableVersion: version("8.0")}}}},
		MachineTypes:  []gardencorev1beta1.MachineType{{Name: "custom"}},
		Limits:        &gardencorev1beta1.Limits{MaxNodesTotal: ptr.To[int32](3)},
	})
	parentBefore, profileBefore := parent.DeepCopy(), profile.DeepCopy()
	MergedSpec(profile, parent)
	assert.Equal(t, parentBefore, parent)
	assert.Equal(t, profileBefore, profile)
}

func TestToParentFormat(t *testing.T) {
	archDefinitions := []gardencorev1beta1.CapabilityDefinition{{Name: "architecture", Values: []string{"amd64", "arm64"}}}
	flavor := func(archs ...string) gardencorev1beta1.MachineImageFlavor {
		return gardencorev1beta1.MachineImageFlavor{Capabilities: gardencorev1beta1.Capabilities{"architecture": archs}}
	}
	images := func(v gardencorev1beta1.MachineImageVersion) gardencorev1beta1.NamespacedCloudProfileSpec {
		return gardencorev1beta1.NamespacedCloudProfileSpec{MachineImages: []gardencorev1beta1.MachineImage{{Name: "i", Versions: []gardencorev1beta1.MachineImageVersion{v}}}}
	}
	versionOf := func(spec gardencorev1beta1.NamespacedCloudProfileSpec) gardencorev1beta1.MachineImageVersion {
		return spec.MachineImages[0].Versions[0]
	}

	t.Run("parent with capabilities: architectures become flavors", func(t *testing.T) {
		v := versionOf(ToParentFormat(images(imageVersion("1", "amd64", "arm64")), archDefinitions))
		assert.Equal(t, []gardencorev1beta1.MachineImageFlavor{flavor("amd64"), flavor("arm64")}, v.CapabilityFlavors)
		assert.Equal(t, []string{"amd64", "arm64"}, v.Architectures)
	})
	t.Run("parent with capabilities: flavors are kept", func(t *testing.T) {
		in := imageVersion("1", "arm64")
		in.CapabilityFlavors = []gardencorev1beta1.MachineImageFlavor{{Capabilities: gardencorev1beta1.Capabilities{"architecture": {"arm64"}, "gpu": {"nvidia"}}}}
		assert.Equal(t, in, versionOf(ToParentFormat(images(in), archDefinitions)))
	})
	t.Run("parent with capabilities: a version with neither gets no flavors", func(t *testing.T) {
		assert.Empty(t, versionOf(ToParentFormat(images(imageVersion("1")), archDefinitions)).CapabilityFlavors)
	})
	t.Run("parent with capabilities: machine types get an architecture capability", func(t *testing.T) {
		spec := ToParentFormat(gardencorev1beta1.NamespacedCloudProfileSpec{MachineTypes: []gardencorev1beta1.MachineType{
			{Name: "plain"},
			{Name: "arm", Architecture: ptr.To("arm64")},
			{Name: "capable", Capabilities: gardencorev1beta1.Capabilities{"architecture": {"arm64"}, "gpu": {"x"}}},
		}}, archDefinitions)
		assert.Equal(t, gardencorev1beta1.Capabilities{"architecture": {"amd64"}}, spec.MachineTypes[0].Capabilities)
		assert.Equal(t, gardencorev1beta1.Capabilities{"architecture": {"arm64"}}, spec.MachineTypes[1].Capabilities)
		assert.Equal(t, gardencorev1beta1.Capabilities{"architecture": {"arm64"}, "gpu": {"x"}}, spec.MachineTypes[2].Capabilities, "existing capabilities are kept")
	})
	t.Run("parent without capabilities: flavors become architectures, sorted", func(t *testing.T) {
		in := imageVersion("1")
		in.CapabilityFlavors = []gardencorev1beta1.MachineImageFlavor{flavor("arm64"), flavor("amd64"), flavor("arm64")}
		v := versionOf(ToParentFormat(images(in), nil))
		assert.Equal(t, []string{"amd64", "arm64"}, v.Architectures)
		assert.Nil(t, v.CapabilityFlavors)
	})
	t.Run("parent without capabilities: architectures are kept, flavors dropped", func(t *testing.T) {
		in := imageVersion("1", "amd64", "arm64")
		in.CapabilityFlavors = []gardencorev1beta1.MachineImageFlavor{flavor("arm64")}
		v := versionOf(ToParentFormat(images(in), nil))
		assert.Equal(t, []string{"amd64", "arm64"}, v.Architectures)
		assert.Nil(t, v.CapabilityFlavors)
	})
	t.Run("parent without capabilities: machine types lose capabilities, keep their architecture", func(t *testing.T) {
		spec := ToParentFormat(gardencorev1beta1.NamespacedCloudProfileSpec{MachineTypes: []gardencorev1beta1.MachineType{
			{Name: "capable", Capabilities: gardencorev1beta1.Capabilities{"architecture": {"arm64"}, "gpu": {"x"}}},
			{Name: "both", Architecture: ptr.To("amd64"), Capabilities: gardencorev1beta1.Capabilities{"architecture": {"arm64"}}},
		}}, nil)
		assert.Equal(t, ptr.To("arm64"), spec.MachineTypes[0].Architecture)
		assert.Equal(t, ptr.To("amd64"), spec.MachineTypes[1].Architecture)
		assert.Nil(t, spec.MachineTypes[0].Capabilities)
		assert.Nil(t, spec.MachineTypes[1].Capabilities)
	})
}

func TestMergeDefaultsArchitectures(t *testing.T) {
	t.Run("without capabilities: amd64", func(t *testing.T) {
		parent := parentProfile()
		parent.Spec.MachineTypes = []gardencorev1beta1.MachineType{{Name: "bare"}}
		parent.Spec.MachineImages = []gardencorev1beta1.MachineImage{{Name: "i", Versions: []gardencorev1beta1.MachineImageVersion{imageVersion("1")}}}
		merged := MergedSpec(namespaced(gardencorev1beta1.NamespacedCloudProfileSpec{}), parent)
		assert.Equal(t, ptr.To("amd64"), merged.MachineTypes[0].Architecture)
		assert.Equal(t, []string{"amd64"}, merged.MachineImages[0].Versions[0].Architectures)
	})
	t.Run("with capabilities: what the capabilities and their defaults name", func(t *testing.T) {
		parent := parentProfile()
		parent.Spec.MachineCapabilities = []gardencorev1beta1.CapabilityDefinition{{Name: "architecture", Values: []string{"arm64", "amd64"}}}
		parent.Spec.MachineTypes = []gardencorev1beta1.MachineType{
			{Name: "arm", Capabilities: gardencorev1beta1.Capabilities{"architecture": {"arm64"}}},
			{Name: "any"},
		}
		parent.Spec.MachineImages = []gardencorev1beta1.MachineImage{{Name: "i", Versions: []gardencorev1beta1.MachineImageVersion{
			{ExpirableVersion: version("1"), CapabilityFlavors: []gardencorev1beta1.MachineImageFlavor{{Capabilities: gardencorev1beta1.Capabilities{"architecture": {"arm64"}}}}},
			{ExpirableVersion: version("2")},
		}}}
		merged := MergedSpec(namespaced(gardencorev1beta1.NamespacedCloudProfileSpec{}), parent)
		assert.Equal(t, ptr.To("arm64"), merged.MachineTypes[0].Architecture, "the one its capability names")
		assert.Equal(t, ptr.To("amd64"), merged.MachineTypes[1].Architecture, "several possible: amd64")
		assert.Equal(t, []string{"arm64"}, merged.MachineImages[0].Versions[0].Architectures, "from its flavor")
		assert.Equal(t, []string{"amd64", "arm64"}, merged.MachineImages[0].Versions[1].Architectures, "no flavor: every defined one, sorted")
	})
	t.Run("a namespaced version in legacy form under a parent with capabilities", func(t *testing.T) {
		parent := parentProfile()
		parent.Spec.MachineCapabilities = []gardencorev1beta1.CapabilityDefinition{{Name: "architecture", Values: []string{"amd64", "arm64"}}}
		merged := MergedSpec(namespaced(gardencorev1beta1.NamespacedCloudProfileSpec{MachineImages: []gardencorev1beta1.MachineImage{
			{Name: "custom", Versions: []gardencorev1beta1.MachineImageVersion{imageVersion("1", "arm64")}},
		}}), parent)
		v := merged.MachineImages[2].Versions[0]
		assert.Equal(t, []string{"arm64"}, v.Architectures)
		assert.Equal(t, []gardencorev1beta1.MachineImageFlavor{{Capabilities: gardencorev1beta1.Capabilities{"architecture": {"arm64"}}}}, v.CapabilityFlavors)
	})
}

func TestMergeEmptyListsStayEmpty(t *testing.T) {
	parent := parentProfile()
	parent.Spec.MachineImages, parent.Spec.MachineTypes = []gardencorev1beta1.MachineImage{}, nil
	merged := MergedSpec(namespaced(gardencorev1beta1.NamespacedCloudProfileSpec{MachineImages: []gardencorev1beta1.MachineImage{}, MachineTypes: []gardencorev1beta1.MachineType{}}), parent)
	assert.NotNil(t, merged.MachineImages, "the parent's empty list stays an empty list")
	assert.Empty(t, merged.MachineImages)
	assert.Nil(t, merged.MachineTypes, "the parent's absent list stays absent")
}

func TestMergeByKeyKeepsFirstPositionOfDuplicates(t *testing.T) {
	type kv struct{ k, v string }
	key := func(e kv) string { return e.k }
	got := mergeByKey([]kv{{"a", "1"}, {"b", "2"}, {"a", "3"}}, []kv{{"c", "4"}, {"b", "5"}}, key, nil, true)
	assert.Equal(t, []kv{{"a", "3"}, {"b", "5"}, {"c", "4"}}, got)
	assert.Equal(t, []kv{{"a", "1"}}, mergeByKey([]kv{{"a", "1"}}, []kv{{"z", "9"}}, key, nil, false), "no additions where not allowed")
}
