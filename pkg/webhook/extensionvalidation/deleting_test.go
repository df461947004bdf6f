package extensionvalidation

import (
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// deletionCase is a kind's valid object, its spec type (Gardener v1.150's members, checked in
// TestEveryDeclaredSpecMemberIsChangedWhileDeleting) and a changed value for every member of
// that spec.
type deletionCase struct {
	obj      runtime.Object
	specType reflect.Type
	// noun is how Gardener names the kind in its refusal ("" for Etcd, which druid refuses
	// as an immutable spec).
	noun    string
	changes map[string]any
}

// defaultSpecChanges changes the members every extension kind's spec has (DefaultSpec).
func defaultSpecChanges(more map[string]any) map[string]any {
	changes := map[string]any{"type": "other", "class": "shoot", "providerConfig": map[string]any{"a": int64(1)}}
	for k, v := range more {
		changes[k] = v
	}
	return changes
}

var otherSecretRef = map[string]any{"name": "other", "namespace": namespace}

func deletionCases() map[string]deletionCase {
	return map[string]deletionCase{
		"BackupBucket": {backupBucket(), reflect.TypeFor[extensionsv1alpha1.BackupBucketSpec](), "backup bucket", defaultSpecChanges(map[string]any{
			"region": "other", "secretRef": otherSecretRef,
		})},
		"BackupEntry": {backupEntry(), reflect.TypeFor[extensionsv1alpha1.BackupEntrySpec](), "backup entry", defaultSpecChanges(map[string]any{
			"region": "other", "secretRef": otherSecretRef, "bucketName": "other", "backupBucketProviderStatus": map[string]any{"a": "b"},
		})},
		"Bastion": {bastion(), reflect.TypeFor[extensionsv1alpha1.BastionSpec](), "bastion", defaultSpecChanges(map[string]any{
			"userData": "b3RoZXI=", "ingress": []any{map[string]any{"ipBlock": map[string]any{"cidr": "0.0.0.0/0"}}},
		})},
		"ContainerRuntime": {containerRuntime(), reflect.TypeFor[extensionsv1alpha1.ContainerRuntimeSpec](), "container runtime", defaultSpecChanges(map[string]any{
			"binaryPath": "/opt/runsc", "workerPool": map[string]any{"name": "other"},
		})},
		"ControlPlane": {controlPlane(), reflect.TypeFor[extensionsv1alpha1.ControlPlaneSpec](), "control plane", defaultSpecChanges(map[string]any{
			"region": "other", "secretRef": otherSecretRef, "infrastructureProviderStatus": map[string]any{"a": "b"},
		})},
		"DNSRecord": {dnsRecord(), reflect.TypeFor[extensionsv1alpha1.DNSRecordSpec](), "dns record", defaultSpecChanges(map[string]any{
			"secretRef": otherSecretRef, "region": "other", "zone": "Z1", "name": "other.shoot.example.com",
			"recordType": "AAAA", "values": []any{"192.0.2.9"}, "ttl": int64(60),
		})},
		"Extension": {extension(), reflect.TypeFor[extensionsv1alpha1.ExtensionSpec](), "extension", defaultSpecChanges(nil)},
		"Infrastructure": {infrastructure(), reflect.TypeFor[extensionsv1alpha1.InfrastructureSpec](), "infrastructure", defaultSpecChanges(map[string]any{
			"region": "other", "secretRef": otherSecretRef, "sshPublicKey": "c3No",
		})},
		"Network": {network(), reflect.TypeFor[extensionsv1alpha1.NetworkSpec](), "network", defaultSpecChanges(map[string]any{
			"podCIDR": "10.0.0.0/16", "serviceCIDR": "10.1.0.0/16", "ipFamilies": []any{"IPv4"},
		})},
		"OperatingSystemConfig": {operatingSystemConfig(), reflect.TypeFor[extensionsv1alpha1.OperatingSystemConfigSpec](), "operatingsystemconfig", defaultSpecChanges(map[string]any{
			"purpose": "provision", "criConfig": map[string]any{"name": "containerd"}, "units": []any{map[string]any{"name": "other.service"}},
			"files": []any{}, "inPlaceUpdates": map[string]any{"kubelet": "1.35.0"},
		})},
		"SelfHostedShootExposure": {selfHostedShootExposure(), reflect.TypeFor[extensionsv1alpha1.SelfHostedShootExposureSpec](), "SelfHostedShootExposure", defaultSpecChanges(map[string]any{
			"port": int64(8443), "credentialsRef": map[string]any{"apiVersion": "v1", "kind": "Secret", "namespace": namespace, "name": "other"},
			"endpoints": []any{map[string]any{"nodeName": "node-z", "addresses": []any{map[string]any{"type": "InternalIP", "address": "10.0.0.9"}}}},
		})},
		"Worker": {worker(), reflect.TypeFor[extensionsv1alpha1.WorkerSpec](), "worker", defaultSpecChanges(map[string]any{
			"region": "other", "secretRef": otherSecretRef, "sshPublicKey": "c3No", "infrastructureProviderStatus": map[string]any{"a": "b"},
			"pools": []any{},
		})},
		"Etcd": {etcdObject(), reflect.TypeFor[etcdSpec](), "", map[string]any{
			"annotations": map[string]any{"a": "b"}, "labels": map[string]any{"a": "b"}, "selector": map[string]any{"matchLabels": map[string]any{"a": "b"}},
			"backup": map[string]any{"port": int64(8080)}, "etcd": map[string]any{"quota": "8Gi"}, "sharedConfig": map[string]any{"autoCompactionMode": "periodic"},
			"schedulingConstraints": map[string]any{"tolerations": []any{map[string]any{"key": "a"}}}, "replicas": int64(5), "memberNamePrefix": "x",
			"priorityClassName": "x", "storageClass": "x", "storageCapacity": "20Gi", "volumeClaimTemplate": "x", "runAsRoot": true,
			"externallyManagedMemberAddresses": []any{"10.0.0.1"},
		}},
	}
}

// deletingObject is obj being deleted (held by a finalizer) as unstructured content, with
// spec members set.
func deletingObject(t *testing.T, obj runtime.Object, spec map[string]any) *unstructured.Unstructured {
	t.Helper()
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj.DeepCopyObject())
	require.NoError(t, err)
	u := &unstructured.Unstructured{Object: content}
	u.SetDeletionTimestamp(&deletionTimestamp)
	u.SetFinalizers([]string{"extensions.gardener.cloud/test"})
	if _, ok := u.Object["spec"].(map[string]any); !ok {
		u.Object["spec"] = map[string]any{}
	}
	for k, v := range spec {
		u.Object["spec"].(map[string]any)[k] = runtime.DeepCopyJSONValue(v)
	}
	return u
}

// assertRefusedWhileDeleting checks Gardener's refusal of a spec change while deleting: a
// Forbidden spec naming the changed member, or druid's immutable spec for Etcds.
func assertRefusedWhileDeleting(t *testing.T, resp admission.Response, noun, member string) {
	t.Helper()
	require.False(t, resp.Allowed, "allowed")
	require.NotNil(t, resp.Result)
	assert.EqualValues(t, http.StatusUnprocessableEntity, resp.Result.Code)
	require.NotNil(t, resp.Result.Details, resp.Result.Message)
	var spec []metav1.StatusCause
	for _, c := range resp.Result.Details.Causes {
		if c.Field == "spec" {
			spec = append(spec, c)
		}
		// Nothing but the refusal is checked of what changed: no immutable field's cause.
		assert.False(t, strings.HasSuffix(c.Message, "field is immutable") && c.Field != "spec", "%s: %s", c.Field, c.Message)
	}
	require.Len(t, spec, 1, resp.Result.Message)
	if noun == "" {
		assert.Equal(t, metav1.CauseType(field.ErrorTypeInvalid), spec[0].Type)
		assert.Contains(t, spec[0].Message, "field is immutable")
		return
	}
	assert.Equal(t, metav1.CauseType(field.ErrorTypeForbidden), spec[0].Type)
	assert.Contains(t, spec[0].Message, "cannot update "+noun+" spec if deletion timestamp is set. Requested changes: ")
	assert.Contains(t, strings.Split(strings.TrimPrefix(spec[0].Message, "Forbidden: cannot update "+noun+" spec if deletion timestamp is set. Requested changes: "), ","), "spec."+member)
}

// While an object is being deleted, Gardener (and druid) refuse a change of any member its
// spec type declares, and nothing else is checked of the change: every member of every kind.
func TestEveryDeclaredSpecMemberIsChangedWhileDeleting(t *testing.T) {
	cases := deletionCases()
	require.Len(t, cases, len(kinds), "a case for every kind")
	for kind, c := range cases {
		t.Run(kind, func(t *testing.T) {
			assert.ElementsMatch(t, specMembers(c.specType), slices.Collect(maps.Keys(c.changes)), "a change for every member of the spec")
			old := deletingObject(t, c.obj, nil)
			assertAllowed(t, review(t, admissionv1.Update, old.DeepCopy(), old))
			for member, value := range c.changes {
				t.Run(member, func(t *testing.T) {
					resp := review(t, admissionv1.Update, deletingObject(t, c.obj, map[string]any{member: value}), old)
					assertRefusedWhileDeleting(t, resp, c.noun, member)
				})
			}
		})
	}
}

// What Gardener's decoding drops is no change: members no version of the spec type declares
// (a ControlPlane's spec.purpose: ControlPlanes have none in v1.150), anywhere in the spec,
// and members named in another case (Kubernetes' JSON decoding matches names exactly). Nor
// is the metadata part of the spec.
func TestWhatGardenerDropsIsNoChangeWhileDeleting(t *testing.T) {
	for kind, c := range deletionCases() {
		t.Run(kind, func(t *testing.T) {
			old := deletingObject(t, c.obj, map[string]any{"futureField": "x"})
			for name, edit := range map[string]func(spec map[string]any){
				"member added": func(spec map[string]any) {
					spec["future2"] = []any{int64(1)}
					if !slices.Contains(specMembers(c.specType), "purpose") {
						spec["purpose"] = "exposure"
					}
				},
				"member changed": func(spec map[string]any) { spec["futureField"] = "y" },
				"member removed": func(spec map[string]any) { delete(spec, "futureField") },
				"known member in another case": func(spec map[string]any) {
					spec["Type"], spec["Region"], spec["Replicas"] = "other", "other", int64(9)
				},
				// secretRef (where the kind has one) gets a member SecretReference lacks.
				"unknown member of a known member": func(spec map[string]any) {
					if ref, ok := spec["secretRef"].(map[string]any); ok {
						ref["future"] = "x"
					}
				},
			} {
				t.Run(name, func(t *testing.T) {
					obj := old.DeepCopy()
					edit(obj.Object["spec"].(map[string]any))
					assertAllowed(t, review(t, admissionv1.Update, obj, old))
				})
			}
			t.Run("finalizers removed", func(t *testing.T) {
				obj := old.DeepCopy()
				obj.SetFinalizers(nil)
				assertAllowed(t, review(t, admissionv1.Update, obj, old))
			})
		})
	}
}

// The case: a ControlPlane being deleted whose update sets spec.purpose.
func TestControlPlanePurposeWhileDeleting(t *testing.T) {
	old := deletingObject(t, controlPlane(), nil)
	assertAllowed(t, review(t, admissionv1.Update, deletingObject(t, controlPlane(), map[string]any{"purpose": "exposure"}), old))
	withPurpose := deletingObject(t, controlPlane(), map[string]any{"purpose": "normal"})
	assertAllowed(t, review(t, admissionv1.Update, deletingObject(t, controlPlane(), map[string]any{"purpose": "exposure"}), withPurpose))
	// A real change still is refused.
	assertRefusedWhileDeleting(t, review(t, admissionv1.Update, deletingObject(t, controlPlane(), map[string]any{"purpose": "exposure", "region": "other"}), withPurpose), "control plane", "region")
}

// Kubernetes' JSON decoding matches member names exactly: a required member written in
// another case is missing, as for Gardener.
func TestMemberNamesAreCaseSensitive(t *testing.T) {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(controlPlane())
	require.NoError(t, err)
	spec := content["spec"].(map[string]any)
	spec["Region"] = spec["region"]
	delete(spec, "region")
	assertInvalid(t, review(t, admissionv1.Create, &unstructured.Unstructured{Object: content}, nil), "spec.region")
}

// specMembers are the JSON members a spec type declares at its top level, those of embedded
// structs (DefaultSpec) included.
func specMembers(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" {
			names = append(names, specMembers(f.Type)...)
			continue
		}
		if name == "-" || !f.IsExported() {
			continue
		}
		names = append(names, name)
	}
	return names
}
