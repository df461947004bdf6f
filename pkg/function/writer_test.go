package function

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"gomodules.xyz/jsonpatch/v2"
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
