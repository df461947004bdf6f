package extensionvalidation

import (
	"testing"
	"time"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

const namespace = "shoot--project--name"

var deletionTimestamp = metav1.NewTime(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))

// meta is the metadata of a stored object (an UPDATE must name the resource version).
func meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: namespace, ResourceVersion: "1"}
}

func typed[T runtime.Object](obj T, kind string) T {
	obj.GetObjectKind().SetGroupVersionKind(extensionsv1alpha1.SchemeGroupVersion.WithKind(kind))
	return obj
}

var secretRef = corev1.SecretReference{Name: "cloudprovider", Namespace: namespace}

func backupBucket() *extensionsv1alpha1.BackupBucket {
	return typed(&extensionsv1alpha1.BackupBucket{
		ObjectMeta: metav1.ObjectMeta{Name: "bucket", ResourceVersion: "1"},
		Spec: extensionsv1alpha1.BackupBucketSpec{
			DefaultSpec: extensionsv1alpha1.DefaultSpec{Type: "aws"}, Region: "eu-west-1", SecretRef: secretRef,
		},
	}, "BackupBucket")
}

func backupEntry() *extensionsv1alpha1.BackupEntry {
	return typed(&extensionsv1alpha1.BackupEntry{
		ObjectMeta: metav1.ObjectMeta{Name: namespace + "--uid", ResourceVersion: "1"},
		Spec: extensionsv1alpha1.BackupEntrySpec{
			DefaultSpec: extensionsv1alpha1.DefaultSpec{Type: "aws"}, Region: "eu-west-1", BucketName: "bucket", SecretRef: secretRef,
		},
	}, "BackupEntry")
}

func bastion() *extensionsv1alpha1.Bastion {
	return typed(&extensionsv1alpha1.Bastion{
		ObjectMeta: meta("bastion"),
		Spec: extensionsv1alpha1.BastionSpec{
			DefaultSpec: extensionsv1alpha1.DefaultSpec{Type: "aws"}, UserData: []byte("#!/bin/sh"),
			Ingress: []extensionsv1alpha1.BastionIngressPolicy{{IPBlock: networkingv1.IPBlock{CIDR: "192.0.2.1/32"}}},
		},
	}, "Bastion")
}

func containerRuntime() *extensionsv1alpha1.ContainerRuntime {
	return typed(&extensionsv1alpha1.ContainerRuntime{
		ObjectMeta: meta("gvisor"),
		Spec: extensionsv1alpha1.ContainerRuntimeSpec{
			DefaultSpec: extensionsv1alpha1.DefaultSpec{Type: "gvisor"}, BinaryPath: "/usr/bin/runsc",
			WorkerPool: extensionsv1alpha1.ContainerRuntimeWorkerPool{Name: "pool"},
		},
	}, "ContainerRuntime")
}

func controlPlane() *extensionsv1alpha1.ControlPlane {
	return typed(&extensionsv1alpha1.ControlPlane{
		ObjectMeta: meta("cp"),
		Spec: extensionsv1alpha1.ControlPlaneSpec{
			DefaultSpec: extensionsv1alpha1.DefaultSpec{Type: "aws"}, Region: "eu-west-1", SecretRef: secretRef,
		},
	}, "ControlPlane")
}

func dnsRecord() *extensionsv1alpha1.DNSRecord {
	return typed(&extensionsv1alpha1.DNSRecord{
		ObjectMeta: meta("api"),
		Spec: extensionsv1alpha1.DNSRecordSpec{
			DefaultSpec: extensionsv1alpha1.DefaultSpec{Type: "aws-route53"}, SecretRef: secretRef,
			Name: "api.shoot.example.com", RecordType: extensionsv1alpha1.DNSRecordTypeA, Values: []string{"192.0.2.1"}, TTL: ptr.To[int64](120),
		},
	}, "DNSRecord")
}

func extension() *extensionsv1alpha1.Extension {
	return typed(&extensionsv1alpha1.Extension{
		ObjectMeta: meta("shoot-dns-service"),
		Spec:       extensionsv1alpha1.ExtensionSpec{DefaultSpec: extensionsv1alpha1.DefaultSpec{Type: "shoot-dns-service"}},
	}, "Extension")
}

func infrastructure() *extensionsv1alpha1.Infrastructure {
	return typed(&extensionsv1alpha1.Infrastructure{
		ObjectMeta: meta("infra"),
		Spec: extensionsv1alpha1.InfrastructureSpec{
			DefaultSpec: extensionsv1alpha1.DefaultSpec{Type: "aws"}, Region: "eu-west-1", SecretRef: secretRef,
		},
	}, "Infrastructure")
}

func network() *extensionsv1alpha1.Network {
	return typed(&extensionsv1alpha1.Network{
		ObjectMeta: meta("network"),
		Spec: extensionsv1alpha1.NetworkSpec{
			DefaultSpec: extensionsv1alpha1.DefaultSpec{Type: "calico"}, PodCIDR: "100.96.0.0/11", ServiceCIDR: "100.64.0.0/13",
		},
	}, "Network")
}

func operatingSystemConfig() *extensionsv1alpha1.OperatingSystemConfig {
	return typed(&extensionsv1alpha1.OperatingSystemConfig{
		ObjectMeta: meta("osc"),
		Spec: extensionsv1alpha1.OperatingSystemConfigSpec{
			DefaultSpec: extensionsv1alpha1.DefaultSpec{Type: "gardenlinux"},
			Purpose:     extensionsv1alpha1.OperatingSystemConfigPurposeReconcile,
			CRIConfig: &extensionsv1alpha1.CRIConfig{
				Name:         extensionsv1alpha1.CRINameContainerD,
				CgroupDriver: ptr.To(extensionsv1alpha1.CgroupDriverSystemd),
				Containerd: &extensionsv1alpha1.ContainerdConfig{
					SandboxImage: "registry.k8s.io/pause:3.10",
					Registries: []extensionsv1alpha1.RegistryConfig{{
						Upstream: "docker.io", Server: ptr.To("https://registry-1.docker.io"),
						Hosts: []extensionsv1alpha1.RegistryHost{{URL: "https://mirror.example.com:5000", Capabilities: []extensionsv1alpha1.RegistryCapability{extensionsv1alpha1.PullCapability}}},
					}, {Upstream: "_default"}},
					Plugins: []extensionsv1alpha1.PluginConfig{{Path: []string{"io.containerd.grpc.v1.cri"}, Values: &apiextensionsv1.JSON{Raw: []byte(`{"a":1}`)}}},
				},
			},
			Units: []extensionsv1alpha1.Unit{{
				Name: "kubelet.service", FilePaths: []string{"/var/lib/kubelet/config", "/etc/extension"},
				DropIns: []extensionsv1alpha1.DropIn{{Name: "10-override.conf", Content: "[Service]"}},
			}},
			Files: []extensionsv1alpha1.File{
				{Path: "/var/lib/kubelet/config", Content: extensionsv1alpha1.FileContent{Inline: &extensionsv1alpha1.FileContentInline{Encoding: "b64", Data: "Zm9v"}}},
				{Path: "/etc/host", HostName: ptr.To("node-a"), Content: extensionsv1alpha1.FileContent{SecretRef: &extensionsv1alpha1.FileContentSecretRef{Name: "s", DataKey: "k"}}},
				{Path: "/etc/host", HostName: ptr.To("node-b"), Content: extensionsv1alpha1.FileContent{ImageRef: &extensionsv1alpha1.FileContentImageRef{Image: "img", FilePathInImage: "/bin/x"}}},
			},
		},
		Status: extensionsv1alpha1.OperatingSystemConfigStatus{
			ExtensionFiles: []extensionsv1alpha1.File{{Path: "/etc/extension", Content: extensionsv1alpha1.FileContent{Inline: &extensionsv1alpha1.FileContentInline{Data: "x"}}}},
		},
	}, "OperatingSystemConfig")
}

func selfHostedShootExposure() *extensionsv1alpha1.SelfHostedShootExposure {
	return typed(&extensionsv1alpha1.SelfHostedShootExposure{
		ObjectMeta: meta("kube-apiserver"),
		Spec: extensionsv1alpha1.SelfHostedShootExposureSpec{
			DefaultSpec:    extensionsv1alpha1.DefaultSpec{Type: "local"},
			CredentialsRef: &corev1.ObjectReference{APIVersion: "v1", Kind: "Secret", Namespace: namespace, Name: "cloudprovider"},
			Port:           443,
			Endpoints: []extensionsv1alpha1.ControlPlaneEndpoint{{
				NodeName: "node-a",
				Addresses: []corev1.NodeAddress{
					{Type: corev1.NodeInternalIP, Address: "10.0.0.1"},
					{Type: corev1.NodeHostName, Address: "node-a"},
					{Type: corev1.NodeExternalDNS, Address: "node-a.example.com"},
				},
			}},
		},
	}, "SelfHostedShootExposure")
}

func worker() *extensionsv1alpha1.Worker {
	return typed(&extensionsv1alpha1.Worker{
		ObjectMeta: meta("worker"),
		Spec: extensionsv1alpha1.WorkerSpec{
			DefaultSpec: extensionsv1alpha1.DefaultSpec{Type: "aws"}, Region: "eu-west-1", SecretRef: secretRef,
			Pools: []extensionsv1alpha1.WorkerPool{{
				Name: "pool", MachineType: "m5.large", Architecture: ptr.To("arm64"),
				MachineImage: extensionsv1alpha1.MachineImage{Name: "gardenlinux", Version: "1877.0"},
				NodeTemplate: &extensionsv1alpha1.NodeTemplate{Capacity: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("8Gi"),
					"nvidia.com/gpu": resource.MustParse("1"),
				}},
			}},
		},
	}, "Worker")
}

func etcdObject() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "druid.gardener.cloud/v1alpha1",
		"kind":       "Etcd",
		"metadata":   map[string]any{"name": "etcd-main", "namespace": namespace, "resourceVersion": "1"},
		"spec": map[string]any{
			"replicas": int64(3),
			"backup": map[string]any{"store": map[string]any{
				"prefix": namespace + "--uid/etcd-main", "provider": "gcp", "container": "bucket",
			}},
		},
	}}
}

func validObjects() []runtime.Object {
	return []runtime.Object{
		backupBucket(), backupEntry(), bastion(), containerRuntime(), controlPlane(), dnsRecord(), etcdObject(),
		extension(), infrastructure(), network(), operatingSystemConfig(), selfHostedShootExposure(), worker(),
	}
}

// change returns a valid object of a kind changed by f.
func change[T runtime.Object](valid func() T, f func(T)) T {
	obj := valid()
	f(obj)
	return obj
}

// invalid is an object and the fields it gets wrong.
type invalid struct {
	name   string
	obj    runtime.Object
	fields []string
}

func checkInvalid(t *testing.T, cases []invalid) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assertInvalid(t, review(t, admissionv1.Create, c.obj, nil), c.fields...)
		})
	}
}

// update is an UPDATE from old to obj and the fields it must not change (none: it passes).
type update struct {
	name     string
	obj, old runtime.Object
	fields   []string
}

func checkUpdates(t *testing.T, cases []update) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := review(t, admissionv1.Update, c.obj, c.old)
			if len(c.fields) == 0 {
				assertAllowed(t, resp)
				return
			}
			assertInvalid(t, resp, c.fields...)
		})
	}
}

func TestBackupBucket(t *testing.T) {
	checkInvalid(t, []invalid{{"required", change(backupBucket, func(o *extensionsv1alpha1.BackupBucket) {
		o.Spec = extensionsv1alpha1.BackupBucketSpec{}
	}), []string{"spec.type", "spec.region", "spec.secretRef.name"}}})
	checkUpdates(t, []update{
		{"type and region", change(backupBucket, func(o *extensionsv1alpha1.BackupBucket) { o.Spec.Type, o.Spec.Region = "gcp", "europe-west1" }), backupBucket(), []string{"spec.type", "spec.region"}},
		{"secret", change(backupBucket, func(o *extensionsv1alpha1.BackupBucket) { o.Spec.SecretRef.Name = "other" }), backupBucket(), nil},
	})
}

func TestBackupEntry(t *testing.T) {
	checkInvalid(t, []invalid{{"required", change(backupEntry, func(o *extensionsv1alpha1.BackupEntry) {
		o.Spec = extensionsv1alpha1.BackupEntrySpec{}
	}), []string{"spec.type", "spec.bucketName", "spec.region", "spec.secretRef.name"}}})
	checkUpdates(t, []update{
		{"type", change(backupEntry, func(o *extensionsv1alpha1.BackupEntry) { o.Spec.Type = "gcp" }), backupEntry(), []string{"spec.type"}},
		{"region and bucket", change(backupEntry, func(o *extensionsv1alpha1.BackupEntry) { o.Spec.Region, o.Spec.BucketName = "x", "y" }), backupEntry(), nil},
	})
}

func TestBastion(t *testing.T) {
	checkInvalid(t, []invalid{{"required", change(bastion, func(o *extensionsv1alpha1.Bastion) {
		o.Spec = extensionsv1alpha1.BastionSpec{}
	}), []string{"spec.type", "spec.userData", "spec.ingress"}}})
	checkUpdates(t, []update{
		{"type and user data", change(bastion, func(o *extensionsv1alpha1.Bastion) { o.Spec.Type, o.Spec.UserData = "gcp", []byte("other") }), bastion(), []string{"spec.type", "spec.userData"}},
		{"ingress", change(bastion, func(o *extensionsv1alpha1.Bastion) { o.Spec.Ingress[0].IPBlock.CIDR = "0.0.0.0/0" }), bastion(), nil},
	})
}

func TestContainerRuntime(t *testing.T) {
	checkInvalid(t, []invalid{{"required", change(containerRuntime, func(o *extensionsv1alpha1.ContainerRuntime) {
		o.Spec = extensionsv1alpha1.ContainerRuntimeSpec{}
	}), []string{"spec.type", "spec.binaryPath", "spec.workerPool.name"}}})
	checkUpdates(t, []update{
		{"type and pool", change(containerRuntime, func(o *extensionsv1alpha1.ContainerRuntime) { o.Spec.Type, o.Spec.WorkerPool.Name = "kata", "other" }), containerRuntime(), []string{"spec.type", "spec.workerPool.name"}},
		{"binary", change(containerRuntime, func(o *extensionsv1alpha1.ContainerRuntime) { o.Spec.BinaryPath = "/opt/runsc" }), containerRuntime(), nil},
	})
}

func TestControlPlane(t *testing.T) {
	checkInvalid(t, []invalid{{"required", change(controlPlane, func(o *extensionsv1alpha1.ControlPlane) {
		o.Spec = extensionsv1alpha1.ControlPlaneSpec{}
	}), []string{"spec.type", "spec.region", "spec.secretRef.name"}}})
	checkUpdates(t, []update{
		{"type and region", change(controlPlane, func(o *extensionsv1alpha1.ControlPlane) { o.Spec.Type, o.Spec.Region = "gcp", "x" }), controlPlane(), []string{"spec.type", "spec.region"}},
		{"secret", change(controlPlane, func(o *extensionsv1alpha1.ControlPlane) { o.Spec.SecretRef.Name = "other" }), controlPlane(), nil},
	})
}

func TestExtension(t *testing.T) {
	checkInvalid(t, []invalid{{"required", change(extension, func(o *extensionsv1alpha1.Extension) { o.Spec.Type = "" }), []string{"spec.type"}}})
	checkUpdates(t, []update{
		{"type", change(extension, func(o *extensionsv1alpha1.Extension) { o.Spec.Type = "other" }), extension(), []string{"spec.type"}},
		{"provider config", change(extension, func(o *extensionsv1alpha1.Extension) {
			o.Spec.ProviderConfig = &runtime.RawExtension{Raw: []byte(`{"a":1}`)}
		}), extension(), nil},
	})
}

func TestInfrastructure(t *testing.T) {
	checkInvalid(t, []invalid{{"required", change(infrastructure, func(o *extensionsv1alpha1.Infrastructure) {
		o.Spec = extensionsv1alpha1.InfrastructureSpec{}
	}), []string{"spec.type", "spec.region", "spec.secretRef.name"}}})
	checkUpdates(t, []update{
		{"type and region", change(infrastructure, func(o *extensionsv1alpha1.Infrastructure) { o.Spec.Type, o.Spec.Region = "gcp", "x" }), infrastructure(), []string{"spec.type", "spec.region"}},
		{"ssh key", change(infrastructure, func(o *extensionsv1alpha1.Infrastructure) { o.Spec.SSHPublicKey = []byte("ssh-ed25519 AAAA") }), infrastructure(), nil},
	})
}

func TestWorker(t *testing.T) {
	checkInvalid(t, []invalid{
		{"required", change(worker, func(o *extensionsv1alpha1.Worker) {
			o.Spec = extensionsv1alpha1.WorkerSpec{Pools: []extensionsv1alpha1.WorkerPool{{}}}
		}), []string{"spec.type", "spec.region", "spec.secretRef.name", "spec.pools[0].machineType", "spec.pools[0].machineImage.name", "spec.pools[0].machineImage.version", "spec.pools[0].name"}},
		{"architecture", change(worker, func(o *extensionsv1alpha1.Worker) { o.Spec.Pools[0].Architecture = ptr.To("s390x") }), []string{"spec.pools[0].architecture"}},
		{"capacity", change(worker, func(o *extensionsv1alpha1.Worker) {
			o.Spec.Pools[0].NodeTemplate.Capacity = corev1.ResourceList{
				corev1.ResourceMemory: resource.MustParse("-1Gi"),
				corev1.ResourcePods:   resource.MustParse("110500m"),
				"nvidia.com/gpu":      resource.MustParse("500m"),
				corev1.ResourceCPU:    resource.MustParse("500m"),
			}
		}), []string{"spec.pools[0].nodeTemplate.capacity.memory", "spec.pools[0].nodeTemplate.capacity.pods", "spec.pools[0].nodeTemplate.capacity.nvidia.com/gpu"}},
	})
	checkUpdates(t, []update{
		{"type and region", change(worker, func(o *extensionsv1alpha1.Worker) { o.Spec.Type, o.Spec.Region = "gcp", "x" }), worker(), []string{"spec.type", "spec.region"}},
		{"pools", change(worker, func(o *extensionsv1alpha1.Worker) { o.Spec.Pools[0].MachineType = "m5.xlarge" }), worker(), nil},
	})
}

func TestDNSRecord(t *testing.T) {
	checkInvalid(t, []invalid{
		{"required", change(dnsRecord, func(o *extensionsv1alpha1.DNSRecord) {
			o.Spec = extensionsv1alpha1.DNSRecordSpec{}
		}), []string{"spec.type", "spec.secretRef.name", "spec.name", "spec.recordType", "spec.values"}},
		{"empty region and zone", change(dnsRecord, func(o *extensionsv1alpha1.DNSRecord) { o.Spec.Region, o.Spec.Zone = ptr.To(""), ptr.To("") }), []string{"spec.region", "spec.zone"}},
		{"name", change(dnsRecord, func(o *extensionsv1alpha1.DNSRecord) { o.Spec.Name = "not a domain" }), []string{"spec.name"}},
		{"unsupported record type", change(dnsRecord, func(o *extensionsv1alpha1.DNSRecord) { o.Spec.RecordType = "MX" }), []string{"spec.recordType"}},
		{"A record of a host name", change(dnsRecord, func(o *extensionsv1alpha1.DNSRecord) { o.Spec.Values = []string{"192.0.2.1", "example.com"} }), []string{"spec.values[1]"}},
		{"AAAA record", change(dnsRecord, func(o *extensionsv1alpha1.DNSRecord) {
			o.Spec.RecordType, o.Spec.Values = extensionsv1alpha1.DNSRecordTypeAAAA, []string{"2001:db8::1", "nope"}
		}), []string{"spec.values[1]"}},
		{"CNAME records", change(dnsRecord, func(o *extensionsv1alpha1.DNSRecord) {
			o.Spec.RecordType, o.Spec.Values = extensionsv1alpha1.DNSRecordTypeCNAME, []string{"lb.example.com", "not a domain"}
		}), []string{"spec.values", "spec.values[1]"}},
		{"negative ttl", change(dnsRecord, func(o *extensionsv1alpha1.DNSRecord) { o.Spec.TTL = ptr.To[int64](-1) }), []string{"spec.ttl"}},
		{"ttl beyond 31 bits", change(dnsRecord, func(o *extensionsv1alpha1.DNSRecord) { o.Spec.TTL = ptr.To[int64](1 << 31) }), []string{"spec.ttl"}},
		{"underscore outside TXT", change(dnsRecord, func(o *extensionsv1alpha1.DNSRecord) { o.Spec.Name = "_acme-challenge.example.com" }), []string{"spec.name"}},
	})
	for name, f := range map[string]func(*extensionsv1alpha1.DNSRecord){
		"wildcard": func(o *extensionsv1alpha1.DNSRecord) { o.Spec.Name = "*.ingress.shoot.example.com" },
		"TXT challenge": func(o *extensionsv1alpha1.DNSRecord) {
			o.Spec.Name, o.Spec.RecordType, o.Spec.Values = "_acme-challenge.example.com", extensionsv1alpha1.DNSRecordTypeTXT, []string{"any text"}
		},
		"CNAME": func(o *extensionsv1alpha1.DNSRecord) {
			o.Spec.RecordType, o.Spec.Values = extensionsv1alpha1.DNSRecordTypeCNAME, []string{"lb.example.com"}
		},
	} {
		t.Run(name, func(t *testing.T) { assertAllowed(t, review(t, admissionv1.Create, change(dnsRecord, f), nil)) })
	}
	checkUpdates(t, []update{
		{"type, name and record type", change(dnsRecord, func(o *extensionsv1alpha1.DNSRecord) {
			o.Spec.Type, o.Spec.Name, o.Spec.RecordType, o.Spec.Values = "gcp", "other.example.com", extensionsv1alpha1.DNSRecordTypeTXT, []string{"x"}
		}), dnsRecord(), []string{"spec.type", "spec.name", "spec.recordType"}},
		{"values and ttl", change(dnsRecord, func(o *extensionsv1alpha1.DNSRecord) { o.Spec.Values, o.Spec.TTL = []string{"192.0.2.2"}, nil }), dnsRecord(), nil},
	})
}

func TestNetwork(t *testing.T) {
	families := func(f ...extensionsv1alpha1.IPFamily) []extensionsv1alpha1.IPFamily { return f }
	ipv4, ipv6 := extensionsv1alpha1.IPFamilyIPv4, extensionsv1alpha1.IPFamilyIPv6
	checkInvalid(t, []invalid{
		{"required", change(network, func(o *extensionsv1alpha1.Network) { o.Spec = extensionsv1alpha1.NetworkSpec{} }), []string{"spec.type", "spec.podCIDR", "spec.serviceCIDR"}},
		{"unparsable", change(network, func(o *extensionsv1alpha1.Network) { o.Spec.PodCIDR = "100.96.0.0" }), []string{"spec.podCIDR"}},
		{"overlap", change(network, func(o *extensionsv1alpha1.Network) { o.Spec.ServiceCIDR = "100.96.0.0/13" }), []string{"spec.serviceCIDR"}},
		{"IPv6 CIDR in IPv4 network", change(network, func(o *extensionsv1alpha1.Network) { o.Spec.ServiceCIDR = "2001:db8::/108" }), []string{"spec.serviceCIDR"}},
		{"IPv4 CIDR in IPv6 network", change(network, func(o *extensionsv1alpha1.Network) {
			o.Spec.IPFamilies, o.Spec.ServiceCIDR = families(ipv6), "2001:db8::/108"
		}), []string{"spec.podCIDR"}},
		{"unsupported and duplicate families", change(network, func(o *extensionsv1alpha1.Network) {
			// The CIDRs are not checked against families that make no sense.
			o.Spec.IPFamilies, o.Spec.PodCIDR = families(ipv4, "IPv5", ipv4), "nonsense"
		}), []string{"spec.ipFamilies[1]", "spec.ipFamilies[2]"}},
	})
	for name, f := range map[string]func(*extensionsv1alpha1.Network){
		"IPv6 may overlap": func(o *extensionsv1alpha1.Network) {
			o.Spec.IPFamilies, o.Spec.PodCIDR, o.Spec.ServiceCIDR = families(ipv6), "2001:db8::/48", "2001:db8::/108"
		},
		"dual-stack CIDRs of either family": func(o *extensionsv1alpha1.Network) {
			o.Spec.IPFamilies, o.Spec.ServiceCIDR = families(ipv4, ipv6), "2001:db8::/108"
		},
	} {
		t.Run(name, func(t *testing.T) { assertAllowed(t, review(t, admissionv1.Create, change(network, f), nil)) })
	}
	withFamilies := func(f ...extensionsv1alpha1.IPFamily) *extensionsv1alpha1.Network {
		return change(network, func(o *extensionsv1alpha1.Network) { o.Spec.IPFamilies = f })
	}
	checkUpdates(t, []update{
		{"CIDRs and type", change(network, func(o *extensionsv1alpha1.Network) {
			o.Spec.Type, o.Spec.PodCIDR, o.Spec.ServiceCIDR = "cilium", "10.0.0.0/16", "10.1.0.0/16"
		}), network(), []string{"spec.type", "spec.podCIDR", "spec.serviceCIDR"}},
		{"IPv4 to dual-stack", withFamilies(ipv4, ipv6), withFamilies(ipv4), nil},
		{"dual-stack to IPv4", withFamilies(ipv4), withFamilies(ipv4, ipv6), nil},
		{"unset to IPv4", withFamilies(ipv4), withFamilies(), []string{"spec.ipFamilies"}},
		{"IPv4 to IPv6", withFamilies(ipv6), withFamilies(ipv4), []string{"spec.ipFamilies", "spec.podCIDR", "spec.serviceCIDR"}},
	})
}

func TestOperatingSystemConfig(t *testing.T) {
	type osc = extensionsv1alpha1.OperatingSystemConfig
	checkInvalid(t, []invalid{
		{"purpose required", change(operatingSystemConfig, func(o *osc) { o.Spec.Purpose = "" }), []string{"spec.purpose"}},
		{"purpose unsupported", change(operatingSystemConfig, func(o *osc) { o.Spec.Purpose = "other" }), []string{"spec.purpose"}},
		{"cgroup driver", change(operatingSystemConfig, func(o *osc) { o.Spec.CRIConfig.CgroupDriver = ptr.To[extensionsv1alpha1.CgroupDriverName]("other") }), []string{"spec.criConfig.cgroupDriver"}},
		{"containerd config when provisioning", change(operatingSystemConfig, func(o *osc) {
			o.Spec.Purpose = extensionsv1alpha1.OperatingSystemConfigPurposeProvision
		}), []string{"spec.criConfig.containerd"}},
		{"containerd", change(operatingSystemConfig, func(o *osc) {
			c := o.Spec.CRIConfig.Containerd
			c.SandboxImage = ""
			c.Registries = []extensionsv1alpha1.RegistryConfig{
				{Upstream: "docker.io:99999", Server: ptr.To("ftp://x"), Hosts: []extensionsv1alpha1.RegistryHost{{URL: "no-host", Capabilities: []extensionsv1alpha1.RegistryCapability{"fly"}}}},
				{Upstream: "docker.io:99999", Server: ptr.To("https://")},
				{Upstream: "Not_A_Host", Hosts: []extensionsv1alpha1.RegistryHost{{URL: "://"}}},
			}
			c.Plugins = []extensionsv1alpha1.PluginConfig{
				{Op: ptr.To[extensionsv1alpha1.PluginPathOperation]("replace")},
				{Op: ptr.To(extensionsv1alpha1.RemovePluginPathOperation), Path: []string{"a"}, Values: &apiextensionsv1.JSON{Raw: []byte(`{"a":1}`)}},
				{Path: []string{"a"}, Values: &apiextensionsv1.JSON{Raw: []byte(`[1]`)}},
			}
		}), []string{
			"spec.criConfig.containerd.sandboxImage",
			"spec.criConfig.containerd.registries[0].upstream", "spec.criConfig.containerd.registries[0].server",
			"spec.criConfig.containerd.registries[0].hosts[0].url", "spec.criConfig.containerd.registries[0].hosts[0].capabilities[0]",
			"spec.criConfig.containerd.registries[1].upstream", "spec.criConfig.containerd.registries[1].upstream", "spec.criConfig.containerd.registries[1].server",
			"spec.criConfig.containerd.registries[2].upstream", "spec.criConfig.containerd.registries[2].hosts[0].url",
			"spec.criConfig.containerd.plugins[0].op", "spec.criConfig.containerd.plugins[0].path",
			"spec.criConfig.containerd.plugins[1].values", "spec.criConfig.containerd.plugins[2].values",
		}},
		{"units", change(operatingSystemConfig, func(o *osc) {
			o.Spec.Units = []extensionsv1alpha1.Unit{{DropIns: []extensionsv1alpha1.DropIn{{}}, FilePaths: []string{"/nowhere"}}}
			o.Status.ExtensionUnits = []extensionsv1alpha1.Unit{{}}
		}), []string{"spec.units[0].name", "spec.units[0].dropIns[0].name", "spec.units[0].dropIns[0].content", "spec.units[0].filePaths[0]", "status.extensionUnits[0].name"}},
		{"files", change(operatingSystemConfig, func(o *osc) {
			o.Spec.Files = []extensionsv1alpha1.File{
				{},
				{Path: "/a", Content: extensionsv1alpha1.FileContent{Inline: &extensionsv1alpha1.FileContentInline{}, ImageRef: &extensionsv1alpha1.FileContentImageRef{}}},
				{Path: "/b", Content: extensionsv1alpha1.FileContent{SecretRef: &extensionsv1alpha1.FileContentSecretRef{}}},
				{Path: "/c", Content: extensionsv1alpha1.FileContent{Inline: &extensionsv1alpha1.FileContentInline{Encoding: "gzip"}}},
				{Path: "/d", HostName: ptr.To("Not_A_Host"), Content: extensionsv1alpha1.FileContent{ImageRef: &extensionsv1alpha1.FileContentImageRef{}}},
			}
			o.Spec.Units = nil
			o.Status.ExtensionFiles = []extensionsv1alpha1.File{{Path: "/e"}}
		}), []string{
			"spec.files[0].path", "spec.files[0].content", "spec.files[1].content",
			"spec.files[2].content.secretRef.name", "spec.files[2].content.secretRef.dataKey",
			"spec.files[3].content.inline.encoding", "spec.files[3].content.inline.data",
			"spec.files[4].content.imageRef.image", "spec.files[4].content.imageRef.filePathInImage", "spec.files[4].hostName",
			"status.extensionFiles[0].content",
		}},
		{"duplicate files", change(operatingSystemConfig, func(o *osc) {
			inline := extensionsv1alpha1.FileContent{Inline: &extensionsv1alpha1.FileContentInline{Data: "x"}}
			o.Spec.Files = []extensionsv1alpha1.File{
				{Path: "/global", Content: inline},
				{Path: "/global", Content: inline},
				{Path: "/global", HostName: ptr.To("a"), Content: inline},
				{Path: "/host", HostName: ptr.To("a"), Content: inline},
				{Path: "/host", HostName: ptr.To("b"), Content: inline},
				{Path: "/host", HostName: ptr.To("b"), Content: inline},
				{Path: "/host", Content: inline},
			}
			o.Spec.Units = nil
			o.Status.ExtensionFiles = []extensionsv1alpha1.File{{Path: "/global", Content: inline}}
		}), []string{"spec.files[1].path", "spec.files[2].path", "spec.files[5].path", "spec.files[6].path", "status.extensionFiles[0].path"}},
	})
	checkUpdates(t, []update{
		{"type and purpose", change(operatingSystemConfig, func(o *osc) {
			o.Spec.Type, o.Spec.Purpose, o.Spec.CRIConfig = "ubuntu", extensionsv1alpha1.OperatingSystemConfigPurposeProvision, nil
		}), operatingSystemConfig(), []string{"spec.type", "spec.purpose"}},
		{"files", change(operatingSystemConfig, func(o *osc) { o.Spec.Files[0].Content.Inline.Data = "YmFy" }), operatingSystemConfig(), nil},
	})
}

func TestSelfHostedShootExposure(t *testing.T) {
	type exposure = extensionsv1alpha1.SelfHostedShootExposure
	checkInvalid(t, []invalid{
		{"required", change(selfHostedShootExposure, func(o *exposure) { o.Spec = extensionsv1alpha1.SelfHostedShootExposureSpec{} }), []string{"spec.type", "spec.port", "spec.endpoints"}},
		{"credentials", change(selfHostedShootExposure, func(o *exposure) { o.Spec.CredentialsRef = &corev1.ObjectReference{} }), []string{
			"spec.credentialsRef.apiVersion", "spec.credentialsRef.kind", "spec.credentialsRef.namespace", "spec.credentialsRef.name", "spec.credentialsRef",
		}},
		{"credentials elsewhere", change(selfHostedShootExposure, func(o *exposure) {
			o.Spec.CredentialsRef = &corev1.ObjectReference{APIVersion: "security.gardener.cloud/v1alpha1", Kind: "WorkloadIdentity", Namespace: "garden", Name: "Not_A_Name"}
		}), []string{"spec.credentialsRef.namespace", "spec.credentialsRef.name", "spec.credentialsRef"}},
		{"port", change(selfHostedShootExposure, func(o *exposure) { o.Spec.Port = 70000 }), []string{"spec.port"}},
		{"endpoints", change(selfHostedShootExposure, func(o *exposure) {
			o.Spec.Endpoints = []extensionsv1alpha1.ControlPlaneEndpoint{{Addresses: []corev1.NodeAddress{
				{},
				{Type: "Other", Address: "x"},
				{Type: corev1.NodeExternalIP, Address: "not-an-ip"},
				{Type: corev1.NodeInternalDNS, Address: "Not_A_Name"},
			}}}
		}), []string{
			"spec.endpoints[0].nodeName",
			"spec.endpoints[0].addresses[0].type", "spec.endpoints[0].addresses[0].address",
			"spec.endpoints[0].addresses[1].type", "spec.endpoints[0].addresses[1].address",
			"spec.endpoints[0].addresses[2].address", "spec.endpoints[0].addresses[3].address",
		}},
	})
	checkUpdates(t, []update{
		{"type", change(selfHostedShootExposure, func(o *exposure) { o.Spec.Type = "other" }), selfHostedShootExposure(), []string{"spec.type"}},
		{"node name", change(selfHostedShootExposure, func(o *exposure) { o.Spec.Endpoints[0].NodeName = "node-b" }), selfHostedShootExposure(), nil},
	})
}

func TestEtcd(t *testing.T) {
	withStore := func(fields ...string) *unstructured.Unstructured {
		obj := etcdObject()
		for i := 0; i < len(fields); i += 2 {
			if err := unstructured.SetNestedField(obj.Object, fields[i+1], "spec", "backup", "store", fields[i]); err != nil {
				t.Fatal(err)
			}
		}
		return obj
	}
	checkInvalid(t, []invalid{
		{"prefix without name", withStore("prefix", namespace+"/etcd"), []string{"spec.backup.store.prefix"}},
		{"prefix without namespace", withStore("prefix", "etcd-main"), []string{"spec.backup.store.prefix"}},
		{"provider", withStore("provider", "dropbox"), []string{"spec.backup.store.provider"}},
	})
	noStore := etcdObject()
	unstructured.RemoveNestedField(noStore.Object, "spec", "backup")
	for _, obj := range []*unstructured.Unstructured{noStore, withStore("provider", ""), withStore("provider", "local"), withStore("provider", "S3")} {
		assertAllowed(t, review(t, admissionv1.Create, obj, nil))
	}

	withPrefix := func(prefix string) *unstructured.Unstructured {
		obj := etcdObject()
		if err := unstructured.SetNestedField(obj.Object, prefix, "spec", "memberNamePrefix"); err != nil {
			t.Fatal(err)
		}
		return obj
	}
	replicas := etcdObject()
	if err := unstructured.SetNestedField(replicas.Object, int64(5), "spec", "replicas"); err != nil {
		t.Fatal(err)
	}
	deleting := func(obj *unstructured.Unstructured) *unstructured.Unstructured {
		obj.SetDeletionTimestamp(&deletionTimestamp)
		return obj
	}
	checkUpdates(t, []update{
		{"store prefix", withStore("prefix", namespace+"--other/etcd-main"), etcdObject(), []string{"spec.backup.store.prefix"}},
		{"member name prefix", withPrefix("b"), withPrefix("a"), []string{"spec.memberNamePrefix"}},
		{"member name prefix set", withPrefix("a"), etcdObject(), []string{"spec.memberNamePrefix"}},
		{"store added", etcdObject(), noStore, nil},
		{"replicas", replicas, etcdObject(), nil},
		{"replicas while deleting", deleting(replicas.DeepCopy()), deleting(etcdObject()), []string{"spec"}},
	})
}
