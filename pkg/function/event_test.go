package function

import (
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func shootEvent(content map[string]any) Event {
	ev := Event{Kind: shootKind.GroupVersionKind, Key: Key{Namespace: "garden-dev", Name: "s"}}
	if content != nil {
		ev.Object = &unstructured.Unstructured{Object: content}
	}
	return ev
}

func TestDecode(t *testing.T) {
	shoot, err := Decode[gardencorev1beta1.Shoot](shootEvent(map[string]any{
		"metadata": map[string]any{"name": "s", "generation": int64(3)},
		"spec":     map[string]any{"seedName": "aws"},
	}))
	require.NoError(t, err)
	assert.Equal(t, "aws", *shoot.Spec.SeedName)

	shoot, err = Decode[gardencorev1beta1.Shoot](shootEvent(nil))
	assert.NoError(t, err, "a Reference-mode event has no object to decode")
	assert.Nil(t, shoot)

	_, err = Decode[gardencorev1beta1.Shoot](shootEvent(map[string]any{"spec": map[string]any{"seedName": 7}}))
	assert.ErrorContains(t, err, "decoding Shoot garden-dev/s")
	assert.True(t, isTerminal(err), "an object that does not decode never will")
}

func TestSpecUnobserved(t *testing.T) {
	at := func(generation, observed int64) Event {
		return shootEvent(map[string]any{"metadata": map[string]any{"generation": generation}, "status": map[string]any{"observedGeneration": observed}})
	}
	assert.True(t, at(2, 1).SpecUnobserved())
	assert.False(t, at(2, 2).SpecUnobserved())
	assert.True(t, shootEvent(map[string]any{"metadata": map[string]any{"generation": int64(1)}}).SpecUnobserved(), "no status yet")
	assert.False(t, shootEvent(nil).SpecUnobserved(), "nothing to tell without an object")
}
