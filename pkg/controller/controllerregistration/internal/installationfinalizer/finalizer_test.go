package installationfinalizer

import (
	"context"
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
)

var bySeed = &Finalizer{
	Kind:  kinds.Seed,
	Field: "spec.seedRef.name",
	Referenced: func(ci *gardencorev1beta1.ControllerInstallation) string {
		if ci.Spec.SeedRef == nil {
			return ""
		}
		return ci.Spec.SeedRef.Name
	},
}

func TestPredicate(t *testing.T) {
	object := func(deleting bool, finalizers ...string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		u.SetFinalizers(finalizers)
		if deleting {
			u.SetDeletionTimestamp(&metav1.Time{Time: time.Now()})
		}
		return u
	}
	assert.True(t, bySeed.Predicate(function.Event{Object: object(false)}), "finalizer to add")
	assert.False(t, bySeed.Predicate(function.Event{Object: object(false, FinalizerName)}), "protected already")
	assert.True(t, bySeed.Predicate(function.Event{Object: object(true, FinalizerName)}), "deletion to release")
	assert.False(t, bySeed.Predicate(function.Event{Object: object(true, "other")}), "released already")
	assert.False(t, bySeed.Predicate(function.Event{Object: object(false), Deleted: true}), "gone")
}

func TestIndexAndMapper(t *testing.T) {
	ci := &gardencorev1beta1.ControllerInstallation{}
	assert.Empty(t, bySeed.Index(ci), "no seedRef")
	ci.Spec.SeedRef = &corev1.ObjectReference{Name: "s"}
	assert.Equal(t, []string{"s"}, bySeed.Index(ci))

	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"seedRef": map[string]any{"name": "s"}, "registrationRef": map[string]any{"name": "r"}}}}
	keys, err := bySeed.MapInstallation(context.Background(), nil, function.Event{Object: u, Deleted: true})
	require.NoError(t, err)
	assert.Equal(t, []function.Key{{Name: "s"}}, keys)
	assert.True(t, InstallationDeleted(function.Event{Deleted: true}))
	assert.False(t, InstallationDeleted(function.Event{}))
}
