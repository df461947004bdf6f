package maintenance

import (
	"testing"

	"github.com/Masterminds/semver/v3"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func imageVersion(v gardencorev1beta1.ExpirableVersion, architectures ...string) gardencorev1beta1.MachineImageVersion {
	if len(architectures) == 0 {
		architectures = []string{"amd64"}
	}
	return gardencorev1beta1.MachineImageVersion{
		ExpirableVersion: v,
		Architectures:    architectures,
		CRI:              []gardencorev1beta1.CRI{{Name: gardencorev1beta1.CRINameContainerD}},
	}
}

func profile() *gardencorev1beta1.CloudProfileSpec {
	return &gardencorev1beta1.CloudProfileSpec{
		Kubernetes: gardencorev1beta1.KubernetesSettings{Versions: []gardencorev1beta1.ExpirableVersion{
			expired("1.29.9"), supported("1.30.1"), supported("1.30.5"), preview("1.30.6"), supported("1.31.2"),
		}},
		MachineTypes: []gardencorev1beta1.MachineType{{Name: "m5.large"}},
		MachineImages: []gardencorev1beta1.MachineImage{{
			Name:           "gardenlinux",
			UpdateStrategy: ptr.To(gardencorev1beta1.UpdateStrategyPatch),
			Versions: []gardencorev1beta1.MachineImageVersion{
				imageVersion(expired("1592.1.0")), imageVersion(supported("1592.2.0")), imageVersion(supported("1592.3.0"), "arm64"),
				imageVersion(supported("1877.1.0")), imageVersion(supported("1877.4.0")),
			},
		}},
	}
}

func worker(name, imageVersion string) gardencorev1beta1.Worker {
	return gardencorev1beta1.Worker{Name: name, Machine: gardencorev1beta1.Machine{
		Type:  "m5.large",
		Image: &gardencorev1beta1.ShootMachineImage{Name: "gardenlinux", Version: ptr.To(imageVersion)},
	}}
}

func shootWith(version string, autoK8s, autoImages bool, workers ...gardencorev1beta1.Worker) *gardencorev1beta1.Shoot {
	return &gardencorev1beta1.Shoot{
		ObjectMeta: metav1.ObjectMeta{Name: "s", CreationTimestamp: metav1.Time{Time: now.Add(-30 * 24 * time.Hour)}},
		Spec: gardencorev1beta1.ShootSpec{
			Kubernetes:  gardencorev1beta1.Kubernetes{Version: version},
			Provider:    gardencorev1beta1.Provider{Workers: workers},
			Maintenance: &gardencorev1beta1.Maintenance{AutoUpdate: &gardencorev1beta1.MaintenanceAutoUpdate{KubernetesVersion: autoK8s, MachineImageVersion: ptr.To(autoImages)}},
		},
	}
}

func TestMaintainKubernetesVersion(t *testing.T) {
	for _, tc := range []struct {
		name        string
		version     string
		autoUpdate  bool
		want        string
		result      *UpdateResult
		description string
	}{{
		name: "auto-update to the latest patch, never to a preview", version: "1.30.1", autoUpdate: true, want: "1.30.5",
		result:      &UpdateResult{Description: `Updated Kubernetes version from "1.30.1" to "1.30.5"`, Reason: "Automatic update of Kubernetes version configured", Successful: true},
		description: `All maintenance operations successful. Control Plane: Updated Kubernetes version from "1.30.1" to "1.30.5". Reason: Automatic update of Kubernetes version configured`,
	}, {
		name: "no auto-update", version: "1.30.1", want: "1.30.1",
	}, {
		name: "already the latest patch", version: "1.30.5", autoUpdate: true, want: "1.30.5",
	}, {
		name: "expired: forced to the next minor without auto-update", version: "1.29.9", want: "1.30.5",
		result: &UpdateResult{Description: `Updated Kubernetes version from "1.29.9" to "1.30.5"`, Reason: "Kubernetes version expired - force update required", Successful: true},
	}, {
		name: "not in the CloudProfile: forced", version: "1.29.3", want: "1.30.5",
		result: &UpdateResult{Description: `Updated Kubernetes version from "1.29.3" to "1.30.5"`, Reason: "Version does not exist in CloudProfile", Successful: true},
	}, {
		name: "not in the CloudProfile and no consecutive minor: fails", version: "1.27.3", want: "1.27.3",
		result: &UpdateResult{
			Description: `could not determine higher suitable version than "1.27.3": cannot perform forceful update of expired version "1.27.3". No suitable version found in CloudProfile - this is most likely a misconfiguration of the CloudProfile`,
			Reason:      "Version does not exist in CloudProfile",
		},
		description: `(0/1) maintenance operations successful. Control Plane: Kubernetes version update failed. Reason for update: Version does not exist in CloudProfile`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			shoot := shootWith(tc.version, tc.autoUpdate, false)
			o, err := Maintain(shoot, profile(), "aws", now)
			require.NoError(t, err)
			assert.Equal(t, tc.want, shoot.Spec.Kubernetes.Version)
			assert.Equal(t, tc.result, o.ControlPlane)
			if tc.description != "" {
				description, _ := o.Messages()
				assert.Equal(t, tc.description, description)
			}
		})
	}
}

func TestMaintainWorkerKubernetesVersionNeverAboveControlPlane(t *testing.T) {
	pool := worker("pool", "1592.2.0")
	pool.Kubernetes = &gardencorev1beta1.WorkerKubernetes{Version: ptr.To("1.29.9")}
	shoot := shootWith("1.30.1", false, false, pool)
	o, err := Maintain(shoot, profile(), "aws", now)
	require.NoError(t, err)
	assert.Equal(t, "1.30.1", shoot.Spec.Kubernetes.Version)
	assert.Equal(t, "1.30.1", *shoot.Spec.Provider.Workers[0].Kubernetes.Version, "forced to 1.30.5, capped at the control plane's 1.30.1")
	require.Len(t, o.WorkerKubernetes, 1)
	assert.Equal(t, NamedResult{Name: "pool", UpdateResult: UpdateResult{
		Description: `Updated Kubernetes version from "1.29.9" to "1.30.1"`, Reason: "Kubernetes version expired - force update required", Successful: true,
	}}, o.WorkerKubernetes[0])
}

func TestMaintainMachineImages(t *testing.T) {
	for _, tc := range []struct {
		name       string
		version    string
		autoUpdate bool
		strategy   gardencorev1beta1.MachineImageUpdateStrategy
		arch       string
		want       string
		result     *UpdateResult
	}{{
		name: "patch strategy: latest patch of the minor, only of the pool's architecture", version: "1592.1.0", autoUpdate: true, strategy: gardencorev1beta1.UpdateStrategyPatch, want: "1592.2.0",
		result: &UpdateResult{Description: `Updated machine image "gardenlinux" from "1592.1.0" to "1592.2.0"`, Reason: "Machine image version expired - force update required (image update strategy: patch)", Successful: true},
	}, {
		name: "patch strategy on arm64: the amd64-only current version does not exist for the pool", version: "1592.2.0", autoUpdate: true, strategy: gardencorev1beta1.UpdateStrategyPatch, arch: "arm64",
		want: "1592.3.0", result: &UpdateResult{Description: `Updated machine image "gardenlinux" from "1592.2.0" to "1592.3.0"`, Reason: "Version does not exist in CloudProfile", Successful: true},
	}, {
		name: "minor strategy: nothing higher in the major for amd64", version: "1592.2.0", autoUpdate: true, strategy: gardencorev1beta1.UpdateStrategyMinor, want: "1592.2.0",
	}, {
		name: "major strategy: latest overall", version: "1592.2.0", autoUpdate: true, strategy: gardencorev1beta1.UpdateStrategyMajor, want: "1877.4.0",
		result: &UpdateResult{Description: `Updated machine image "gardenlinux" from "1592.2.0" to "1877.4.0"`, Reason: "Automatic update of the machine image version is configured (image update strategy: major)", Successful: true},
	}, {
		name: "no auto-update", version: "1592.2.0", strategy: gardencorev1beta1.UpdateStrategyMajor, want: "1592.2.0",
	}, {
		name: "patch strategy, expired: forced to the next higher minor", version: "1592.1.0", strategy: gardencorev1beta1.UpdateStrategyPatch, want: "1592.2.0",
		result: &UpdateResult{Description: `Updated machine image "gardenlinux" from "1592.1.0" to "1592.2.0"`, Reason: "Machine image version expired - force update required (image update strategy: patch)", Successful: true},
	}, {
		name: "minor strategy, not in the profile: forced to the next higher major", version: "1443.3.0", strategy: gardencorev1beta1.UpdateStrategyMinor, want: "1592.2.0",
		result: &UpdateResult{Description: `Updated machine image "gardenlinux" from "1443.3.0" to "1592.2.0"`, Reason: "Version does not exist in CloudProfile", Successful: true},
	}, {
		name: "major strategy, latest overall expired: nowhere to go", version: "2000.0.0", strategy: gardencorev1beta1.UpdateStrategyMajor, want: "2000.0.0",
		result: &UpdateResult{Description: `failed to update machine image "gardenlinux": failed to determine the target version for maintenance of machine image "gardenlinux" with strategy "major": failed to determine version for forceful update: either the machine image "gardenlinux" is reaching end of life and migration to another machine image is required or there is a misconfiguration in the CloudProfile. If it is the latter, make sure the machine image in the CloudProfile has at least one version that is not expired, not in preview and greater or equal to the current Shoot image version "2000.0.0"`, Reason: "Version does not exist in CloudProfile"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			p := profile()
			p.MachineImages[0].UpdateStrategy = ptr.To(tc.strategy)
			pool := worker("pool", tc.version)
			if tc.arch != "" {
				pool.Machine.Architecture = ptr.To(tc.arch)
			}
			shoot := shootWith("1.30.5", false, tc.autoUpdate, pool)
			o, err := Maintain(shoot, p, "aws", now)
			require.NoError(t, err)
			assert.Equal(t, tc.want, *shoot.Spec.Provider.Workers[0].Machine.Image.Version)
			if tc.result == nil {
				assert.Empty(t, o.WorkerImages)
				return
			}
			require.Len(t, o.WorkerImages, 1)
			assert.Equal(t, *tc.result, o.WorkerImages[0].UpdateResult)
		})
	}
}

func TestCandidateImageVersions(t *testing.T) {
	withCRI := func(v gardencorev1beta1.MachineImageVersion, cri ...gardencorev1beta1.CRI) gardencorev1beta1.MachineImageVersion {
		v.CRI = cri
		return v
	}
	constrained := imageVersion(supported("3.0.0"))
	constrained.KubeletVersionConstraint = ptr.To(">= 1.31")
	inPlace := imageVersion(supported("2.1.0"))
	inPlace.InPlaceUpdates = &gardencorev1beta1.InPlaceUpdates{Supported: true, MinVersionForUpdate: ptr.To("2.0.0")}
	current := imageVersion(supported("2.0.0"))
	current.InPlaceUpdates = &gardencorev1beta1.InPlaceUpdates{Supported: true}
	image := gardencorev1beta1.MachineImage{Name: "gardenlinux", Versions: []gardencorev1beta1.MachineImageVersion{
		current, inPlace, constrained, imageVersion(supported("2.2.0"), "arm64"),
		withCRI(imageVersion(supported("2.3.0")), gardencorev1beta1.CRI{Name: "docker"}),
		withCRI(imageVersion(supported("2.4.0")), gardencorev1beta1.CRI{Name: gardencorev1beta1.CRINameContainerD, ContainerRuntimes: []gardencorev1beta1.ContainerRuntime{{Type: "gvisor"}}}),
	}}
	versions := func(vs []gardencorev1beta1.MachineImageVersion) []string {
		var out []string
		for _, v := range vs {
			out = append(out, v.Version)
		}
		return out
	}
	kubelet130, kubelet131 := mustVersion(t, "1.30.5"), mustVersion(t, "1.31.2")
	pool := worker("pool", "2.0.0")
	machineType := &gardencorev1beta1.MachineType{Name: "m5.large"}

	assert.Equal(t, []string{"2.0.0", "2.1.0", "2.4.0"}, versions(candidateImageVersions(image, pool, kubelet130, machineType, nil)), "amd64, containerd, kubelet 1.30")
	assert.Equal(t, []string{"2.0.0", "2.1.0", "3.0.0", "2.4.0"}, versions(candidateImageVersions(image, pool, kubelet131, machineType, nil)), "kubelet 1.31 meets the constraint")

	gvisor := pool
	gvisor.CRI = &gardencorev1beta1.CRI{Name: gardencorev1beta1.CRINameContainerD, ContainerRuntimes: []gardencorev1beta1.ContainerRuntime{{Type: "gvisor"}}}
	assert.Equal(t, []string{"2.4.0"}, versions(candidateImageVersions(image, gvisor, kubelet130, machineType, nil)), "only versions with the pool's container runtimes")

	updateInPlace := pool
	updateInPlace.UpdateStrategy = ptr.To(gardencorev1beta1.AutoInPlaceUpdate)
	assert.Equal(t, []string{"2.0.0", "2.1.0"}, versions(candidateImageVersions(image, updateInPlace, kubelet130, machineType, nil)), "in place: the current version and those reachable from it")

	capabilities := []gardencorev1beta1.CapabilityDefinition{{Name: "architecture", Values: []string{"amd64", "arm64"}}, {Name: "gpu", Values: []string{"none", "nvidia"}}}
	flavored := gardencorev1beta1.MachineImage{Name: "gardenlinux", Versions: []gardencorev1beta1.MachineImageVersion{
		withCRI(gardencorev1beta1.MachineImageVersion{ExpirableVersion: supported("1.0.0"), CapabilityFlavors: []gardencorev1beta1.MachineImageFlavor{{Capabilities: gardencorev1beta1.Capabilities{"architecture": {"amd64"}, "gpu": {"nvidia"}}}}}, gardencorev1beta1.CRI{Name: gardencorev1beta1.CRINameContainerD}),
		withCRI(gardencorev1beta1.MachineImageVersion{ExpirableVersion: supported("1.1.0"), CapabilityFlavors: []gardencorev1beta1.MachineImageFlavor{{Capabilities: gardencorev1beta1.Capabilities{"architecture": {"amd64"}, "gpu": {"none"}}}}}, gardencorev1beta1.CRI{Name: gardencorev1beta1.CRINameContainerD}),
	}}
	gpuType := &gardencorev1beta1.MachineType{Name: "p3", Capabilities: gardencorev1beta1.Capabilities{"architecture": {"amd64"}, "gpu": {"nvidia"}}}
	assert.Equal(t, []string{"1.0.0"}, versions(candidateImageVersions(flavored, pool, kubelet130, gpuType, capabilities)), "only flavors the machine type's capabilities support")
}

func TestMaintainRemovesFieldsAForcedUpdateInvalidates(t *testing.T) {
	p := profile()
	p.Kubernetes.Versions = []gardencorev1beta1.ExpirableVersion{expired("1.34.5"), supported("1.35.1")}
	shoot := shootWith("1.34.5", false, false)
	shoot.Spec.Kubernetes.KubeAPIServer = &gardencorev1beta1.KubeAPIServerConfig{
		EnableAnonymousAuthentication: ptr.To(true),
		WatchCacheSizes:               &gardencorev1beta1.WatchCacheSizes{Default: ptr.To[int32](100)},
	}
	shoot.Spec.Kubernetes.KubeScheduler = &gardencorev1beta1.KubeSchedulerConfig{KubeMaxPDVols: ptr.To("30")}
	shoot.Spec.Addons = &gardencorev1beta1.Addons{}
	shoot.Spec.DNS = &gardencorev1beta1.DNS{Providers: []gardencorev1beta1.DNSProvider{{SecretName: ptr.To("dns")}}}

	o, err := Maintain(shoot, p, "aws", now)
	require.NoError(t, err)
	assert.Equal(t, "1.35.1", shoot.Spec.Kubernetes.Version)
	assert.Nil(t, shoot.Spec.Kubernetes.KubeAPIServer.EnableAnonymousAuthentication)
	assert.Nil(t, shoot.Spec.Kubernetes.KubeAPIServer.WatchCacheSizes.Default)
	assert.Nil(t, shoot.Spec.Kubernetes.KubeScheduler.KubeMaxPDVols)
	assert.Nil(t, shoot.Spec.Addons)
	assert.Nil(t, shoot.Spec.DNS.Providers[0].SecretName)
	assert.Len(t, o.Operations, 5)
	assert.Contains(t, o.Operations, ".spec.addons was removed. Reason: addons are not supported anymore for Kubernetes versions 1.35+")

	unchanged := shootWith("1.35.1", false, false)
	unchanged.Spec.Addons = &gardencorev1beta1.Addons{}
	p.Kubernetes.Versions = []gardencorev1beta1.ExpirableVersion{supported("1.35.1")}
	o, err = Maintain(unchanged, p, "aws", now)
	require.NoError(t, err)
	assert.Empty(t, o.Operations, "fields are only removed when the update crosses the version")
	assert.NotNil(t, unchanged.Spec.Addons)
}

func TestCredentialsRotations(t *testing.T) {
	week := &gardencorev1beta1.MaintenanceRotationConfig{RotationPeriod: &metav1.Duration{Duration: 7 * 24 * time.Hour}}
	shoot := shootWith("1.30.5", false, false, worker("pool", "1592.2.0"))
	shoot.Spec.Maintenance.AutoRotation = &gardencorev1beta1.MaintenanceAutoRotation{Credentials: &gardencorev1beta1.MaintenanceCredentialsAutoRotation{
		SSHKeypair: week, Observability: week, ETCDEncryptionKey: week,
	}}
	shoot.Status.Credentials = &gardencorev1beta1.ShootCredentials{Rotation: &gardencorev1beta1.ShootCredentialsRotation{
		Observability:     &gardencorev1beta1.ObservabilityRotation{LastCompletionTime: &metav1.Time{Time: now.Add(-24 * time.Hour)}},
		ETCDEncryptionKey: &gardencorev1beta1.ETCDEncryptionKeyRotation{Phase: gardencorev1beta1.RotationPreparing},
	}}
	results := credentialsRotations(shoot, now)
	assert.Equal(t, []NamedResult{
		{Name: "rotate-ssh-keypair", UpdateResult: UpdateResult{Description: "SSH keypair rotation started", Reason: "Automatic rotation of SSH keypair configured", Successful: true}},
		{Name: "rotate-etcd-encryption-key", UpdateResult: UpdateResult{Description: "Could not start ETCD encryption key rotation", Reason: "ETCD encryption key rotation is already in progress"}},
	}, results, "observability was rotated a day ago; the etcd key rotation is in progress")

	shoot.Spec.Hibernation = &gardencorev1beta1.Hibernation{Enabled: ptr.To(true)}
	shoot.Spec.Provider.Workers = nil
	assert.Empty(t, credentialsRotations(shoot, now), "no SSH without workers, no etcd key rotation while hibernated")
}

func TestMessages(t *testing.T) {
	o := Outcome{
		ControlPlane:     &UpdateResult{Description: `Updated Kubernetes version from "1.30.1" to "1.30.5"`, Reason: "Automatic update of Kubernetes version configured", Successful: true},
		WorkerImages:     []NamedResult{{Name: "a", UpdateResult: UpdateResult{Description: "boom", Reason: "Version does not exist in CloudProfile"}}},
		WorkerKubernetes: []NamedResult{{Name: "b", UpdateResult: UpdateResult{Description: "kaboom", Reason: "r"}}},
		Operations:       []string{`Added "reconcile;rotate-ssh-keypair" operation annotation`},
	}
	description, failureReason := o.Messages()
	assert.Equal(t, `(1/3) maintenance operations successful. Control Plane: Updated Kubernetes version from "1.30.1" to "1.30.5". Reason: Automatic update of Kubernetes version configured, `+
		`Worker pool "b": Kubernetes version maintenance failed. Reason for update: r, Worker pool "a": machine image version maintenance failed. Reason for update: Version does not exist in CloudProfile, `+
		`Added "reconcile;rotate-ssh-keypair" operation annotation`, description)
	assert.Equal(t, `Worker pool "b": Kubernetes maintenance failure due to: kaboom, Worker pool "a": boom`, failureReason)

	description, failureReason = Outcome{Operations: []string{"x"}}.Messages()
	assert.Equal(t, "All maintenance operations successful. x", description)
	assert.Empty(t, failureReason)
	assert.False(t, Outcome{}.RequiresStatus())
}

func TestSetOperation(t *testing.T) {
	succeeded := &gardencorev1beta1.LastOperation{State: gardencorev1beta1.LastOperationStateSucceeded}
	failed := &gardencorev1beta1.LastOperation{State: gardencorev1beta1.LastOperationStateFailed}
	ssh := []NamedResult{{Name: "rotate-ssh-keypair", UpdateResult: UpdateResult{Successful: true}}, {Name: "rotate-etcd-encryption-key", UpdateResult: UpdateResult{Successful: false}}}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		last        *gardencorev1beta1.LastOperation
		credentials []NamedResult
		want        map[string]string
		operation   string
	}{{
		name: "a new Shoot: the maintain request is consumed, nothing else", annotations: map[string]string{"gardener.cloud/operation": "maintain"},
		want: map[string]string{},
	}, {
		name: "reconcile", annotations: map[string]string{"gardener.cloud/operation": "maintain"}, last: succeeded,
		want: map[string]string{"gardener.cloud/operation": "reconcile"},
	}, {
		name: "the operations asked for in maintenance, and due rotations", last: succeeded, credentials: ssh,
		annotations: map[string]string{"maintenance.gardener.cloud/operation": "rotate-credentials-start"},
		want:        map[string]string{"gardener.cloud/operation": "rotate-credentials-start;reconcile;rotate-ssh-keypair"},
		operation:   "rotate-credentials-start;reconcile;rotate-ssh-keypair",
	}, {
		name: "failed, asked for a retry", last: failed, annotations: map[string]string{"maintenance.shoot.gardener.cloud/needs-retry-operation": "true", "maintenance.gardener.cloud/operation": "x"},
		want: map[string]string{"gardener.cloud/operation": "retry", "maintenance.gardener.cloud/operation": "x"},
	}, {
		name: "failed", last: failed, annotations: map[string]string{"gardener.cloud/operation": "maintain"},
		want: map[string]string{},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			shoot := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Annotations: tc.annotations}}
			shoot.Status.LastOperation = tc.last
			assert.Equal(t, tc.operation, SetOperation(shoot, tc.credentials))
			assert.Equal(t, tc.want, shoot.Annotations)
		})
	}
}

func TestAddTasks(t *testing.T) {
	shoot := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{v1beta1constants.ShootTasks: "deployDNSRecordIngress,custom"}}}
	AddTasks(shoot, MaintenanceConfig{RestartControlPlane: true})
	assert.Equal(t, "deployDNSRecordIngress,custom,deployInfrastructure,deployDNSRecordInternal,deployDNSRecordExternal,restartControlPlanePods", shoot.Annotations[v1beta1constants.ShootTasks])
	AddTasks(shoot, MaintenanceConfig{RestartControlPlane: true, RestartCoreAddons: true})
	assert.Equal(t, "deployDNSRecordIngress,custom,deployInfrastructure,deployDNSRecordInternal,deployDNSRecordExternal,restartControlPlanePods,restartCoreAddons", shoot.Annotations[v1beta1constants.ShootTasks])
}

func mustVersion(t *testing.T, v string) *semver.Version {
	t.Helper()
	parsed, err := semver.NewVersion(v)
	require.NoError(t, err)
	return parsed
}

func TestMaintainRefusesAnInvalidKubernetesVersion(t *testing.T) {
	shoot := shootWith("", true, true, worker("pool", "1592.1.0"))
	_, err := Maintain(shoot, profile(), "aws", now)
	assert.Error(t, err)
	assert.Equal(t, "1592.1.0", *shoot.Spec.Provider.Workers[0].Machine.Image.Version, "nothing is maintained")
}

func TestMaintainDefaultsAutoUpdatesAsGardenerDoes(t *testing.T) {
	shoot := shootWith("1.30.1", false, false, worker("pool", "1592.2.0"))
	shoot.Spec.Maintenance.AutoUpdate = nil
	p := profile()
	p.MachineImages[0].UpdateStrategy = ptr.To(gardencorev1beta1.UpdateStrategyMajor)
	_, err := Maintain(shoot, p, "aws", now)
	require.NoError(t, err)
	assert.Equal(t, "1.30.5", shoot.Spec.Kubernetes.Version)
	assert.Equal(t, "1877.4.0", *shoot.Spec.Provider.Workers[0].Machine.Image.Version)
}
