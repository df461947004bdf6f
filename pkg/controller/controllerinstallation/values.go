package controllerinstallation

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
)

// Identity is what gardenlet knows about itself and the garden, injected into every chart.
type Identity struct {
	GardenerVersion       string
	GardenClusterIdentity string
	FeatureGates          map[string]bool
}

// PodSecurityEnforceLabel is Pod Security Admission's enforce level label on namespaces.
const PodSecurityEnforceLabel = "pod-security.kubernetes.io/enforce"

// NamespaceName is the seed namespace of a ControllerInstallation's release, Gardener's
// "extension-<installation name>".
func NamespaceName(ci *gardencorev1beta1.ControllerInstallation) string {
	return "extension-" + ci.Name
}

// InjectedValues are the values gardenlet mixes into the root of every chart it deploys to a
// seed (the spec's list): gardener.version, gardener.garden, gardener.seed and
// gardener.gardenlet.featureGates, as plain JSON values.
func InjectedValues(id Identity, seed *gardencorev1beta1.Seed) (map[string]any, error) {
	featureGates := id.FeatureGates
	if featureGates == nil {
		featureGates = map[string]bool{}
	}
	var (
		volumeProvider  string
		volumeProviders []gardencorev1beta1.SeedVolumeProvider
	)
	if seed.Spec.Volume != nil {
		volumeProviders = seed.Spec.Volume.Providers
		if len(volumeProviders) > 0 {
			volumeProvider = volumeProviders[0].Name
		}
	}
	// gardener-apiserver defaults scheduling.visible to true.
	visible := true
	if s := seed.Spec.Settings; s != nil && s.Scheduling != nil {
		visible = s.Scheduling.Visible
	}
	clusterIdentity := ""
	if seed.Status.ClusterIdentity != nil {
		clusterIdentity = *seed.Status.ClusterIdentity
	}
	seedValues := map[string]any{
		"name":            seed.Name,
		"clusterIdentity": clusterIdentity,
		"annotations":     seed.Annotations,
		"labels":          seed.Labels,
		"provider":        seed.Spec.Provider.Type,
		"region":          seed.Spec.Provider.Region,
		"volumeProvider":  volumeProvider,
		"volumeProviders": volumeProviders,
		"protected":       slices.ContainsFunc(seed.Spec.Taints, func(t gardencorev1beta1.SeedTaint) bool { return t.Key == gardencorev1beta1.SeedTaintProtected }),
		"visible":         visible,
		"taints":          seed.Spec.Taints,
		"networks":        seed.Spec.Networks,
		"blockCIDRs":      seed.Spec.Networks.BlockCIDRs,
		"spec":            seed.Spec,
	}
	if seed.Spec.Ingress != nil {
		seedValues["ingressDomain"] = seed.Spec.Ingress.Domain
	}
	return plainValues(map[string]any{"gardener": map[string]any{
		"version":   id.GardenerVersion,
		"garden":    map[string]any{"clusterIdentity": id.GardenClusterIdentity},
		"gardenlet": map[string]any{"featureGates": featureGates},
		"seed":      seedValues,
	}})
}

// plainValues turns typed API values into the JSON values Helm stores and templates see.
func plainValues(v map[string]any) (map[string]any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	return out, json.Unmarshal(raw, &out)
}

// MergeValues merges override into base, as Gardener's utils.MergeMaps does: maps merge
// recursively, anything else in override replaces what base has.
func MergeValues(base, override map[string]any) map[string]any {
	out := make(map[string]any, len(base)+len(override))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range override {
		if sub, ok := v.(map[string]any); ok {
			if existing, ok := out[k].(map[string]any); ok {
				out[k] = MergeValues(existing, sub)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// NamespaceMeta is the labels and annotations gardenlet keeps on a release's namespace.
type NamespaceMeta struct {
	Labels      map[string]string
	Annotations map[string]string
	// RemovedLabels are labels the namespace must not carry (a pod security level the
	// installation no longer asks for).
	RemovedLabels []string
}

// DesiredNamespace is Gardener's namespace metadata for the installation on seed: the extension
// role, the registration, the high-availability zones of the seed, and the pod security level
// the installation's annotation asks for.
func DesiredNamespace(ci *gardencorev1beta1.ControllerInstallation, registration string, seed *gardencorev1beta1.Seed) NamespaceMeta {
	ns := NamespaceMeta{
		Labels: map[string]string{
			v1beta1constants.GardenRole:                      v1beta1constants.GardenRoleExtension,
			v1beta1constants.LabelControllerRegistrationName: registration,
			resourcesv1alpha1.HighAvailabilityConfigConsider: "true",
		},
		Annotations: map[string]string{resourcesv1alpha1.HighAvailabilityConfigZones: strings.Join(seed.Spec.Provider.Zones, ",")},
	}
	if level, ok := ci.Annotations[v1beta1constants.AnnotationPodSecurityEnforce]; ok {
		ns.Labels[PodSecurityEnforceLabel] = level
	} else {
		ns.RemovedLabels = []string{PodSecurityEnforceLabel}
	}
	return ns
}

// Checksum identifies what a release was applied with: the chart's digest, the values and the
// namespace's metadata. It is kept as a label on the release's record, so that a reconcile
// that finds it unchanged (and the release deployed) touches nothing.
func Checksum(chartDigest string, values map[string]any, ns NamespaceMeta) (string, error) {
	raw, err := json.Marshal(struct {
		Chart     string         `json:"chart"`
		Values    map[string]any `json:"values"`
		Namespace NamespaceMeta  `json:"namespace"`
	}{chartDigest, values, ns})
	if err != nil {
		return "", fmt.Errorf("hashing the release's inputs: %w", err)
	}
	sum := sha256.Sum256(raw)
	// A label value holds at most 63 characters: 128 bits of the hash.
	return hex.EncodeToString(sum[:16]), nil
}

// ArchiveDigest identifies a rawChart the way OCI identifies an artifact.
func ArchiveDigest(archive []byte) string {
	sum := sha256.Sum256(archive)
	return "sha256:" + hex.EncodeToString(sum[:])
}
