package webhooks_test

import (
	"context"
	"fmt"
	"testing"

	rmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/webhook/extensionvalidation"
)

func init() {
	register(extensionvalidation.Webhook, func(c *rmv1alpha1.ResourceManagerConfiguration) { c.Webhooks.ExtensionValidation.Enabled = true })
}

// extensionsClient reaches the target with typed extension resources and CRDs.
func extensionsClient(t *testing.T) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, extensionsv1alpha1.AddToScheme(s))
	require.NoError(t, apiextensionsv1.AddToScheme(s))
	c, err := client.New(target.Config, client.Options{Scheme: s})
	require.NoError(t, err)
	return c
}

// extensionObjects returns a valid object of every extension kind and an Etcd, in namespace
// (the cluster-scoped BackupBucket and BackupEntry are named after it).
func extensionObjects(namespace string) []client.Object {
	secretRef := corev1.SecretReference{Name: "cloudprovider", Namespace: namespace}
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: namespace} }
	spec := func(kind string) extensionsv1alpha1.DefaultSpec { return extensionsv1alpha1.DefaultSpec{Type: kind} }
	inline := extensionsv1alpha1.FileContent{Inline: &extensionsv1alpha1.FileContentInline{Data: "x"}}
	return []client.Object{
		&extensionsv1alpha1.BackupBucket{
			ObjectMeta: metav1.ObjectMeta{Name: namespace},
			Spec:       extensionsv1alpha1.BackupBucketSpec{DefaultSpec: spec("local"), Region: "local", SecretRef: secretRef},
		},
		&extensionsv1alpha1.BackupEntry{
			ObjectMeta: metav1.ObjectMeta{Name: namespace + "--uid"},
			Spec:       extensionsv1alpha1.BackupEntrySpec{DefaultSpec: spec("local"), Region: "local", BucketName: namespace, SecretRef: secretRef},
		},
		&extensionsv1alpha1.Bastion{
			ObjectMeta: meta("bastion"),
			Spec: extensionsv1alpha1.BastionSpec{DefaultSpec: spec("local"), UserData: []byte("#!/bin/sh"),
				Ingress: []extensionsv1alpha1.BastionIngressPolicy{{IPBlock: networkingv1.IPBlock{CIDR: "192.0.2.1/32"}}}},
		},
		&extensionsv1alpha1.ContainerRuntime{
			ObjectMeta: meta("gvisor"),
			Spec: extensionsv1alpha1.ContainerRuntimeSpec{DefaultSpec: spec("gvisor"), BinaryPath: "/usr/bin/runsc",
				WorkerPool: extensionsv1alpha1.ContainerRuntimeWorkerPool{Name: "pool"}},
		},
		&extensionsv1alpha1.ControlPlane{
			ObjectMeta: meta("control-plane"),
			Spec:       extensionsv1alpha1.ControlPlaneSpec{DefaultSpec: spec("local"), Region: "local", SecretRef: secretRef},
		},
		&extensionsv1alpha1.DNSRecord{
			ObjectMeta: meta("api"),
			Spec: extensionsv1alpha1.DNSRecordSpec{DefaultSpec: spec("local"), SecretRef: secretRef, Name: "api.shoot.example.com",
				RecordType: extensionsv1alpha1.DNSRecordTypeA, Values: []string{"192.0.2.1"}},
		},
		&extensionsv1alpha1.Extension{ObjectMeta: meta("shoot-dns-service"), Spec: extensionsv1alpha1.ExtensionSpec{DefaultSpec: spec("shoot-dns-service")}},
		&extensionsv1alpha1.Infrastructure{
			ObjectMeta: meta("infrastructure"),
			Spec:       extensionsv1alpha1.InfrastructureSpec{DefaultSpec: spec("local"), Region: "local", SecretRef: secretRef},
		},
		&extensionsv1alpha1.Network{
			ObjectMeta: meta("network"),
			Spec:       extensionsv1alpha1.NetworkSpec{DefaultSpec: spec("calico"), PodCIDR: "100.96.0.0/11", ServiceCIDR: "100.64.0.0/13"},
		},
		&extensionsv1alpha1.OperatingSystemConfig{
			ObjectMeta: meta("osc"),
			Spec: extensionsv1alpha1.OperatingSystemConfigSpec{DefaultSpec: spec("gardenlinux"), Purpose: extensionsv1alpha1.OperatingSystemConfigPurposeReconcile,
				Units: []extensionsv1alpha1.Unit{{Name: "kubelet.service", FilePaths: []string{"/var/lib/kubelet/config"}}},
				Files: []extensionsv1alpha1.File{{Path: "/var/lib/kubelet/config", Content: inline}}},
		},
		&extensionsv1alpha1.SelfHostedShootExposure{
			ObjectMeta: meta("kube-apiserver"),
			Spec: extensionsv1alpha1.SelfHostedShootExposureSpec{DefaultSpec: spec("local"), Port: 443,
				Endpoints: []extensionsv1alpha1.ControlPlaneEndpoint{{NodeName: "node-a", Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}}}}},
		},
		&extensionsv1alpha1.Worker{
			ObjectMeta: meta("worker"),
			Spec: extensionsv1alpha1.WorkerSpec{DefaultSpec: spec("local"), Region: "local", SecretRef: secretRef,
				Pools: []extensionsv1alpha1.WorkerPool{{Name: "pool", MachineType: "local", MachineImage: extensionsv1alpha1.MachineImage{Name: "local", Version: "1.0"}}}},
		},
		extEtcd(namespace, "etcd-main", namespace+"--uid/etcd-main"),
	}
}

// pick returns the object of type T.
func pick[T client.Object](objects []client.Object) T {
	for _, obj := range objects {
		if o, ok := obj.(T); ok {
			return o
		}
	}
	panic(fmt.Sprintf("no %T", *new(T)))
}

// extEtcd is an Etcd (druid's types are not a dependency) with a backup store prefix.
func extEtcd(namespace, name, prefix string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "druid.gardener.cloud/v1alpha1",
		"kind":       "Etcd",
		"metadata":   map[string]any{"name": name, "namespace": namespace},
		"spec": map[string]any{
			"replicas": int64(1),
			"backup":   map[string]any{"store": map[string]any{"prefix": prefix, "provider": "local"}},
		},
	}}
}

// assertInvalidBy checks that a write was refused as invalid by the webhook's entry for
// resource, naming the field.
func assertInvalidBy(t *testing.T, err error, resource, field string) {
	t.Helper()
	require.Error(t, err)
	assert.True(t, apierrors.IsInvalid(err), "%v", err)
	assert.ErrorContains(t, err, `admission webhook "validation.extensions.`+resource+`.resources.gardener.cloud" denied the request`)
	assert.ErrorContains(t, err, field)
}

func TestExtensionValidationCreate(t *testing.T) {
	ctx := context.Background()
	c := extensionsClient(t)
	ns := targetNamespace(t, nil)
	objects := extensionObjects(ns)
	for _, obj := range objects {
		require.NoError(t, c.Create(ctx, obj), "%T", obj)
		t.Cleanup(func() { confirmAndDelete(t, c, obj) })
	}

	// The cluster-scoped objects are named after their namespace: another one for these.
	other := targetNamespace(t, nil)
	for _, tc := range []struct {
		resource, field string
		obj             client.Object
	}{
		{"backupbuckets", "spec.region", broken(other, func(o *extensionsv1alpha1.BackupBucket) { o.Spec.Region = "" })},
		{"backupentries", "spec.bucketName", broken(other, func(o *extensionsv1alpha1.BackupEntry) { o.Spec.BucketName = "" })},
		{"bastions", "spec.ingress", broken(other, func(o *extensionsv1alpha1.Bastion) { o.Spec.Ingress = nil })},
		{"containerruntimes", "spec.binaryPath", broken(other, func(o *extensionsv1alpha1.ContainerRuntime) { o.Spec.BinaryPath = "" })},
		{"controlplanes", "spec.secretRef.name", broken(other, func(o *extensionsv1alpha1.ControlPlane) { o.Spec.SecretRef.Name = "" })},
		{"dnsrecords", "spec.values[0]", broken(other, func(o *extensionsv1alpha1.DNSRecord) { o.Spec.Values = []string{"not-an-ip"} })},
		{"extensions", "spec.type", broken(other, func(o *extensionsv1alpha1.Extension) { o.Spec.Type = "" })},
		{"infrastructures", "spec.region", broken(other, func(o *extensionsv1alpha1.Infrastructure) { o.Spec.Region = "" })},
		{"networks", "spec.serviceCIDR", broken(other, func(o *extensionsv1alpha1.Network) { o.Spec.ServiceCIDR = "100.96.0.0/13" })},
		{"operatingsystemconfigs", "spec.units[0].filePaths[0]", broken(other, func(o *extensionsv1alpha1.OperatingSystemConfig) { o.Spec.Files = nil })},
		{"selfhostedshootexposures", "spec.port", broken(other, func(o *extensionsv1alpha1.SelfHostedShootExposure) { o.Spec.Port = 0 })},
		{"workers", "spec.pools[0].machineImage.version", broken(other, func(o *extensionsv1alpha1.Worker) { o.Spec.Pools[0].MachineImage.Version = "" })},
		{"etcds", "spec.backup.store.prefix", broken(other, func(o *unstructured.Unstructured) {
			o.Object["spec"].(map[string]any)["backup"].(map[string]any)["store"].(map[string]any)["prefix"] = "elsewhere"
		})},
	} {
		t.Run(tc.resource, func(t *testing.T) {
			assertInvalidBy(t, c.Create(ctx, tc.obj), tc.resource, tc.field)
		})
	}
}

// broken returns the valid object of type T in namespace, changed by f.
func broken[T client.Object](namespace string, f func(T)) client.Object {
	obj := pick[T](extensionObjects(namespace))
	f(obj)
	return obj
}

func TestExtensionValidationUpdate(t *testing.T) {
	ctx := context.Background()
	c := extensionsClient(t)
	objects := extensionObjects(targetNamespace(t, nil))

	infra := pick[*extensionsv1alpha1.Infrastructure](objects)
	require.NoError(t, c.Create(ctx, infra))
	t.Cleanup(func() { confirmAndDelete(t, c, infra) })
	changed := infra.DeepCopy()
	changed.Spec.Region = "elsewhere"
	assertInvalidBy(t, c.Update(ctx, changed), "infrastructures", "spec.region: Invalid value: \"elsewhere\": field is immutable")
	changed = infra.DeepCopy()
	changed.Spec.SSHPublicKey = []byte("ssh-ed25519 AAAA")
	require.NoError(t, c.Update(ctx, changed), "mutable fields may change")

	network := pick[*extensionsv1alpha1.Network](objects)
	network.Spec.IPFamilies = []extensionsv1alpha1.IPFamily{extensionsv1alpha1.IPFamilyIPv4}
	require.NoError(t, c.Create(ctx, network))
	t.Cleanup(func() { confirmAndDelete(t, c, network) })
	changedNetwork := network.DeepCopy()
	changedNetwork.Spec.IPFamilies = append(changedNetwork.Spec.IPFamilies, extensionsv1alpha1.IPFamilyIPv6)
	require.NoError(t, c.Update(ctx, changedNetwork), "IPv4 may become dual-stack")
	changedNetwork.Spec.IPFamilies = []extensionsv1alpha1.IPFamily{extensionsv1alpha1.IPFamilyIPv6}
	assertInvalidBy(t, c.Update(ctx, changedNetwork), "networks", "spec.ipFamilies")

	etcd := pick[*unstructured.Unstructured](objects)
	require.NoError(t, c.Create(ctx, etcd))
	t.Cleanup(func() { confirmAndDelete(t, c, etcd) })
	changedEtcd := etcd.DeepCopy()
	require.NoError(t, unstructured.SetNestedField(changedEtcd.Object, etcd.GetNamespace()+"--other/etcd-main", "spec", "backup", "store", "prefix"))
	assertInvalidBy(t, c.Update(ctx, changedEtcd), "etcds", "spec.backup.store.prefix")
	require.NoError(t, unstructured.SetNestedField(changedEtcd.Object, int64(3), "spec", "replicas"))
	require.NoError(t, unstructured.SetNestedField(changedEtcd.Object, etcd.GetNamespace()+"--uid/etcd-main", "spec", "backup", "store", "prefix"))
	require.NoError(t, c.Update(ctx, changedEtcd), "replicas may change")
}

// While an extension controller tears down what a spec describes, the spec must stay.
func TestExtensionValidationNoSpecChangeWhileDeleting(t *testing.T) {
	ctx := context.Background()
	c := extensionsClient(t)
	worker := pick[*extensionsv1alpha1.Worker](extensionObjects(targetNamespace(t, nil)))
	worker.Finalizers = []string{"extensions.gardener.cloud/local"}
	worker.Annotations = map[string]string{"confirmation.gardener.cloud/deletion": "true"}
	require.NoError(t, c.Create(ctx, worker))
	require.NoError(t, c.Delete(ctx, worker))
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(worker), worker))
	require.NotNil(t, worker.DeletionTimestamp)

	changed := worker.DeepCopy()
	changed.Spec.Pools[0].MachineType = "larger"
	assertInvalidBy(t, c.Update(ctx, changed), "workers", "cannot update worker spec if deletion timestamp is set. Requested changes: spec.pools")

	worker.Finalizers = nil
	require.NoError(t, c.Update(ctx, worker), "finalizers may go")
	assert.True(t, apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(worker), worker)))
}

// Members of a spec that Gardener's types do not declare are dropped by its decoding: changing
// them is no spec change, also while the object is being deleted. A ControlPlane has no
// purpose (in Gardener v1.150): an update setting spec.purpose of one being deleted passes,
// one changing its region does not.
func TestExtensionValidationUndeclaredMembersWhileDeleting(t *testing.T) {
	ctx := context.Background()
	c := extensionsClient(t)
	cp := pick[*extensionsv1alpha1.ControlPlane](extensionObjects(targetNamespace(t, nil)))
	cp.Finalizers = []string{"extensions.gardener.cloud/local"}
	cp.Annotations = map[string]string{"confirmation.gardener.cloud/deletion": "true"}
	require.NoError(t, c.Create(ctx, cp))
	require.NoError(t, c.Delete(ctx, cp))

	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(extensionsv1alpha1.SchemeGroupVersion.WithKind("ControlPlane"))
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(cp), u))
	require.NotNil(t, u.GetDeletionTimestamp())

	withPurpose := u.DeepCopy()
	require.NoError(t, unstructured.SetNestedField(withPurpose.Object, "exposure", "spec", "purpose"))
	require.NoError(t, c.Update(ctx, withPurpose), "a member ControlPlane does not declare may change")
	stored, _, _ := unstructured.NestedString(withPurpose.Object, "spec", "purpose")
	assert.Equal(t, "exposure", stored, "the permissive test CRD keeps it")

	changed := withPurpose.DeepCopy()
	require.NoError(t, unstructured.SetNestedField(changed.Object, "elsewhere", "spec", "region"))
	assertInvalidBy(t, c.Update(ctx, changed), "controlplanes", "cannot update control plane spec if deletion timestamp is set. Requested changes: spec.region")

	withPurpose.SetFinalizers(nil)
	require.NoError(t, c.Update(ctx, withPurpose), "finalizers may go")
	assert.True(t, apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(cp), cp)))
}

// As Gardener registers it, the webhook validates in every namespace, kube-system included.
func TestExtensionValidationInKubeSystem(t *testing.T) {
	ctx := context.Background()
	c := extensionsClient(t)
	assertInvalidBy(t, c.Create(ctx, broken(metav1.NamespaceSystem, func(o *extensionsv1alpha1.Infrastructure) { o.Spec.Region = "" })), "infrastructures", "spec.region")
	assertInvalidBy(t, c.Create(ctx, broken(metav1.NamespaceSystem, func(o *unstructured.Unstructured) {
		o.Object["spec"].(map[string]any)["backup"].(map[string]any)["store"].(map[string]any)["prefix"] = "elsewhere"
	})), "etcds", "spec.backup.store.prefix")
}
