package maintenance

import (
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var now = time.Date(2026, time.May, 4, 22, 10, 0, 0, time.UTC)

// The lifecycle classifications a version can have at now.
func supported(v string) gardencorev1beta1.ExpirableVersion {
	return gardencorev1beta1.ExpirableVersion{Version: v}
}

func classified(v string, c gardencorev1beta1.VersionClassification) gardencorev1beta1.ExpirableVersion {
	return gardencorev1beta1.ExpirableVersion{Version: v, Classification: &c}
}

func preview(v string) gardencorev1beta1.ExpirableVersion {
	return classified(v, gardencorev1beta1.ClassificationPreview)
}

func deprecated(v string) gardencorev1beta1.ExpirableVersion {
	return classified(v, gardencorev1beta1.ClassificationDeprecated)
}

func expired(v string) gardencorev1beta1.ExpirableVersion {
	return gardencorev1beta1.ExpirableVersion{Version: v, ExpirationDate: &metav1.Time{Time: now.Add(-time.Hour)}}
}

// expiringLater is supported now and expires after now (lifecycle stages).
func expiringLater(v string) gardencorev1beta1.ExpirableVersion {
	return gardencorev1beta1.ExpirableVersion{Version: v, Lifecycle: []gardencorev1beta1.LifecycleStage{
		{Classification: gardencorev1beta1.ClassificationSupported},
		{Classification: gardencorev1beta1.ClassificationExpired, StartTime: &metav1.Time{Time: now.Add(time.Hour)}},
	}}
}

func TestVersionPicks(t *testing.T) {
	p := Versions{Now: now}
	for _, tc := range []struct {
		name     string
		pick     pickFunc
		versions []gardencorev1beta1.ExpirableVersion
		current  string
		want     string // empty: none found
	}{
		{name: "patch: latest patch of the minor", pick: p.LatestPatch, current: "1.30.1",
			versions: []gardencorev1beta1.ExpirableVersion{supported("1.30.1"), supported("1.30.3"), supported("1.30.5"), supported("1.31.0")}, want: "1.30.5"},
		{name: "patch: never a preview", pick: p.LatestPatch, current: "1.30.1",
			versions: []gardencorev1beta1.ExpirableVersion{supported("1.30.1"), supported("1.30.3"), preview("1.30.6")}, want: "1.30.3"},
		{name: "patch: never an expired version", pick: p.LatestPatch, current: "1.30.1",
			versions: []gardencorev1beta1.ExpirableVersion{supported("1.30.1"), supported("1.30.3"), expired("1.30.6")}, want: "1.30.3"},
		{name: "patch: a supported version rather than a later deprecated one", pick: p.LatestPatch, current: "1.30.1",
			versions: []gardencorev1beta1.ExpirableVersion{supported("1.30.1"), supported("1.30.3"), deprecated("1.30.6")}, want: "1.30.3"},
		{name: "patch: a deprecated version when it is the only higher one", pick: p.LatestPatch, current: "1.30.1",
			versions: []gardencorev1beta1.ExpirableVersion{supported("1.30.1"), deprecated("1.30.2"), deprecated("1.30.6")}, want: "1.30.6"},
		{name: "patch: a version that expires later is still supported", pick: p.LatestPatch, current: "1.30.1",
			versions: []gardencorev1beta1.ExpirableVersion{supported("1.30.1"), expiringLater("1.30.7")}, want: "1.30.7"},
		{name: "patch: nothing higher", pick: p.LatestPatch, current: "1.30.5",
			versions: []gardencorev1beta1.ExpirableVersion{supported("1.30.1"), supported("1.30.5"), supported("1.31.0")}},

		{name: "minor: the latest patch first", pick: p.LatestMinor, current: "1.2.0",
			versions: []gardencorev1beta1.ExpirableVersion{supported("1.2.0"), supported("1.2.1"), supported("1.4.0"), supported("2.0.0")}, want: "1.2.1"},
		{name: "minor: then the latest of the major", pick: p.LatestMinor, current: "1.2.1",
			versions: []gardencorev1beta1.ExpirableVersion{supported("1.2.1"), supported("1.3.0"), supported("1.4.0"), supported("2.0.0")}, want: "1.4.0"},

		{name: "major: the latest patch first", pick: p.LatestOverall, current: "1.2.0",
			versions: []gardencorev1beta1.ExpirableVersion{supported("1.2.0"), supported("1.2.1"), supported("2.0.0")}, want: "1.2.1"},
		{name: "major: then the latest overall", pick: p.LatestOverall, current: "1.2.1",
			versions: []gardencorev1beta1.ExpirableVersion{supported("1.2.1"), supported("1.3.0"), supported("2.0.0"), preview("3.0.0")}, want: "2.0.0"},

		{name: "forced Kubernetes update: the latest of the consecutive minor", pick: p.ForceToConsecutiveMinor, current: "1.29.9",
			versions: []gardencorev1beta1.ExpirableVersion{expired("1.29.9"), supported("1.30.1"), supported("1.30.5"), supported("1.31.2")}, want: "1.30.5"},
		{name: "forced Kubernetes update: an expired version of the consecutive minor if it has nothing else", pick: p.ForceToConsecutiveMinor, current: "1.29.9",
			versions: []gardencorev1beta1.ExpirableVersion{expired("1.29.9"), expired("1.30.1"), expired("1.30.2"), supported("1.31.2")}, want: "1.30.2"},
		{name: "forced Kubernetes update: never skips a minor", pick: p.ForceToConsecutiveMinor, current: "1.29.9",
			versions: []gardencorev1beta1.ExpirableVersion{expired("1.29.9"), supported("1.31.2")}},
		{name: "forced Kubernetes update: never a preview", pick: p.ForceToConsecutiveMinor, current: "1.29.9",
			versions: []gardencorev1beta1.ExpirableVersion{expired("1.29.9"), preview("1.30.0")}},

		{name: "forced image update (patch strategy): the latest of the next higher minor", pick: p.ForceToNextHigherMinor, current: "1.1.0",
			versions: []gardencorev1beta1.ExpirableVersion{expired("1.1.0"), supported("1.3.0"), supported("1.3.2"), supported("1.4.0"), supported("2.0.0")}, want: "1.3.2"},
		{name: "forced image update (patch strategy): an expired next minor rather than skipping it", pick: p.ForceToNextHigherMinor, current: "1.1.0",
			versions: []gardencorev1beta1.ExpirableVersion{expired("1.1.0"), expired("1.2.0"), expired("1.2.1"), supported("1.4.1")}, want: "1.2.1"},
		{name: "forced image update (patch strategy): no higher minor of the major", pick: p.ForceToNextHigherMinor, current: "1.1.0",
			versions: []gardencorev1beta1.ExpirableVersion{expired("1.1.0"), supported("2.2.0")}},

		{name: "forced image update (minor strategy): the latest of the next higher major", pick: p.ForceToNextHigherMajor, current: "576.3.0",
			versions: []gardencorev1beta1.ExpirableVersion{expired("576.3.0"), supported("577.1.0"), supported("577.2.0"), supported("578.0.0")}, want: "577.2.0"},
		{name: "forced image update (minor strategy): no higher major", pick: p.ForceToNextHigherMajor, current: "576.3.0",
			versions: []gardencorev1beta1.ExpirableVersion{expired("576.3.0"), supported("576.4.0")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			found, v, err := tc.pick(tc.versions, tc.current)
			require.NoError(t, err)
			assert.Equal(t, tc.want != "", found)
			assert.Equal(t, tc.want, v)
		})
	}
}

func TestTarget(t *testing.T) {
	p := Versions{Now: now}
	versions := []gardencorev1beta1.ExpirableVersion{expired("1.29.8"), expired("1.29.9"), supported("1.30.1")}

	v, err := Target(versions, "1.29.8", p.LatestPatch, p.ForceToConsecutiveMinor, false)
	require.NoError(t, err)
	assert.Equal(t, "", v, "an expired patch is no auto-update target, and a version that is not expired is not forced")

	v, err = Target(versions, "1.29.8", p.LatestPatch, p.ForceToConsecutiveMinor, true)
	require.NoError(t, err)
	assert.Equal(t, "1.30.1", v, "an expired version is forced to the next minor")

	_, err = Target([]gardencorev1beta1.ExpirableVersion{expired("1.29.9")}, "1.29.9", p.LatestPatch, p.ForceToConsecutiveMinor, true)
	assert.EqualError(t, err, `cannot perform forceful update of expired version "1.29.9". No suitable version found in CloudProfile - this is most likely a misconfiguration of the CloudProfile`)

	_, err = Target(versions, "not-a-version", p.LatestPatch, p.ForceToConsecutiveMinor, false)
	assert.Error(t, err)
}
