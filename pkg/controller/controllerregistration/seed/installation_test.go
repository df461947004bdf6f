package seed

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
)

func TestInstallationName(t *testing.T) {
	name := InstallationName("provider-aws", "seed-a")
	assert.Regexp(t, `^provider-aws-[bcdfghjklmnpqrstvwxz2456789]{5}$`, name, "generateName's shape")
	assert.Equal(t, name, InstallationName("provider-aws", "seed-a"), "the same for the same seed and registration")
	assert.NotEqual(t, name, InstallationName("provider-aws", "seed-b"))

	long := InstallationName("a-registration-with-a-very-long-name-that-fills-the-dns-label-limit", "seed")
	assert.Len(t, long, 63)
	assert.Empty(t, validation.IsDNS1123Subdomain(long))

	names := InstallationNames("provider-aws", "seed-a")
	assert.Equal(t, name, names[0])
	assert.Len(t, names, 3)
	for _, n := range names {
		assert.Regexp(t, `^provider-aws-[bcdfghjklmnpqrstvwxz2456789]{5}$`, n)
	}
	assert.NotEqual(t, names[0], names[1])
	assert.NotEqual(t, names[1], names[2])
	assert.Equal(t, names, InstallationNames("provider-aws", "seed-a"), "deterministic: two reconciles meeting a taken name go on to the same next one")
}

func TestHashMapIsGardenersHashForMap(t *testing.T) {
	h := func(s string) string { sum := sha256.Sum256([]byte(s)); return hex.EncodeToString(sum[:]) }
	assert.Equal(t, h(""), hashMap(map[string]any{}))
	// Keys sorted; strings and booleans hashed, maps recursively; numbers and lists ignored.
	assert.Equal(t, h(h("x")+h("true")+h(h("y"))), hashMap(map[string]any{
		"b": true, "a": "x", "c": map[string]any{"d": "y"}, "n": 1.0, "l": []any{"z"},
	}))
}

func TestDesiredInstallation(t *testing.T) {
	seed := testSeed()
	seed.ResourceVersion = "7"
	registration := &gardencorev1beta1.ControllerRegistration{ObjectMeta: metav1.ObjectMeta{Name: "r", ResourceVersion: "3",
		Annotations: map[string]string{"security.gardener.cloud/pod-security-enforce": "privileged"}}}
	deployment := &gardencorev1beta1.ControllerDeployment{ObjectMeta: metav1.ObjectMeta{Name: "d", ResourceVersion: "5"}, Type: "helm",
		ProviderConfig: runtime.RawExtension{Raw: []byte(`{"ociRepository":{"ref":"registry/chart:1.0.0"}}`)}}

	ci := &gardencorev1beta1.ControllerInstallation{}
	ci.Spec.DeploymentRef = nil
	DesiredInstallation(ci, seed, registration, deployment)
	assert.Equal(t, "r", ci.Spec.RegistrationRef.Name)
	assert.Equal(t, "3", ci.Spec.RegistrationRef.ResourceVersion)
	assert.Equal(t, "seed", ci.Spec.SeedRef.Name)
	assert.Equal(t, "7", ci.Spec.SeedRef.ResourceVersion)
	require.NotNil(t, ci.Spec.DeploymentRef)
	assert.Equal(t, "5", ci.Spec.DeploymentRef.ResourceVersion)
	assert.Equal(t, "privileged", ci.Annotations["security.gardener.cloud/pod-security-enforce"])
	assert.Len(t, ci.Labels[LabelDeploymentHash], 16)

	helmHash := ci.Labels[LabelDeploymentHash]
	deployment.ProviderConfig.Raw = []byte(`{"ociRepository":{"ref":"registry/chart:1.0.1"}}`)
	DesiredInstallation(ci, seed, registration, deployment)
	assert.NotEqual(t, helmHash, ci.Labels[LabelDeploymentHash], "a new chart is a new deployment hash")

	delete(registration.Annotations, "security.gardener.cloud/pod-security-enforce")
	seedHash := ci.Labels[LabelSeedSpecHash]
	seed.Spec.Provider.Region = "eu"
	DesiredInstallation(ci, seed, registration, nil)
	assert.NotContains(t, ci.Annotations, "security.gardener.cloud/pod-security-enforce", "removed with the registration's")
	assert.NotEqual(t, seedHash, ci.Labels[LabelSeedSpecHash])
	assert.Nil(t, ci.Spec.DeploymentRef)
}

func TestOnlyReferenceVersionsDiffer(t *testing.T) {
	seed, registration := testSeed(), &gardencorev1beta1.ControllerRegistration{ObjectMeta: metav1.ObjectMeta{Name: "r", ResourceVersion: "1"}}
	previous := &gardencorev1beta1.ControllerInstallation{}
	DesiredInstallation(previous, seed, registration, nil)

	seed.ResourceVersion = "2"
	desired := previous.DeepCopy()
	DesiredInstallation(desired, seed, registration, nil)
	assert.True(t, OnlyReferenceVersionsDiffer(desired, previous), "a seed status update")

	seed.Spec.Provider.Region = "elsewhere"
	DesiredInstallation(desired, seed, registration, nil)
	assert.False(t, OnlyReferenceVersionsDiffer(desired, previous), "the seed's spec changed too")
}
