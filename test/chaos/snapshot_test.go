package chaos

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gardener-knative/gardener-knative/pkg/tenantproof"
)

// installation is a ControllerInstallation as two runs write it: generated name, UID, times and
// resourceVersion differ; so does the name of the namespace derived from it.
func installation(name, uid, rv, when, seed string) unstructured.Unstructured {
	return unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "core.gardener.cloud/v1beta1", "kind": "ControllerInstallation",
		"metadata": map[string]any{
			"name": name, "generateName": "sample-", "uid": uid, "resourceVersion": rv, "creationTimestamp": when,
			"labels": map[string]any{"namespace": "extension-" + name},
		},
		"spec":   map[string]any{"seedRef": map[string]any{"name": seed}},
		"status": map[string]any{"conditions": []any{map[string]any{"type": "Installed", "lastUpdateTime": when}}},
	}}
}

func secret(name, token string) unstructured.Unstructured {
	return unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": name, "namespace": "garden"},
		"data": map[string]any{"token": token},
	}}
}

func TestTheSameOutcomeInTwoRunsCompares(t *testing.T) {
	first := normalise(map[string][]unstructured.Unstructured{
		"garden controllerinstallations.core.gardener.cloud": {installation("sample-abcde", "u1", "10", "2026-11-27T10:00:00Z", "local")},
		"garden secrets": {secret("token", "eyJhbGciOi.first")},
	})
	second := normalise(map[string][]unstructured.Unstructured{
		"garden controllerinstallations.core.gardener.cloud": {installation("sample-xyzzy", "u2", "77", "2026-11-27T11:30:00Z", "local")},
		"garden secrets": {secret("token", "eyJhbGciOi.second")},
	})
	compared, diffs := divergence(first, second)
	assert.Equal(t, 2, compared)
	assert.Empty(t, diffs)
}

func TestADifferentOutcomeDiverges(t *testing.T) {
	want := normalise(map[string][]unstructured.Unstructured{
		"garden controllerinstallations.core.gardener.cloud": {installation("sample-abcde", "u1", "10", "2026-11-27T10:00:00Z", "local")},
		"garden secrets": {secret("token", "t")},
	})
	otherSeed := normalise(map[string][]unstructured.Unstructured{
		"garden controllerinstallations.core.gardener.cloud": {installation("sample-abcde", "u1", "10", "2026-11-27T10:00:00Z", "other")},
		"garden secrets": {secret("token", "t")},
	})
	_, diffs := divergence(want, otherSeed)
	assert.Len(t, diffs, 1, "a field of the outcome differs")

	missing := normalise(map[string][]unstructured.Unstructured{
		"garden controllerinstallations.core.gardener.cloud": {installation("sample-abcde", "u1", "10", "2026-11-27T10:00:00Z", "local")},
	})
	_, diffs = divergence(want, missing)
	assert.Len(t, diffs, 1, "an object missing")
	assert.Contains(t, diffs[0], "only in the fault-free run")

	deleting := normalise(map[string][]unstructured.Unstructured{
		"garden controllerinstallations.core.gardener.cloud": {installation("sample-abcde", "u1", "10", "2026-11-27T10:00:00Z", "local")},
		"garden secrets": {secret("token", "t")},
	})
	deleting["garden secrets garden/token"].(map[string]any)["metadata"].(map[string]any)["deletionTimestamp"] = "<set>"
	_, diffs = divergence(want, deleting)
	assert.NotEmpty(t, diffs, "an object still being deleted is not one deleted")
}

// The tenant proof keys are named by the second they were made in: two runs with as many keys
// compare equal, a run with another number of keys does not.
func TestTenantProofKeysCompareByNumber(t *testing.T) {
	keys := func(names ...string) unstructured.Unstructured {
		data := map[string]any{}
		for _, n := range names {
			data[n] = "c2VjcmV0"
		}
		return unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": tenantproof.SecretName, "namespace": "gardener-knative"},
			"data": data,
		}}
	}
	first := normalise(map[string][]unstructured.Unstructured{"garden secrets": {keys("key-1796663351")}})
	second := normalise(map[string][]unstructured.Unstructured{"garden secrets": {keys("key-1796663393")}})
	_, diffs := divergence(first, second)
	assert.Empty(t, diffs)
	third := normalise(map[string][]unstructured.Unstructured{"garden secrets": {keys("key-1796663393", "key-1796665000")}})
	_, diffs = divergence(first, third)
	assert.NotEmpty(t, diffs)
}
