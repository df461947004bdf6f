package controllerinstallation

import (
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/release"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/gardener-knative/gardener-knative/pkg/function"
)

func testSeed() *gardencorev1beta1.Seed {
	s := &gardencorev1beta1.Seed{ObjectMeta: metav1.ObjectMeta{Name: "local", Labels: map[string]string{"l": "v"}, Annotations: map[string]string{"a": "v"}}}
	s.Spec.Provider = gardencorev1beta1.SeedProvider{Type: "local", Region: "eu", Zones: []string{"z1", "z2"}}
	s.Spec.Networks = gardencorev1beta1.SeedNetworks{Pods: "10.1.0.0/16", BlockCIDRs: []string{"169.254.0.0/16"}}
	s.Spec.Taints = []gardencorev1beta1.SeedTaint{{Key: gardencorev1beta1.SeedTaintProtected}}
	s.Spec.Volume = &gardencorev1beta1.SeedVolume{Providers: []gardencorev1beta1.SeedVolumeProvider{{Purpose: "etcd", Name: "fast"}, {Purpose: "x", Name: "slow"}}}
	s.Spec.Settings = &gardencorev1beta1.SeedSettings{Scheduling: &gardencorev1beta1.SeedSettingScheduling{Visible: false}}
	s.Status.ClusterIdentity = ptr.To("seed-id")
	return s
}

func TestInjectedValues(t *testing.T) {
	v, err := InjectedValues(Identity{GardenerVersion: "v1.150.0", GardenClusterIdentity: "garden-id", FeatureGates: map[string]bool{"Foo": true}}, testSeed())
	require.NoError(t, err)
	g := v["gardener"].(map[string]any)
	assert.Equal(t, "v1.150.0", g["version"])
	assert.Equal(t, map[string]any{"clusterIdentity": "garden-id"}, g["garden"])
	assert.Equal(t, map[string]any{"featureGates": map[string]any{"Foo": true}}, g["gardenlet"])
	s := g["seed"].(map[string]any)
	assert.Equal(t, "local", s["name"])
	assert.Equal(t, "seed-id", s["clusterIdentity"])
	assert.Equal(t, map[string]any{"l": "v"}, s["labels"])
	assert.Equal(t, map[string]any{"a": "v"}, s["annotations"])
	assert.Equal(t, "local", s["provider"])
	assert.Equal(t, "eu", s["region"])
	assert.Equal(t, "fast", s["volumeProvider"])
	assert.Len(t, s["volumeProviders"], 2)
	assert.Equal(t, true, s["protected"])
	assert.Equal(t, false, s["visible"])
	assert.Equal(t, []any{"169.254.0.0/16"}, s["blockCIDRs"])
	assert.NotContains(t, s, "ingressDomain", "only with an ingress")
	assert.Contains(t, s, "spec")
	assert.Contains(t, s, "networks")
	assert.Contains(t, s, "taints")
}

func TestInjectedValuesDefaults(t *testing.T) {
	s := &gardencorev1beta1.Seed{ObjectMeta: metav1.ObjectMeta{Name: "bare"}}
	s.Spec.Ingress = &gardencorev1beta1.Ingress{Domain: "in.example.com"}
	v, err := InjectedValues(Identity{}, s)
	require.NoError(t, err)
	g := v["gardener"].(map[string]any)
	assert.Equal(t, map[string]any{"featureGates": map[string]any{}}, g["gardenlet"])
	seed := g["seed"].(map[string]any)
	assert.Equal(t, true, seed["visible"], "gardener-apiserver's default")
	assert.Equal(t, false, seed["protected"])
	assert.Equal(t, "", seed["volumeProvider"])
	assert.Equal(t, "in.example.com", seed["ingressDomain"])
}

func TestMergeValues(t *testing.T) {
	base := map[string]any{"a": 1, "m": map[string]any{"x": 1, "y": 2}, "gardener": "user's"}
	override := map[string]any{"m": map[string]any{"y": 3, "z": 4}, "gardener": map[string]any{"version": "v"}}
	assert.Equal(t, map[string]any{
		"a":        1,
		"m":        map[string]any{"x": 1, "y": 3, "z": 4},
		"gardener": map[string]any{"version": "v"},
	}, MergeValues(base, override))
	assert.Equal(t, map[string]any{"k": "v"}, MergeValues(nil, map[string]any{"k": "v"}))
	assert.Equal(t, map[string]any{"x": 1, "y": 2}, base["m"], "the inputs stay as they were")
}

func TestDesiredNamespace(t *testing.T) {
	ci := &gardencorev1beta1.ControllerInstallation{ObjectMeta: metav1.ObjectMeta{Name: "ci"}}
	ns := DesiredNamespace(ci, "provider-local", testSeed())
	assert.Equal(t, map[string]string{
		"gardener.cloud/role":                                        "extension",
		"controllerregistration.core.gardener.cloud/name":            "provider-local",
		"high-availability-config.resources.gardener.cloud/consider": "true",
	}, ns.Labels)
	assert.Equal(t, map[string]string{"high-availability-config.resources.gardener.cloud/zones": "z1,z2"}, ns.Annotations)
	assert.Equal(t, []string{PodSecurityEnforceLabel}, ns.RemovedLabels)

	ci.Annotations = map[string]string{"security.gardener.cloud/pod-security-enforce": "baseline"}
	ns = DesiredNamespace(ci, "provider-local", testSeed())
	assert.Equal(t, "baseline", ns.Labels[PodSecurityEnforceLabel])
	assert.Empty(t, ns.RemovedLabels)
	assert.Equal(t, "extension-ci", NamespaceName(ci))
}

func TestChecksum(t *testing.T) {
	ns := NamespaceMeta{Labels: map[string]string{"a": "b"}}
	base, err := Checksum("sha256:1", map[string]any{"k": "v", "m": map[string]any{"x": 1}}, ns)
	require.NoError(t, err)
	assert.Len(t, base, 32, "fits a label value")
	same, _ := Checksum("sha256:1", map[string]any{"m": map[string]any{"x": 1}, "k": "v"}, ns)
	assert.Equal(t, base, same, "independent of map order")
	for name, other := range map[string]func() (string, error){
		"chart": func() (string, error) {
			return Checksum("sha256:2", map[string]any{"k": "v", "m": map[string]any{"x": 1}}, ns)
		},
		"values": func() (string, error) {
			return Checksum("sha256:1", map[string]any{"k": "w", "m": map[string]any{"x": 1}}, ns)
		},
		"namespace": func() (string, error) {
			return Checksum("sha256:1", map[string]any{"k": "v", "m": map[string]any{"x": 1}}, NamespaceMeta{})
		},
	} {
		sum, err := other()
		require.NoError(t, err)
		assert.NotEqual(t, base, sum, name)
	}
	assert.Equal(t, "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824", ArchiveDigest([]byte("hello")))
}

func TestLatestRelease(t *testing.T) {
	record := func(version, status, checksum, modified string) metav1.PartialObjectMetadata {
		return metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
			"owner": "helm", "name": "r", "version": version, "status": status, LabelChecksum: checksum, "createdAt": "100", "modifiedAt": modified,
		}}}
	}
	assert.Equal(t, ReleaseState{}, LatestRelease(nil))
	got := LatestRelease([]metav1.PartialObjectMetadata{
		record("1", "superseded", "old", "150"),
		record("3", "pending-upgrade", "new", ""),
		record("2", "deployed", "mid", "200"),
		record("x", "deployed", "garbage", "300"),
	})
	assert.Equal(t, ReleaseState{Found: true, Revision: 3, Status: release.StatusPendingUpgrade, Checksum: "new", Since: time.Unix(100, 0)}, got)
}

func TestReleaseConditions(t *testing.T) {
	type want struct {
		t      gardencorev1beta1.ConditionType
		status gardencorev1beta1.ConditionStatus
		reason string
	}
	for _, tc := range []struct {
		state ReleaseState
		want  []want
	}{
		{ReleaseState{}, []want{{"Installed", "False", "InstallationPending"}}},
		{ReleaseState{Found: true, Revision: 1, Status: release.StatusDeployed}, []want{
			{"Installed", "True", "InstallationSuccessful"}, {"Healthy", "True", "ControllerHealthy"}, {"Progressing", "False", "ControllerRolledOut"}}},
		{ReleaseState{Found: true, Revision: 2, Status: release.StatusFailed, Description: "boom"}, []want{
			{"Installed", "False", "InstallationFailed"}, {"Healthy", "False", "ControllerNotHealthy"}, {"Progressing", "False", "ControllerNotRolledOut"}}},
		{ReleaseState{Found: true, Revision: 2, Status: release.StatusPendingUpgrade}, []want{
			{"Installed", "False", "InstallationPending"}, {"Healthy", "False", "ControllerNotHealthy"}, {"Progressing", "True", "ControllerNotRolledOut"}}},
	} {
		var got []want
		for _, u := range releaseConditions(tc.state, "r") {
			got = append(got, want{u.Type, u.Status, u.Reason})
		}
		assert.Equal(t, tc.want, got, "%+v", tc.state)
	}
	failed := releaseConditions(ReleaseState{Found: true, Revision: 2, Status: release.StatusFailed, Description: "boom"}, "r")
	assert.Equal(t, `Helm release "r" revision 2 failed: boom`, failed[0].Message)
}

func TestPredicates(t *testing.T) {
	ci := func(seed, deployment string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}
		if seed != "" {
			_ = unstructured.SetNestedField(u.Object, seed, "spec", "seedRef", "name")
		}
		if deployment != "" {
			_ = unstructured.SetNestedField(u.Object, deployment, "spec", "deploymentRef", "name")
		}
		return u
	}
	assert.True(t, InstallationPredicate(function.Event{Object: ci("s", "d")}))
	assert.False(t, InstallationPredicate(function.Event{Object: ci("", "d")}), "a shoot's installation")
	assert.False(t, InstallationPredicate(function.Event{Object: ci("s", "")}), "no deployment")
	assert.False(t, InstallationPredicate(function.Event{Object: ci("s", "d"), Deleted: true}))

	deployment := func(typ string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"type": typ}}
	}
	assert.True(t, DeploymentPredicate(function.Event{Object: deployment("helm")}))
	assert.False(t, DeploymentPredicate(function.Event{Object: deployment("other")}))
	assert.False(t, DeploymentPredicate(function.Event{Object: deployment("helm"), Deleted: true}))
}
