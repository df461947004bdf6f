package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	securityv1alpha1 "github.com/gardener/gardener/pkg/apis/security/v1alpha1"
	seedmanagementv1alpha1 "github.com/gardener/gardener/pkg/apis/seedmanagement/v1alpha1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// shape is a landscape of n Shoots with the other kinds in the proportion of a large one
// (10,000 Shoots, 150 Seeds, 3,000 Projects, 15,000 ControllerInstallations, 200,000 Events).
type shape struct {
	shoots, seeds, projects, cloudProfiles, registrations, managedSeeds, eventsPerShoot int
}

func shapeOf(n int) shape {
	return shape{
		shoots:         n,
		seeds:          max(2, n/67),
		projects:       max(1, n*3/10),
		cloudProfiles:  5,
		registrations:  100,
		managedSeeds:   max(1, n/67/5),
		eventsPerShoot: 20,
	}
}

func (s shape) installations() int { return s.registrations * s.seeds }

func (s shape) String() string {
	return fmt.Sprintf("%d Shoots, %d Seeds, %d Projects, %d CloudProfiles, %d ControllerRegistrations, %d ControllerInstallations, %d BackupBuckets, %d BackupEntries, %d ManagedSeeds, %d Events",
		s.shoots, s.seeds, s.projects, s.cloudProfiles, s.registrations, s.installations(), s.seeds, s.shoots, s.managedSeeds, s.shoots*s.eventsPerShoot)
}

func projectName(i int) string      { return fmt.Sprintf("p%05d", i) }
func projectNamespace(i int) string { return "garden-" + projectName(i) }
func seedName(i int) string         { return fmt.Sprintf("seed-%03d", i) }
func cloudProfileName(i int) string { return fmt.Sprintf("profile-%d", i) }
func shootName(i int) string        { return fmt.Sprintf("s%05d", i) }
func registrationName(i int) string { return fmt.Sprintf("extension-%03d", i) }

// shootKey is where Shoot i lives: Shoots are spread over the Projects.
func (s shape) shootKey(i int) client.ObjectKey {
	return client.ObjectKey{Namespace: projectNamespace(i % s.projects), Name: shootName(i)}
}

// populate creates the landscape with workers writers at once, and reports the mean JSON size of
// each kind's objects as created (managed fields are the server's and come on top).
func populate(ctx context.Context, c client.Client, s shape, now time.Time, workers int) (map[string]int, error) {
	var objs []client.Object
	add := func(o ...client.Object) { objs = append(objs, o...) }
	for i := range s.cloudProfiles {
		add(cloudProfile(i))
	}
	for i := range s.registrations {
		add(registration(i))
	}
	for i := range s.seeds {
		add(seed(i, now), seedLease(i, now), backupBucket(i))
		for r := range s.registrations {
			add(installation(i, r))
		}
	}
	for i := range s.projects {
		add(projectNamespaceObject(i), project(i))
	}
	if err := create(ctx, c, objs, workers); err != nil {
		return nil, err
	}
	sizes := sizesOf(objs)
	objs = objs[:0]
	for i := range s.projects {
		add(credentialsSecret(i), secretBinding(i), credentialsBinding(i))
	}
	for i := range s.managedSeeds {
		add(managedSeed(i))
	}
	for i := range s.shoots {
		add(shoot(s, i, now), backupEntry(s, i))
	}
	if err := create(ctx, c, objs, workers); err != nil {
		return nil, err
	}
	for kind, size := range sizesOf(objs) {
		sizes[kind] = size
	}
	// Events last: many and small, written in batches so that their slices are not all held.
	var eventSize, events int
	for i := range s.shoots {
		objs = objs[:0]
		for e := range s.eventsPerShoot {
			add(event(s, i, e, now))
		}
		if err := create(ctx, c, objs, workers); err != nil {
			return nil, err
		}
		for _, o := range objs {
			data, _ := json.Marshal(o)
			eventSize += len(data)
			events++
		}
	}
	if events > 0 {
		sizes["Event"] = eventSize / events
	}
	return sizes, nil
}

// create creates objs, workers at a time; an object that exists is left as it is.
func create(ctx context.Context, c client.Client, objs []client.Object, workers int) error {
	work := make(chan client.Object)
	var wg sync.WaitGroup
	var once sync.Once
	var failed error
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for o := range work {
				status := statusOf(o)
				if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
					once.Do(func() { failed = fmt.Errorf("%T %s: %w", o, client.ObjectKeyFromObject(o), err) })
					continue
				}
				// The stand-in CRDs have a status subresource: status as gardenlet writes it.
				if status != nil {
					status(o)
					if err := c.Status().Update(ctx, o); err != nil {
						once.Do(func() { failed = fmt.Errorf("%T %s status: %w", o, client.ObjectKeyFromObject(o), err) })
					}
				}
			}
		}()
	}
	for _, o := range objs {
		select {
		case work <- o:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
	if failed != nil {
		return failed
	}
	return ctx.Err()
}

// statusOf returns what sets o's status again after its create dropped it, for kinds with one.
func statusOf(o client.Object) func(client.Object) {
	switch t := o.(type) {
	case *gardencorev1beta1.Shoot:
		status := t.Status
		return func(o client.Object) { o.(*gardencorev1beta1.Shoot).Status = status }
	case *gardencorev1beta1.Seed:
		status := t.Status
		return func(o client.Object) { o.(*gardencorev1beta1.Seed).Status = status }
	case *gardencorev1beta1.ControllerInstallation:
		status := t.Status
		return func(o client.Object) { o.(*gardencorev1beta1.ControllerInstallation).Status = status }
	case *gardencorev1beta1.BackupEntry:
		status := t.Status
		return func(o client.Object) { o.(*gardencorev1beta1.BackupEntry).Status = status }
	case *gardencorev1beta1.Project:
		status := t.Status
		return func(o client.Object) { o.(*gardencorev1beta1.Project).Status = status }
	}
	return nil
}

func sizesOf(objs []client.Object) map[string]int {
	sum, count := map[string]int{}, map[string]int{}
	for _, o := range objs {
		data, _ := json.Marshal(o)
		kind := strings.TrimPrefix(fmt.Sprintf("%T", o), "*")
		kind = kind[strings.LastIndexByte(kind, '.')+1:]
		sum[kind] += len(data)
		count[kind]++
	}
	for kind := range sum {
		sum[kind] /= count[kind]
	}
	return sum
}

func raw(v any) *runtime.RawExtension {
	data, _ := json.Marshal(v)
	return &runtime.RawExtension{Raw: data}
}

func condition(t string, status gardencorev1beta1.ConditionStatus, reason, message string, now time.Time) gardencorev1beta1.Condition {
	return gardencorev1beta1.Condition{Type: gardencorev1beta1.ConditionType(t), Status: status, Reason: reason, Message: message,
		LastTransitionTime: metav1.NewTime(now.Add(-72 * time.Hour)), LastUpdateTime: metav1.NewTime(now)}
}

var kubernetesVersions = []string{"1.30.14", "1.31.11", "1.32.7", "1.33.3"}

// shoot is Shoot i as gardenlet leaves it after a successful reconcile: full spec and status.
func shoot(s shape, i int, now time.Time) *gardencorev1beta1.Shoot {
	key := s.shootKey(i)
	project := projectName(i % s.projects)
	version := kubernetesVersions[i%len(kubernetesVersions)]
	var workers []gardencorev1beta1.Worker
	for w := range 3 {
		workers = append(workers, gardencorev1beta1.Worker{
			Name:    fmt.Sprintf("worker-%d", w),
			Machine: gardencorev1beta1.Machine{Type: "m5.2xlarge", Image: &gardencorev1beta1.ShootMachineImage{Name: "gardenlinux", Version: ptr.To("1877.3.0")}, Architecture: ptr.To("amd64")},
			Minimum: 2, Maximum: 10, MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(0)),
			Volume: &gardencorev1beta1.Volume{Type: ptr.To("gp3"), VolumeSize: "50Gi"},
			Zones:  []string{"eu-west-1a", "eu-west-1b", "eu-west-1c"},
			Labels: map[string]string{"worker.gardener.cloud/pool": fmt.Sprintf("worker-%d", w), "team": "platform", "cost-center": fmt.Sprintf("cc-%04d", i%1000)},
			Taints: []corev1.Taint{{Key: "dedicated", Value: "platform", Effect: corev1.TaintEffectPreferNoSchedule}},
			CRI:    &gardencorev1beta1.CRI{Name: gardencorev1beta1.CRINameContainerD},
			ProviderConfig: raw(map[string]any{"apiVersion": "aws.provider.extensions.gardener.cloud/v1alpha1", "kind": "WorkerConfig",
				"volume": map[string]any{"iops": 3000, "throughput": 125}, "instanceMetadataOptions": map[string]any{"httpTokens": "required", "httpPutResponseHopLimit": 2},
				"nodeTemplate": map[string]any{"capacity": map[string]any{"cpu": "8", "gpu": "0", "memory": "32Gi"}}}),
		})
	}
	sh := &gardencorev1beta1.Shoot{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
			Labels: map[string]string{
				"shoot.gardener.cloud/status": "healthy", "name.seed.gardener.cloud/" + seedName(i%s.seeds): "true",
				"provider.extensions.gardener.cloud/aws": "true", "networking.extensions.gardener.cloud/calico": "true",
				"extensions.extensions.gardener.cloud/shoot-dns-service": "true", "extensions.extensions.gardener.cloud/shoot-cert-service": "true",
				"operatingsystemconfig.extensions.gardener.cloud/gardenlinux": "true",
			},
			Annotations: map[string]string{
				"gardener.cloud/created-by": "user-" + project + "@example.com", "shoot.gardener.cloud/tasks": "",
				"dashboard.gardener.cloud/no-hibernation-schedule": "false",
			},
			Finalizers: []string{"gardener"},
		},
		Spec: gardencorev1beta1.ShootSpec{
			CloudProfile:      &gardencorev1beta1.CloudProfileReference{Kind: "CloudProfile", Name: cloudProfileName(i % s.cloudProfiles)},
			CloudProfileName:  ptr.To(cloudProfileName(i % s.cloudProfiles)),
			Region:            "eu-west-1",
			SecretBindingName: ptr.To(project + "-secret"),
			SeedName:          ptr.To(seedName(i % s.seeds)),
			Purpose:           ptr.To(gardencorev1beta1.ShootPurposeProduction),
			ControlPlane:      &gardencorev1beta1.ControlPlane{HighAvailability: &gardencorev1beta1.HighAvailability{FailureTolerance: gardencorev1beta1.FailureTolerance{Type: gardencorev1beta1.FailureToleranceTypeZone}}},
			DNS:               &gardencorev1beta1.DNS{Domain: ptr.To(fmt.Sprintf("%s.%s.shoot.example.com", key.Name, project))},
			Extensions:        []gardencorev1beta1.Extension{{Type: "shoot-dns-service", ProviderConfig: raw(map[string]any{"apiVersion": "service.dns.extensions.gardener.cloud/v1alpha1", "kind": "DNSConfig", "syncProvidersFromShootSpecDNS": true})}, {Type: "shoot-cert-service"}},
			Networking:        &gardencorev1beta1.Networking{Type: ptr.To("calico"), Nodes: ptr.To("10.250.0.0/16"), Pods: ptr.To("100.96.0.0/11"), Services: ptr.To("100.64.0.0/13"), IPFamilies: []gardencorev1beta1.IPFamily{gardencorev1beta1.IPFamilyIPv4}, ProviderConfig: raw(map[string]any{"apiVersion": "calico.networking.extensions.gardener.cloud/v1alpha1", "kind": "NetworkConfig", "overlay": map[string]any{"enabled": false}, "typha": map[string]any{"enabled": true}})},
			Kubernetes: gardencorev1beta1.Kubernetes{Version: version,
				KubeAPIServer: &gardencorev1beta1.KubeAPIServerConfig{
					KubernetesConfig: gardencorev1beta1.KubernetesConfig{FeatureGates: map[string]bool{"InPlacePodVerticalScaling": true}},
					AuditConfig:      &gardencorev1beta1.AuditConfig{AuditPolicy: &gardencorev1beta1.AuditPolicy{ConfigMapRef: &corev1.ObjectReference{Name: "audit-policy"}}},
					Requests:         &gardencorev1beta1.APIServerRequests{MaxNonMutatingInflight: ptr.To[int32](400), MaxMutatingInflight: ptr.To[int32](200)},
				},
				KubeControllerManager: &gardencorev1beta1.KubeControllerManagerConfig{NodeCIDRMaskSize: ptr.To[int32](24)},
				KubeProxy:             &gardencorev1beta1.KubeProxyConfig{Mode: ptr.To(gardencorev1beta1.ProxyModeIPTables), Enabled: ptr.To(true)},
				Kubelet:               &gardencorev1beta1.KubeletConfig{FailSwapOn: ptr.To(true), KubeReserved: &gardencorev1beta1.KubeletConfigReserved{CPU: ptr.To(resource.MustParse("80m")), Memory: ptr.To(resource.MustParse("1Gi"))}},
			},
			Maintenance: &gardencorev1beta1.Maintenance{
				AutoUpdate: &gardencorev1beta1.MaintenanceAutoUpdate{KubernetesVersion: true, MachineImageVersion: ptr.To(true)},
				TimeWindow: &gardencorev1beta1.MaintenanceTimeWindow{Begin: fmt.Sprintf("%02d0000+0000", i%24), End: fmt.Sprintf("%02d0000+0000", (i+1)%24)},
			},
			Provider: gardencorev1beta1.Provider{Type: "aws", Workers: workers,
				ControlPlaneConfig:   raw(map[string]any{"apiVersion": "aws.provider.extensions.gardener.cloud/v1alpha1", "kind": "ControlPlaneConfig", "cloudControllerManager": map[string]any{"useCustomRouteController": true}, "storage": map[string]any{"managedDefaultClass": true}}),
				InfrastructureConfig: raw(map[string]any{"apiVersion": "aws.provider.extensions.gardener.cloud/v1alpha1", "kind": "InfrastructureConfig", "networks": map[string]any{"vpc": map[string]any{"cidr": "10.250.0.0/16"}, "zones": []any{map[string]any{"name": "eu-west-1a", "internal": "10.250.112.0/22", "public": "10.250.96.0/22", "workers": "10.250.0.0/19"}, map[string]any{"name": "eu-west-1b", "internal": "10.250.116.0/22", "public": "10.250.100.0/22", "workers": "10.250.32.0/19"}, map[string]any{"name": "eu-west-1c", "internal": "10.250.120.0/22", "public": "10.250.104.0/22", "workers": "10.250.64.0/19"}}}}),
			},
		},
		Status: shootStatus(s, i, now),
	}
	// A third of the Shoots hibernate at night, as development clusters do.
	if i%3 == 0 {
		sh.Spec.Purpose = ptr.To(gardencorev1beta1.ShootPurposeDevelopment)
		sh.Spec.Hibernation = &gardencorev1beta1.Hibernation{Schedules: []gardencorev1beta1.HibernationSchedule{
			{Start: ptr.To(fmt.Sprintf("00 %d * * 1,2,3,4,5", 17+i%4)), End: ptr.To(fmt.Sprintf("00 %d * * 1,2,3,4,5", 6+i%3)), Location: ptr.To("Europe/Berlin")},
		}}
	}
	return sh
}

// shootStatus is a healthy Shoot's status after its last reconcile.
func shootStatus(s shape, i int, now time.Time) gardencorev1beta1.ShootStatus {
	msg := func(what string) string {
		return what + " is healthy. All required control plane components are running, every replica is ready and up to date, and the latest health check found nothing to report."
	}
	return gardencorev1beta1.ShootStatus{
		Conditions: []gardencorev1beta1.Condition{
			condition("APIServerAvailable", gardencorev1beta1.ConditionTrue, "HealthzRequestSucceeded", "API server /healthz endpoint responded with success status code.", now),
			condition("ControlPlaneHealthy", gardencorev1beta1.ConditionTrue, "ControlPlaneRunning", msg("Control plane"), now),
			condition("ObservabilityComponentsHealthy", gardencorev1beta1.ConditionTrue, "ObservabilityComponentsRunning", msg("Observability components"), now),
			condition("EveryNodeReady", gardencorev1beta1.ConditionTrue, "EveryNodeReady", "All nodes are ready. 6 nodes in 3 worker pools, all of them registered, schedulable and with a healthy kubelet and container runtime.", now),
			condition("SystemComponentsHealthy", gardencorev1beta1.ConditionTrue, "SystemComponentsRunning", msg("System components"), now),
		},
		Constraints: []gardencorev1beta1.Condition{
			condition("HibernationPossible", gardencorev1beta1.ConditionTrue, "NoProblematicWebhooks", "All webhooks are properly configured.", now),
			condition("MaintenancePreconditionsSatisfied", gardencorev1beta1.ConditionTrue, "NoProblematicWebhooks", "All webhooks are properly configured.", now),
			condition("CACertificateValiditiesAcceptable", gardencorev1beta1.ConditionTrue, "NoExpiringCACertificates", "All CA certificates are still valid for at least 365 days.", now),
			condition("CRDsWithProblematicConversionWebhooks", gardencorev1beta1.ConditionTrue, "NoProblematicConversionWebhooks", "All CRDs with conversion webhook are properly configured.", now),
		},
		Gardener:           gardencorev1beta1.Gardener{ID: "gardenlet-" + seedName(i%s.seeds) + "-7d9f8c6b5-x2k4p", Name: "gardenlet", Version: "v1.150.0"},
		IsHibernated:       false,
		TechnicalID:        "shoot--" + projectName(i%s.projects) + "--" + shootName(i),
		UID:                types.UID(fmt.Sprintf("0b5e4a9c-8f1d-4c7e-9a3b-%012d", i)),
		ClusterIdentity:    ptr.To(fmt.Sprintf("shoot--%s--%s-0b5e4a9c-8f1d-4c7e-9a3b-%012d-garden", projectName(i%s.projects), shootName(i), i)),
		SeedName:           ptr.To(seedName(i % s.seeds)),
		ObservedGeneration: 1,
		LastOperation: &gardencorev1beta1.LastOperation{Type: gardencorev1beta1.LastOperationTypeReconcile, State: gardencorev1beta1.LastOperationStateSucceeded,
			Progress: 100, Description: "Shoot cluster has been successfully reconciled.", LastUpdateTime: metav1.NewTime(now.Add(-time.Duration(i%60) * time.Minute))},
		AdvertisedAddresses: []gardencorev1beta1.ShootAdvertisedAddress{
			{Name: "external", URL: fmt.Sprintf("https://api.%s.%s.shoot.example.com", shootName(i), projectName(i%s.projects))},
			{Name: "internal", URL: fmt.Sprintf("https://api.%s.%s.internal.shoot.example.com", shootName(i), projectName(i%s.projects))},
			{Name: "service-account-issuer", URL: fmt.Sprintf("https://discovery.example.com/projects/%s/shoots/0b5e4a9c-%012d/issuer", projectName(i%s.projects), i)},
		},
		Networking: &gardencorev1beta1.NetworkingStatus{Nodes: []string{"10.250.0.0/16"}, Pods: []string{"100.96.0.0/11"}, Services: []string{"100.64.0.0/13"}, EgressCIDRs: []string{"52.18.0.1/32", "52.18.0.2/32", "52.18.0.3/32"}},
		Credentials: &gardencorev1beta1.ShootCredentials{Rotation: &gardencorev1beta1.ShootCredentialsRotation{
			CertificateAuthorities: &gardencorev1beta1.CARotation{Phase: gardencorev1beta1.RotationCompleted, LastInitiationTime: ptr.To(metav1.NewTime(now.Add(-90 * 24 * time.Hour))), LastCompletionTime: ptr.To(metav1.NewTime(now.Add(-89 * 24 * time.Hour)))},
			ServiceAccountKey:      &gardencorev1beta1.ServiceAccountKeyRotation{Phase: gardencorev1beta1.RotationCompleted, LastInitiationTime: ptr.To(metav1.NewTime(now.Add(-90 * 24 * time.Hour))), LastCompletionTime: ptr.To(metav1.NewTime(now.Add(-89 * 24 * time.Hour)))},
			ETCDEncryptionKey:      &gardencorev1beta1.ETCDEncryptionKeyRotation{Phase: gardencorev1beta1.RotationCompleted, LastInitiationTime: ptr.To(metav1.NewTime(now.Add(-90 * 24 * time.Hour))), LastCompletionTime: ptr.To(metav1.NewTime(now.Add(-89 * 24 * time.Hour)))},
			Observability:          &gardencorev1beta1.ObservabilityRotation{LastInitiationTime: ptr.To(metav1.NewTime(now.Add(-30 * 24 * time.Hour))), LastCompletionTime: ptr.To(metav1.NewTime(now.Add(-30 * 24 * time.Hour)))},
			SSHKeypair:             &gardencorev1beta1.ShootSSHKeypairRotation{LastInitiationTime: ptr.To(metav1.NewTime(now.Add(-30 * 24 * time.Hour))), LastCompletionTime: ptr.To(metav1.NewTime(now.Add(-30 * 24 * time.Hour)))},
		}},
	}
}

func cloudProfile(i int) *gardencorev1beta1.CloudProfile {
	var versions []gardencorev1beta1.ExpirableVersion
	for minor := 25; minor <= 33; minor++ {
		for patch := range 8 {
			versions = append(versions, gardencorev1beta1.ExpirableVersion{Version: fmt.Sprintf("1.%d.%d", minor, patch), Classification: ptr.To(gardencorev1beta1.ClassificationSupported)})
		}
	}
	for _, v := range kubernetesVersions {
		versions = append(versions, gardencorev1beta1.ExpirableVersion{Version: v, Classification: ptr.To(gardencorev1beta1.ClassificationSupported)})
	}
	var images []gardencorev1beta1.MachineImage
	for _, name := range []string{"gardenlinux", "suse-chost", "ubuntu", "flatcar"} {
		image := gardencorev1beta1.MachineImage{Name: name}
		for v := range 15 {
			image.Versions = append(image.Versions, gardencorev1beta1.MachineImageVersion{ExpirableVersion: gardencorev1beta1.ExpirableVersion{Version: fmt.Sprintf("1877.%d.0", v)},
				CRI: []gardencorev1beta1.CRI{{Name: gardencorev1beta1.CRINameContainerD}}, Architectures: []string{"amd64", "arm64"}})
		}
		images = append(images, image)
	}
	var machines []gardencorev1beta1.MachineType
	for m := range 40 {
		machines = append(machines, gardencorev1beta1.MachineType{Name: fmt.Sprintf("m5.%dxlarge", m), CPU: resource.MustParse("8"), GPU: resource.MustParse("0"), Memory: resource.MustParse("32Gi"), Architecture: ptr.To("amd64"), Usable: ptr.To(true)})
	}
	machines = append(machines, gardencorev1beta1.MachineType{Name: "m5.2xlarge", CPU: resource.MustParse("8"), GPU: resource.MustParse("0"), Memory: resource.MustParse("32Gi"), Architecture: ptr.To("amd64"), Usable: ptr.To(true)})
	return &gardencorev1beta1.CloudProfile{
		ObjectMeta: metav1.ObjectMeta{Name: cloudProfileName(i)},
		Spec: gardencorev1beta1.CloudProfileSpec{Type: "aws", Kubernetes: gardencorev1beta1.KubernetesSettings{Versions: versions}, MachineImages: images, MachineTypes: machines,
			Regions:     []gardencorev1beta1.Region{{Name: "eu-west-1", Zones: []gardencorev1beta1.AvailabilityZone{{Name: "eu-west-1a"}, {Name: "eu-west-1b"}, {Name: "eu-west-1c"}}}},
			VolumeTypes: []gardencorev1beta1.VolumeType{{Name: "gp3", Class: "standard", Usable: ptr.To(true)}}},
	}
}

// registeredTypes are the extension kinds and types the landscape's Shoots and Seeds need, each
// registered by one of the first ControllerRegistrations; the others register extensions no Shoot
// enables.
var registeredTypes = [][2]string{
	{"ControlPlane", "aws"}, {"Infrastructure", "aws"}, {"Worker", "aws"}, {"BackupBucket", "aws"}, {"BackupEntry", "aws"},
	{"DNSRecord", "aws-route53"}, {"Network", "calico"}, {"OperatingSystemConfig", "gardenlinux"},
	{"Extension", "shoot-dns-service"}, {"Extension", "shoot-cert-service"},
}

func registration(i int) *gardencorev1beta1.ControllerRegistration {
	resource := gardencorev1beta1.ControllerResource{Kind: "Extension", Type: fmt.Sprintf("type-%03d", i)}
	if i < len(registeredTypes) {
		resource = gardencorev1beta1.ControllerResource{Kind: registeredTypes[i][0], Type: registeredTypes[i][1]}
	}
	return &gardencorev1beta1.ControllerRegistration{
		ObjectMeta: metav1.ObjectMeta{Name: registrationName(i)},
		Spec: gardencorev1beta1.ControllerRegistrationSpec{
			Resources:  []gardencorev1beta1.ControllerResource{resource},
			Deployment: &gardencorev1beta1.ControllerRegistrationDeployment{DeploymentRefs: []gardencorev1beta1.DeploymentRef{{Name: registrationName(i)}}},
		},
	}
}

func seed(i int, now time.Time) *gardencorev1beta1.Seed {
	return &gardencorev1beta1.Seed{
		ObjectMeta: metav1.ObjectMeta{Name: seedName(i), Labels: map[string]string{"seed.gardener.cloud/gardenlet": "true"}},
		Spec: gardencorev1beta1.SeedSpec{
			Provider: gardencorev1beta1.SeedProvider{Type: "aws", Region: "eu-west-1"},
			Networks: gardencorev1beta1.SeedNetworks{Nodes: ptr.To("10.0.0.0/16"), Pods: "10.1.0.0/16", Services: "10.2.0.0/16"},
			DNS:      gardencorev1beta1.SeedDNS{Provider: &gardencorev1beta1.SeedDNSProvider{Type: "aws-route53", CredentialsRef: &corev1.ObjectReference{APIVersion: "v1", Kind: "Secret", Namespace: "garden", Name: "dns"}}},
			Ingress:  &gardencorev1beta1.Ingress{Domain: seedName(i) + ".example.com", Controller: gardencorev1beta1.IngressController{Kind: "nginx"}},
			Backup:   &gardencorev1beta1.Backup{Provider: "aws", Region: ptr.To("eu-west-1")},
			Settings: &gardencorev1beta1.SeedSettings{Scheduling: &gardencorev1beta1.SeedSettingScheduling{Visible: true}},
		},
		Status: gardencorev1beta1.SeedStatus{
			Conditions: []gardencorev1beta1.Condition{
				condition("GardenletReady", gardencorev1beta1.ConditionTrue, "GardenletReady", "Gardenlet is posting ready status.", now),
				condition("SeedSystemComponentsHealthy", gardencorev1beta1.ConditionTrue, "SystemComponentsRunning", "All system components are healthy.", now),
				condition("ExtensionsReady", gardencorev1beta1.ConditionTrue, "AllExtensionsReady", "All extensions installed into the seed cluster are ready and healthy.", now),
				condition("BackupBucketsReady", gardencorev1beta1.ConditionTrue, "BackupBucketsAvailable", "Backup Buckets are available.", now),
			},
			Gardener:           &gardencorev1beta1.Gardener{ID: "gardenlet-" + seedName(i), Name: "gardenlet", Version: "v1.150.0"},
			KubernetesVersion:  ptr.To("1.33.3"),
			ObservedGeneration: 1,
			ClusterIdentity:    ptr.To(seedName(i) + "-identity"),
		},
	}
}

func seedLease(i int, now time.Time) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: gardencorev1beta1.GardenerSeedLeaseNamespace, Name: seedName(i)},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(seedName(i)), LeaseDurationSeconds: ptr.To[int32](2), RenewTime: ptr.To(metav1.NewMicroTime(now))},
	}
}

func backupBucket(i int) *gardencorev1beta1.BackupBucket {
	return &gardencorev1beta1.BackupBucket{
		ObjectMeta: metav1.ObjectMeta{Name: "bucket-" + seedName(i)},
		Spec: gardencorev1beta1.BackupBucketSpec{Provider: gardencorev1beta1.BackupBucketProvider{Type: "aws", Region: "eu-west-1"},
			CredentialsRef: &corev1.ObjectReference{APIVersion: "v1", Kind: "Secret", Namespace: "garden", Name: "backup"}, SeedName: ptr.To(seedName(i))},
	}
}

func installation(seedIndex, registrationIndex int) *gardencorev1beta1.ControllerInstallation {
	return &gardencorev1beta1.ControllerInstallation{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%s", registrationName(registrationIndex), seedName(seedIndex)),
			Labels: map[string]string{"registration-spec-hash": "8c4d2f1a", "seed-spec-hash": "f7b3e9d0", "deployment-hash": "1e2a3b4c"}},
		Spec: gardencorev1beta1.ControllerInstallationSpec{
			RegistrationRef: corev1.ObjectReference{Name: registrationName(registrationIndex)},
			DeploymentRef:   &corev1.ObjectReference{Name: registrationName(registrationIndex)},
			SeedRef:         &corev1.ObjectReference{Name: seedName(seedIndex)},
		},
		Status: gardencorev1beta1.ControllerInstallationStatus{Conditions: []gardencorev1beta1.Condition{
			condition("Valid", gardencorev1beta1.ConditionTrue, "RegistrationValid", "Chart could be rendered successfully.", time.Now()),
			condition("Installed", gardencorev1beta1.ConditionTrue, "InstallationSuccessful", "Installation of new resources succeeded.", time.Now()),
			condition("Healthy", gardencorev1beta1.ConditionTrue, "ControllerHealthy", "All controller components are healthy.", time.Now()),
			condition("Progressing", gardencorev1beta1.ConditionFalse, "ControllerRolledOut", "All controller components have been fully rolled out.", time.Now()),
		}},
	}
}

func projectNamespaceObject(i int) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: projectNamespace(i),
		Labels: map[string]string{v1beta1constants.GardenRole: v1beta1constants.GardenRoleProject, v1beta1constants.ProjectName: projectName(i)}}}
}

func project(i int) *gardencorev1beta1.Project {
	owner := rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: fmt.Sprintf("owner-%05d@example.com", i)}
	members := []gardencorev1beta1.ProjectMember{{Subject: owner, Role: "owner", Roles: []string{"admin"}}}
	for m := range 4 {
		members = append(members, gardencorev1beta1.ProjectMember{Subject: rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: fmt.Sprintf("member-%d-%05d@example.com", m, i)}, Role: "admin", Roles: []string{"viewer"}})
	}
	return &gardencorev1beta1.Project{
		ObjectMeta: metav1.ObjectMeta{Name: projectName(i)},
		Spec:       gardencorev1beta1.ProjectSpec{Namespace: ptr.To(projectNamespace(i)), Owner: &owner, CreatedBy: &owner, Members: members, Purpose: ptr.To("Workloads of team " + projectName(i))},
		Status:     gardencorev1beta1.ProjectStatus{Phase: gardencorev1beta1.ProjectReady, ObservedGeneration: 1},
	}
}

func credentialsSecret(i int) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: projectNamespace(i), Name: projectName(i) + "-secret"},
		Data: map[string][]byte{"accessKeyID": []byte("AKIAIOSFODNN7EXAMPLE"), "secretAccessKey": []byte("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")}}
}

func secretBinding(i int) *gardencorev1beta1.SecretBinding {
	return &gardencorev1beta1.SecretBinding{ObjectMeta: metav1.ObjectMeta{Namespace: projectNamespace(i), Name: projectName(i) + "-secret"},
		SecretRef: corev1.SecretReference{Namespace: projectNamespace(i), Name: projectName(i) + "-secret"}, Provider: &gardencorev1beta1.SecretBindingProvider{Type: "aws"}}
}

func credentialsBinding(i int) *securityv1alpha1.CredentialsBinding {
	return &securityv1alpha1.CredentialsBinding{ObjectMeta: metav1.ObjectMeta{Namespace: projectNamespace(i), Name: projectName(i) + "-credentials"},
		CredentialsRef: corev1.ObjectReference{APIVersion: "v1", Kind: "Secret", Namespace: projectNamespace(i), Name: projectName(i) + "-secret"},
		Provider:       securityv1alpha1.CredentialsBindingProvider{Type: "aws"}}
}

func managedSeed(i int) *seedmanagementv1alpha1.ManagedSeed {
	return &seedmanagementv1alpha1.ManagedSeed{ObjectMeta: metav1.ObjectMeta{Namespace: "garden", Name: fmt.Sprintf("managed-%03d", i)},
		Spec: seedmanagementv1alpha1.ManagedSeedSpec{Shoot: &seedmanagementv1alpha1.Shoot{Name: fmt.Sprintf("managed-%03d", i)}}}
}

func backupEntry(s shape, i int) *gardencorev1beta1.BackupEntry {
	key := s.shootKey(i)
	return &gardencorev1beta1.BackupEntry{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: "shoot--" + projectName(i%s.projects) + "--" + key.Name + "--0b5e4a9c",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: gardencorev1beta1.SchemeGroupVersion.String(), Kind: "Shoot", Name: key.Name, UID: "0b5e4a9c", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		Spec:   gardencorev1beta1.BackupEntrySpec{BucketName: "bucket-" + seedName(i%s.seeds), SeedName: ptr.To(seedName(i % s.seeds))},
		Status: gardencorev1beta1.BackupEntryStatus{ObservedGeneration: 1, SeedName: ptr.To(seedName(i % s.seeds))},
	}
}

// event is the e-th Event of Shoot i; their times spread over the last two hours, so that about
// half are past the event function's default TTL (1h) when the run begins.
func event(s shape, i, e int, now time.Time) *corev1.Event {
	key := s.shootKey(i)
	at := metav1.NewTime(now.Add(-time.Duration((i*s.eventsPerShoot+e)%120) * time.Minute))
	// Every other Event is of the Shoot's BackupEntry: the event function's TTL is of Events of
	// anything but Shoots (the kube-apiserver's own TTL ends those).
	involved := corev1.ObjectReference{APIVersion: gardencorev1beta1.SchemeGroupVersion.String(), Kind: "Shoot", Namespace: key.Namespace, Name: key.Name}
	if e%2 == 1 {
		involved.Kind, involved.Name = "BackupEntry", backupEntry(s, i).Name
	}
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: key.Namespace, Name: fmt.Sprintf("%s.%x", key.Name, e)},
		InvolvedObject: involved,
		Reason:         "Reconciling", Message: "Reconciling Shoot", Type: corev1.EventTypeNormal, Source: corev1.EventSource{Component: "gardenlet"},
		FirstTimestamp: at, LastTimestamp: at, Count: 1,
	}
}

// servedKinds are the kinds whose size as the server serves them (its managed fields and
// defaults included) the run reports.
var servedKinds = []schema.GroupVersionKind{
	gardencorev1beta1.SchemeGroupVersion.WithKind("Shoot"),
	gardencorev1beta1.SchemeGroupVersion.WithKind("Seed"),
	gardencorev1beta1.SchemeGroupVersion.WithKind("Project"),
	gardencorev1beta1.SchemeGroupVersion.WithKind("CloudProfile"),
	gardencorev1beta1.SchemeGroupVersion.WithKind("ControllerInstallation"),
	gardencorev1beta1.SchemeGroupVersion.WithKind("BackupEntry"),
	corev1.SchemeGroupVersion.WithKind("Event"),
}

// servedSizes are the mean JSON sizes of up to 100 objects of each of servedKinds as the server
// serves them.
func servedSizes(ctx context.Context, c client.Client) (map[string]int, error) {
	sizes := map[string]int{}
	for _, gvk := range servedKinds {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := c.List(ctx, list, client.Limit(100)); err != nil {
			return nil, err
		}
		var total int
		for _, item := range list.Items {
			data, err := item.MarshalJSON()
			if err != nil {
				return nil, err
			}
			total += len(data)
		}
		if len(list.Items) > 0 {
			sizes[gvk.Kind] = total / len(list.Items)
		}
	}
	return sizes, nil
}
