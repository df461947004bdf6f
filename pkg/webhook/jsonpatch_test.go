package webhook

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gomodules.xyz/jsonpatch/v2"
)

// sortedOps are operations in a canonical order with their values encoded: CreatePatch's come
// in map order.
func sortedOps(t *testing.T, ops []jsonpatch.Operation) []string {
	t.Helper()
	out := make([]string, 0, len(ops))
	for _, op := range ops {
		encoded, err := json.Marshal(op)
		require.NoError(t, err)
		out = append(out, string(encoded))
	}
	slices.Sort(out)
	return out
}

func assertSamePatch(t *testing.T, a, b string) {
	t.Helper()
	want, wantErr := jsonpatch.CreatePatch([]byte(a), []byte(b))
	got, err := createPatch([]byte(a), []byte(b))
	if wantErr != nil {
		assert.Error(t, err, "%s → %s", a, b)
		return
	}
	require.NoError(t, err, "%s → %s", a, b)
	assert.Equal(t, sortedOps(t, want), sortedOps(t, got), "%s → %s", a, b)
}

func TestCreatePatchAnswersAsJSONPatch(t *testing.T) {
	for _, tc := range [][2]string{
		{`{}`, `{}`},
		{`{"a":1}`, `{"a":1}`},
		{`{"a":1}`, `{"a":2}`},
		{`{"a":1}`, `{"b":1}`},
		{`{"metadata":{"labels":{"a/b~c":"x"}}}`, `{"metadata":{"labels":{"a/b~c":"y","d":"e"}}}`},
		{`{"a":{"b":1}}`, `{"a":"b"}`},
		{`{"a":"b"}`, `{"a":{"b":1}}`},
		{`{"a":null}`, `{"a":{"b":1}}`},
		{`{"a":[1,2,3]}`, `{"a":[1,{"x":2}]}`},
		{`{"a":1.0}`, `{"a":1}`},
		{`{"a": 1}`, `{"a":1}`},
		{`{"a":{"b":{"c":{"d":{"e":{"f":1}}}}}}`, `{"a":{"b":{"c":{"d":{"e":{"f":2,"g":3}}}}}}`},
		{`[1,2]`, `[2]`},
		{`"x"`, `"y"`},
		{`{"a":1}`, `not json`},
		{`{"a":`, `{"a":1}`},
	} {
		assertSamePatch(t, tc[0], tc[1])
	}
}

// randomValue is a JSON value of at most depth levels (a scalar at depth 0 or below, since
// mutate recurses past 0), with keys and strings from a small alphabet so that documents
// share members.
func randomValue(r *rand.Rand, depth int) any {
	switch n := r.IntN(7); {
	case depth <= 0 || n == 0:
		return []any{nil, true, false, 1, 2.5, "x", "y/z", "~"}[r.IntN(8)]
	case n <= 3:
		obj := map[string]any{}
		for range r.IntN(5) {
			obj[[]string{"a", "b", "c", "d/e", "f~g"}[r.IntN(5)]] = randomValue(r, depth-1)
		}
		return obj
	default:
		arr := make([]any, r.IntN(4))
		for i := range arr {
			arr[i] = randomValue(r, depth-1)
		}
		return arr
	}
}

// mutate changes a few members of v, as a webhook would.
func mutate(r *rand.Rand, v any, depth int) any {
	obj, ok := v.(map[string]any)
	if !ok || r.IntN(4) == 0 {
		if r.IntN(2) == 0 {
			return v
		}
		return randomValue(r, depth)
	}
	out := map[string]any{}
	for k, member := range obj {
		switch r.IntN(6) {
		case 0: // removed
		case 1, 2:
			out[k] = mutate(r, member, depth-1)
		default:
			out[k] = member
		}
	}
	if r.IntN(3) == 0 {
		out[fmt.Sprintf("new%d", r.IntN(3))] = randomValue(r, depth-1)
	}
	return out
}

// createPatch answers as jsonpatch.CreatePatch on random documents and random mutations of
// them (seeded; the seed is printed).
func TestCreatePatchAnswersAsJSONPatchOnRandomDocuments(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, seed))
	for range 3000 {
		doc := map[string]any{}
		for range 1 + r.IntN(5) {
			doc[[]string{"metadata", "spec", "status", "a/b"}[r.IntN(4)]] = randomValue(r, 6)
		}
		a, err := json.Marshal(doc)
		require.NoError(t, err)
		b, err := json.Marshal(mutate(r, doc, 6))
		require.NoError(t, err)
		assertSamePatch(t, string(a), string(b))
		if t.Failed() {
			return
		}
	}
}

// The overhead pod: a label added and a field removed give CreatePatch's operations.
func TestCreatePatchOnAPod(t *testing.T) {
	for name, mutation := range overheadMutations {
		t.Run(name, func(t *testing.T) {
			pod := overheadPod()
			before, err := json.Marshal(pod)
			require.NoError(t, err)
			mutation(pod)
			after, err := json.Marshal(pod)
			require.NoError(t, err)
			assertSamePatch(t, string(before), string(after))
			assert.True(t, strings.Contains(string(after), "mutated"))
		})
	}
}
