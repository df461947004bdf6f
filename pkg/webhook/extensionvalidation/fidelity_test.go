package extensionvalidation

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// deletingEtcd is a valid Etcd being deleted, with spec members set at the given paths.
func deletingEtcd(t *testing.T, set map[string]any) *unstructured.Unstructured {
	t.Helper()
	obj := etcdObject()
	obj.SetDeletionTimestamp(&deletionTimestamp)
	for path, value := range set {
		require.NoError(t, unstructured.SetNestedField(obj.Object, value, append([]string{"spec"}, splitPath(path)...)...))
	}
	return obj
}

func splitPath(path string) []string {
	var parts []string
	start := 0
	for i := range len(path) {
		if path[i] == '.' {
			parts = append(parts, path[start:i])
			start = i + 1
		}
	}
	return append(parts, path[start:])
}

// While an Etcd is being deleted, druid compares its spec as typed values: a change of how a
// value is written is no change.
func TestEtcdSpecIsComparedByMeaningWhileDeleting(t *testing.T) {
	for _, tc := range []struct {
		name     string
		old, new map[string]any
	}{
		{"quantity", map[string]any{"storageCapacity": "10Gi"}, map[string]any{"storageCapacity": "10240Mi"}},
		{"quota", map[string]any{"etcd.quota": "8Gi"}, map[string]any{"etcd.quota": "8192Mi"}},
		{"resources", map[string]any{"etcd.resources.requests.cpu": "1"}, map[string]any{"etcd.resources.requests.cpu": "1000m"}},
		{"duration", map[string]any{"backup.garbageCollectionPeriod": "12h"}, map[string]any{"backup.garbageCollectionPeriod": "720m"}},
		{"nested duration", map[string]any{"backup.leaderElection.reelectionPeriod": "5s"}, map[string]any{"backup.leaderElection.reelectionPeriod": "5000ms"}},
		{"absent and empty struct", nil, map[string]any{"sharedConfig": map[string]any{}, "schedulingConstraints": map[string]any{}, "etcd": map[string]any{}}},
		{"absent and empty list", nil, map[string]any{"schedulingConstraints.tolerations": []any{}}},
		{"absent and empty map", nil, map[string]any{"annotations": map[string]any{}}},
		// Druid decodes into its types, which drop members they do not declare (etcdSpec has
		// exactly druid's): a change of those is no change.
		{"unknown field unchanged", map[string]any{"futureField": "x"}, map[string]any{"futureField": "x"}},
		{"unknown field changed", map[string]any{"futureField": "x"}, map[string]any{"futureField": "y"}},
		{"unknown field added", nil, map[string]any{"backup.futureField": int64(1)}},
		{"unknown field in a list element", map[string]any{"schedulingConstraints.tolerations": []any{map[string]any{"key": "a", "futureField": "x"}}},
			map[string]any{"schedulingConstraints.tolerations": []any{map[string]any{"key": "a", "futureField": "y"}}}},
		{"member named in another case", nil, map[string]any{"Replicas": int64(5)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assertAllowed(t, review(t, admissionv1.Update, deletingEtcd(t, tc.new), deletingEtcd(t, tc.old)))
		})
	}
}

// A real change is refused as druid refuses it: the spec is immutable, shown as druid shows
// it (the new spec as JSON).
func TestEtcdSpecChangeWhileDeletingIsRefusedAsDruidDoes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		old, new map[string]any
	}{
		{"quantity", map[string]any{"storageCapacity": "10Gi"}, map[string]any{"storageCapacity": "20Gi"}},
		{"duration", map[string]any{"backup.garbageCollectionPeriod": "12h"}, map[string]any{"backup.garbageCollectionPeriod": "13h"}},
		// A pointer to an empty struct is not nil for druid's semantic equality either.
		{"absent and empty pointer struct", nil, map[string]any{"backup.compression": map[string]any{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			newObj := deletingEtcd(t, tc.new)
			resp := review(t, admissionv1.Update, newObj, deletingEtcd(t, tc.old))
			assertInvalid(t, resp, "spec")
			require.Len(t, resp.Result.Details.Causes, 1)
			cause := resp.Result.Details.Causes[0]
			assert.Equal(t, metav1.CauseType(field.ErrorTypeInvalid), cause.Type)

			typed := &etcd{}
			raw, err := json.Marshal(newObj)
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(raw, typed))
			specJSON, err := json.Marshal(&typed.Spec)
			require.NoError(t, err)
			assert.Equal(t, "Invalid value: "+string(specJSON)+": field is immutable", cause.Message)
		})
	}
}

// A deleting Worker's spec may not change in the pool members of Gardener v1.150 that our
// v1.146 types lack either; they compare typed, as Gardener compares them. Members neither
// version declares are dropped by Gardener's decoding and never count.
func TestWorkerMembersNewerThanOurTypesWhileDeleting(t *testing.T) {
	withPool := func(t *testing.T, pool map[string]any) runtime.Object {
		t.Helper()
		w := worker()
		w.DeletionTimestamp = &deletionTimestamp
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(w)
		require.NoError(t, err)
		obj := &unstructured.Unstructured{Object: content}
		pools, _, _ := unstructured.NestedSlice(obj.Object, "spec", "pools")
		for k, v := range pool {
			pools[0].(map[string]any)[k] = v
		}
		require.NoError(t, unstructured.SetNestedSlice(obj.Object, pools, "spec", "pools"))
		return obj
	}
	mcm := func(members ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i < len(members); i += 2 {
			m[members[i].(string)] = members[i+1]
		}
		return map[string]any{"machineControllerManager": m}
	}
	kubelet := func(name string, value any) map[string]any {
		return map[string]any{"kubeletConfig": map[string]any{name: value}}
	}
	for _, tc := range []struct {
		name     string
		old, new map[string]any
		refused  bool
	}{
		{"autoPreserveFailedMachineMax unchanged", mcm("autoPreserveFailedMachineMax", int64(2)), mcm("autoPreserveFailedMachineMax", int64(2)), false},
		{"autoPreserveFailedMachineMax changed", mcm("autoPreserveFailedMachineMax", int64(2)), mcm("autoPreserveFailedMachineMax", int64(3)), true},
		{"autoPreserveFailedMachineMax added", mcm(), mcm("autoPreserveFailedMachineMax", int64(1)), true},
		{"machinePreserveTimeout written otherwise", mcm("machinePreserveTimeout", "1h"), mcm("machinePreserveTimeout", "60m"), false},
		{"machinePreserveTimeout changed", mcm("machinePreserveTimeout", "1h"), mcm("machinePreserveTimeout", "2h"), true},
		{"imagePullCredentialsVerificationPolicy changed", kubelet("imagePullCredentialsVerificationPolicy", "NeverVerify"), kubelet("imagePullCredentialsVerificationPolicy", "AlwaysVerify"), true},
		{"preloadedImagesVerificationAllowlist changed", kubelet("preloadedImagesVerificationAllowlist", []any{"a"}), kubelet("preloadedImagesVerificationAllowlist", []any{"b"}), true},
		{"preloadedImagesVerificationAllowlist absent and empty", kubelet("imagePullCredentialsVerificationPolicy", "NeverVerify"),
			map[string]any{"kubeletConfig": map[string]any{"imagePullCredentialsVerificationPolicy": "NeverVerify", "preloadedImagesVerificationAllowlist": []any{}}}, false},
		// Not a pool member in any version (it belongs below machineControllerManager).
		{"unknown pool member", map[string]any{"autoPreserveFailedMachineMax": int64(2)}, map[string]any{"autoPreserveFailedMachineMax": int64(3)}, false},
		{"unknown member below machineControllerManager", mcm("future", "x"), mcm("future", "y"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := review(t, admissionv1.Update, withPool(t, tc.new), withPool(t, tc.old))
			if !tc.refused {
				assertAllowed(t, resp)
				return
			}
			assertInvalid(t, resp, "spec")
			assert.Contains(t, resp.Result.Details.Causes[0].Message, "cannot update worker spec if deletion timestamp is set. Requested changes: spec.pools")
		})
	}

	// Gardener's decoding refuses a value of such a member that does not decode, on CREATE too.
	t.Run("undecodable", func(t *testing.T) {
		w := worker()
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(w)
		require.NoError(t, err)
		obj := &unstructured.Unstructured{Object: content}
		pools, _, _ := unstructured.NestedSlice(obj.Object, "spec", "pools")
		pools[0].(map[string]any)["machineControllerManager"] = map[string]any{"machinePreserveTimeout": "soon"}
		require.NoError(t, unstructured.SetNestedSlice(obj.Object, pools, "spec", "pools"))
		resp := review(t, admissionv1.Create, obj, nil)
		assert.False(t, resp.Allowed)
		assert.EqualValues(t, http.StatusBadRequest, resp.Result.Code)
	})
}
