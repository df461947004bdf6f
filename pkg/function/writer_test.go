package function

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gomodules.xyz/jsonpatch/v2"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func TestAddMissingParents(t *testing.T) {
	c := &change{
		ops: []jsonpatch.Operation{
			{Operation: "add", Path: "/status/phase", Value: "Ready"},
			{Operation: "add", Path: "/status/conditions", Value: []any{}},
			{Operation: "add", Path: "/metadata/annotations/a~1b", Value: "x"},
			{Operation: "remove", Path: "/spec/gone/field"},
			{Operation: "replace", Path: "/spec/kept", Value: "new"},
		},
		after: map[string]any{
			"metadata": map[string]any{"annotations": map[string]any{"a/b": "x"}},
			"spec":     map[string]any{"kept": "new"},
			"status":   map[string]any{"phase": "Ready", "conditions": []any{}},
		},
	}
	server := map[string]any{"metadata": map[string]any{}, "spec": map[string]any{"kept": "old", "unknown": 1}}
	fixed := c.addMissingParents(server)
	assert.Equal(t, []jsonpatch.Operation{
		{Operation: "add", Path: "/status", Value: map[string]any{"phase": "Ready", "conditions": []any{}}},
		{Operation: "add", Path: "/metadata/annotations", Value: map[string]any{"a/b": "x"}},
		{Operation: "replace", Path: "/spec/kept", Value: "new"},
	}, fixed.ops, "missing parents are added whole, once; removals of what is missing are dropped; the rest stays")

	complete := map[string]any{"metadata": map[string]any{"annotations": map[string]any{}}, "spec": map[string]any{"gone": map[string]any{"field": 1}}, "status": map[string]any{}}
	assert.Nil(t, c.addMissingParents(complete), "nothing missing: no rewrite")
}

// PatchSubResource sends a JSON patch of what the mutation changed to the named subresource,
// led by the resourceVersion read (so the server refuses it if the object changed), and nothing
// when the mutation changed nothing.
func TestPatchSubResource(t *testing.T) {
	type sent struct {
		subResource string
		patchType   types.PatchType
		ops         []map[string]any
	}
	var got *sent
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		SubResourcePatch: func(_ context.Context, _ client.Client, subResource string, obj client.Object, patch client.Patch, _ ...client.SubResourcePatchOption) error {
			data, err := patch.Data(obj)
			if err != nil {
				return err
			}
			got = &sent{subResource: subResource, patchType: patch.Type()}
			return json.Unmarshal(data, &got.ops)
		},
	}).Build()
	w := NewWriter(c)
	csr := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "csr", UID: "u", ResourceVersion: "7"}}

	changed, err := w.PatchSubResource(context.Background(), csr, "approval", func() {
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "R", Message: "M",
		})
	})
	require.NoError(t, err)
	assert.True(t, changed)
	require.NotNil(t, got)
	assert.Equal(t, "approval", got.subResource)
	assert.Equal(t, types.JSONPatchType, got.patchType)
	require.Len(t, got.ops, 2)
	assert.Equal(t, map[string]any{"op": "replace", "path": "/metadata/resourceVersion", "value": "7"}, got.ops[0])
	assert.Equal(t, "add", got.ops[1]["op"])
	assert.Equal(t, "/status/conditions", got.ops[1]["path"])
	conditions := got.ops[1]["value"].([]any)
	require.Len(t, conditions, 1)
	assert.Equal(t, "Approved", conditions[0].(map[string]any)["type"])

	got = nil
	changed, err = w.PatchSubResource(context.Background(), csr, "approval", func() {})
	require.NoError(t, err)
	assert.False(t, changed)
	assert.Nil(t, got, "nothing changed, nothing sent")
}
