package seed

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	gardencorev1 "github.com/gardener/gardener/pkg/apis/core/v1"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The labels Gardener puts on ControllerInstallations (like pod-template-hash on Pods): a change
// of the seed's spec, the registration's spec or the deployment changes the installation, which
// makes gardenlet deploy the extension again.
const (
	LabelSeedSpecHash         = "seed-spec-hash"
	LabelRegistrationSpecHash = "registration-spec-hash"
	LabelDeploymentHash       = "deployment-hash"
)

// InstallationName is the name the seed's installation of a registration gets:
// "<registration>-<5 characters>", the shape Gardener's generateName gives it, but with the
// suffix derived from seed and registration instead of random. Two reconciles of one seed
// running at once (an event and a sweep) then cannot both create one: the second create fails
// with AlreadyExists and is retried from live state, which finds the first's.
func InstallationName(registration, seed string) string {
	return InstallationNames(registration, seed)[0]
}

// installationNameAttempts is how many names InstallationNames offers: the suffix is short, so
// another seed's installation may hold the first name.
const installationNameAttempts = 3

// InstallationNames are the names the installation may get, in order: InstallationName, then
// names of further deterministic suffixes for when another seed's installation holds the name.
// Two reconciles that meet the same taken name both go on to the same next one, so that, as with
// the first, only one of them can create it (where generateName would give each its own).
func InstallationNames(registration, seed string) []string {
	const (
		// What the API server's generateName appends, and from which alphabet.
		suffixLength = 5
		alphabet     = "bcdfghjklmnpqrstvwxz2456789"
		maxBase      = 63 - suffixLength
	)
	base := registration + "-"
	if len(base) > maxBase {
		base = base[:maxBase]
	}
	names := make([]string, 0, installationNameAttempts)
	for attempt := range installationNameAttempts {
		input := seed + "/" + registration
		if attempt > 0 {
			input += "/" + strconv.Itoa(attempt)
		}
		sum := sha256.Sum256([]byte(input))
		suffix := make([]byte, suffixLength)
		for i := range suffix {
			suffix[i] = alphabet[int(sum[i])%len(alphabet)]
		}
		names = append(names, base+string(suffix))
	}
	return names
}

// DesiredInstallation mutates installation (new or existing) into what Gardener's seed
// reconciler makes of it for seed, registration and deployment (nil when the registration names
// none): the hash labels, the pod-security-enforce annotation taken over from the registration,
// and the spec referencing all three at the versions read.
func DesiredInstallation(installation *gardencorev1beta1.ControllerInstallation, seed *gardencorev1beta1.Seed, registration *gardencorev1beta1.ControllerRegistration, deployment *gardencorev1beta1.ControllerDeployment) {
	metav1.SetMetaDataLabel(&installation.ObjectMeta, LabelSeedSpecHash, specHash(seed.Spec))
	metav1.SetMetaDataLabel(&installation.ObjectMeta, LabelRegistrationSpecHash, specHash(registration.Spec))
	if deployment != nil {
		metav1.SetMetaDataLabel(&installation.ObjectMeta, LabelDeploymentHash, specHash(deploymentHashFields(deployment)))
	}
	if enforce, ok := registration.Annotations[v1beta1constants.AnnotationPodSecurityEnforce]; ok {
		metav1.SetMetaDataAnnotation(&installation.ObjectMeta, v1beta1constants.AnnotationPodSecurityEnforce, enforce)
	} else {
		delete(installation.Annotations, v1beta1constants.AnnotationPodSecurityEnforce)
	}
	spec := gardencorev1beta1.ControllerInstallationSpec{
		RegistrationRef: corev1.ObjectReference{Name: registration.Name, ResourceVersion: registration.ResourceVersion},
		SeedRef:         &corev1.ObjectReference{Name: seed.Name, ResourceVersion: seed.ResourceVersion},
	}
	if deployment != nil {
		spec.DeploymentRef = &corev1.ObjectReference{Name: deployment.Name, ResourceVersion: deployment.ResourceVersion}
	}
	installation.Spec = spec
}

// deploymentHashFields are the fields of a ControllerDeployment that Gardener hashes, in the
// core/v1 form it reads them in: a helm deployment's chart configuration as "helm", any other
// type as the migration annotations' "type" and "providerConfig".
func deploymentHashFields(d *gardencorev1beta1.ControllerDeployment) map[string]any {
	fields := map[string]any{"type": "", "providerConfig": "", "helm": nil}
	if d.Type == "helm" {
		helm := &gardencorev1.HelmControllerDeployment{}
		if len(d.ProviderConfig.Raw) > 0 && json.Unmarshal(d.ProviderConfig.Raw, helm) == nil {
			fields["helm"] = helm
		}
		return fields
	}
	fields["type"] = d.Type
	if len(d.ProviderConfig.Raw) > 0 {
		fields["providerConfig"] = string(d.ProviderConfig.Raw)
	}
	return fields
}

// specHash is Gardener's label hash of an object: its JSON as a map, hashed by hashMap, cut to
// 16 hex characters.
func specHash(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return ""
	}
	return hashMap(m)[:16]
}

// hashMap hashes a JSON map the way Gardener's utils.HashForMap does, so that the labels carry
// the values Gardener's controller would write: per key in sorted order, the SHA-256 of strings
// and booleans and the hash of nested maps are concatenated and hashed again. Numbers and lists
// of JSON values do not contribute (Gardener's function ignores the types encoding/json decodes
// them to).
func hashMap(m map[string]any) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		switch v := m[k].(type) {
		case string:
			b.WriteString(sha256Hex(v))
		case bool:
			b.WriteString(sha256Hex(strconv.FormatBool(v)))
		case map[string]any:
			b.WriteString(hashMap(v))
		}
	}
	return sha256Hex(b.String())
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// OnlyReferenceVersionsDiffer says whether desired differs from previous in nothing but the
// resourceVersions of its references. A sweep then leaves the installation as it is: every
// status update of a Seed gives it a new resourceVersion, and rewriting that into every
// installation on each sweep would change their specs, and make gardenlet deploy the extensions
// again, every few minutes. Events write the versions read, as Gardener does; so do sweeps when
// anything else changes.
func OnlyReferenceVersionsDiffer(desired, previous *gardencorev1beta1.ControllerInstallation) bool {
	withPreviousVersions := desired.DeepCopy()
	keep := func(ref, old *corev1.ObjectReference) {
		if ref != nil && old != nil && ref.Name == old.Name {
			ref.ResourceVersion = old.ResourceVersion
		}
	}
	keep(&withPreviousVersions.Spec.RegistrationRef, &previous.Spec.RegistrationRef)
	keep(withPreviousVersions.Spec.SeedRef, previous.Spec.SeedRef)
	keep(withPreviousVersions.Spec.DeploymentRef, previous.Spec.DeploymentRef)
	return apiequality.Semantic.DeepEqual(withPreviousVersions, previous)
}
