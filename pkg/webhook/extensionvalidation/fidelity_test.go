package extensionvalidation

import (
	"encoding/json"
	"reflect"
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
		{"unknown field unchanged", map[string]any{"futureField": "x"}, map[string]any{"futureField": "x"}},
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
		// Fields newer than druid's types we know are compared as JSON.
		{"unknown field changed", map[string]any{"futureField": "x"}, map[string]any{"futureField": "y"}},
		{"unknown field added", nil, map[string]any{"backup.futureField": int64(1)}},
		{"unknown field in a list element", map[string]any{"schedulingConstraints.tolerations": []any{map[string]any{"key": "a", "futureField": "x"}}},
			map[string]any{"schedulingConstraints.tolerations": []any{map[string]any{"key": "a", "futureField": "y"}}}},
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

// A deleting Worker's spec may not change, also in fields newer than our pinned Gardener
// types (here: a pool field and a spec field they lack), which a typed decode drops.
func TestWorkerChangesInFieldsNewerThanOurTypesAreDetected(t *testing.T) {
	withRaw := func(t *testing.T, set map[string]any) runtime.Object {
		t.Helper()
		w := worker()
		w.DeletionTimestamp = &deletionTimestamp
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(w)
		require.NoError(t, err)
		obj := &unstructured.Unstructured{Object: content}
		for path, value := range set {
			if path == "pool" {
				pools, _, _ := unstructured.NestedSlice(obj.Object, "spec", "pools")
				for k, v := range value.(map[string]any) {
					pools[0].(map[string]any)[k] = v
				}
				require.NoError(t, unstructured.SetNestedSlice(obj.Object, pools, "spec", "pools"))
				continue
			}
			require.NoError(t, unstructured.SetNestedField(obj.Object, value, "spec", path))
		}
		return obj
	}
	for _, tc := range []struct {
		name     string
		old, new map[string]any
		// changed is the field named, nil when allowed.
		changed []string
	}{
		// autoPreserveFailedMachineMax is a pool field of Gardener v1.150 that v1.146 lacks.
		{"pool field unchanged", map[string]any{"pool": map[string]any{"autoPreserveFailedMachineMax": int64(2)}}, map[string]any{"pool": map[string]any{"autoPreserveFailedMachineMax": int64(2)}}, nil},
		{"pool field changed", map[string]any{"pool": map[string]any{"autoPreserveFailedMachineMax": int64(2)}}, map[string]any{"pool": map[string]any{"autoPreserveFailedMachineMax": int64(3)}}, []string{"spec.pools"}},
		{"pool field added", nil, map[string]any{"pool": map[string]any{"autoPreserveFailedMachineMax": int64(1)}}, []string{"spec.pools"}},
		{"spec field removed", map[string]any{"futureSpec": "x"}, nil, []string{"spec.futureSpec"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := review(t, admissionv1.Update, withRaw(t, tc.new), withRaw(t, tc.old))
			if tc.changed == nil {
				assertAllowed(t, resp)
				return
			}
			assertInvalid(t, resp, "spec")
			assert.Contains(t, resp.Result.Details.Causes[0].Message, "Requested changes: "+tc.changed[0])
		})
	}
}

func TestUnknownMembers(t *testing.T) {
	var spec map[string]any
	require.NoError(t, json.Unmarshal([]byte(`{
		"replicas": 3, "future": 1,
		"etcd": {"quota": "8Gi", "futureEtcd": "x", "peerUrlTls": {"tlsCASecretRef": {"name": "ca", "dataKey": "k", "futureRef": 1}, "skipClientSANVerification": true}},
		"labels": {"a": "b"},
		"schedulingConstraints": {"tolerations": [{"key": "a"}, {"key": "b", "futureToleration": 2}]}
	}`), &spec))
	assert.Equal(t, map[string]any{
		"future":                float64(1),
		"etcd":                  map[string]any{"futureEtcd": "x", "peerUrlTls": map[string]any{"tlsCASecretRef": map[string]any{"futureRef": float64(1)}}},
		"schedulingConstraints": map[string]any{"tolerations": []any{nil, map[string]any{"futureToleration": float64(2)}}},
	}, unknownMembers(reflect.TypeFor[etcdSpec](), spec))
	assert.Nil(t, unknownMembers(reflect.TypeFor[etcdSpec](), map[string]any{"replicas": 1, "etcd": map[string]any{"quota": "1Gi"}}))
}
