package seed

import (
	"context"
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/scheme"
)

func event(content map[string]any, created, deleted bool) function.Event {
	return function.Event{Object: &unstructured.Unstructured{Object: content}, Created: created, Deleted: deleted}
}

func TestSpecUnobserved(t *testing.T) {
	unobserved := map[string]any{"metadata": map[string]any{"generation": int64(2)}, "status": map[string]any{"observedGeneration": int64(1)}}
	observed := map[string]any{"metadata": map[string]any{"generation": int64(2)}, "status": map[string]any{"observedGeneration": int64(2)}}
	assert.True(t, SpecUnobserved(event(unobserved, false, false)), "a spec change gardenlet has not seen")
	assert.False(t, SpecUnobserved(event(observed, false, false)), "a status update")
	assert.True(t, SpecUnobserved(event(observed, true, false)), "creation")
	assert.True(t, SpecUnobserved(event(observed, false, true)), "deletion")
}

func TestControllerInstallationPredicate(t *testing.T) {
	withRequired := func(status string) map[string]any {
		return map[string]any{"status": map[string]any{"conditions": []any{
			map[string]any{"type": "Installed", "status": "True"},
			map[string]any{"type": "Required", "status": status},
		}}}
	}
	assert.True(t, ControllerInstallationPredicate(event(withRequired("False"), false, false)), "no longer required: may go")
	assert.False(t, ControllerInstallationPredicate(event(withRequired("True"), false, false)))
	assert.False(t, ControllerInstallationPredicate(event(map[string]any{}, false, false)), "not yet reported")
	created := func(name string) map[string]any {
		return map[string]any{"metadata": map[string]any{"name": name}, "spec": map[string]any{
			"registrationRef": map[string]any{"name": "r"}, "seedRef": map[string]any{"name": "s"}}}
	}
	assert.False(t, ControllerInstallationPredicate(event(created(InstallationName("r", "s")), true, false)), "its own creation")
	assert.True(t, ControllerInstallationPredicate(event(created("r-abcde"), true, false)), "someone else's")
	assert.True(t, ControllerInstallationPredicate(event(map[string]any{}, false, true)), "a pending re-creation may proceed")
}

func TestMappers(t *testing.T) {
	ctx := context.Background()
	shoot := event(map[string]any{"spec": map[string]any{"seedName": "new"}, "status": map[string]any{"seedName": "old"}}, false, false)
	keys, err := MapShootToSeeds(ctx, nil, shoot)
	require.NoError(t, err)
	assert.Equal(t, []function.Key{{Name: "new"}, {Name: "old"}}, keys, "a migrating shoot counts for both seeds")

	settled := event(map[string]any{"spec": map[string]any{"seedName": "a"}, "status": map[string]any{"seedName": "a"}}, false, false)
	keys, _ = MapShootToSeeds(ctx, nil, settled)
	assert.Equal(t, []function.Key{{Name: "a"}}, keys)

	unscheduled := event(map[string]any{"spec": map[string]any{}}, true, false)
	keys, _ = MapShootToSeeds(ctx, nil, unscheduled)
	assert.Empty(t, keys)

	keys, _ = MapControllerInstallationToSeed(ctx, nil, event(map[string]any{"spec": map[string]any{"seedRef": map[string]any{"name": "s"}}}, false, true))
	assert.Equal(t, []function.Key{{Name: "s"}}, keys)
	keys, _ = MapToSpecSeed(ctx, nil, event(map[string]any{"spec": map[string]any{"seedName": "b"}}, true, false))
	assert.Equal(t, []function.Key{{Name: "b"}}, keys)
}

func TestMapControllerDeploymentToRegistration(t *testing.T) {
	registration := func(name string, deployments ...string) *gardencorev1beta1.ControllerRegistration {
		r := &gardencorev1beta1.ControllerRegistration{ObjectMeta: metav1.ObjectMeta{Name: name}}
		r.Spec.Deployment = &gardencorev1beta1.ControllerRegistrationDeployment{}
		for _, d := range deployments {
			r.Spec.Deployment.DeploymentRefs = append(r.Spec.Deployment.DeploymentRefs, gardencorev1beta1.DeploymentRef{Name: d})
		}
		return r
	}
	c := fake.NewClientBuilder().WithScheme(scheme.Gardener).WithObjects(registration("z", "d"), registration("b", "d"), registration("a", "other"), &gardencorev1beta1.ControllerRegistration{ObjectMeta: metav1.ObjectMeta{Name: "none"}}).Build()
	keys, err := MapControllerDeploymentToRegistration(context.Background(), c, function.Event{Key: function.Key{Name: "d"}})
	require.NoError(t, err)
	assert.Equal(t, []function.Key{{Name: "b"}}, keys, "one pass converges every seed: the first referencing registration")
	keys, err = MapControllerDeploymentToRegistration(context.Background(), c, function.Event{Key: function.Key{Name: "unused"}})
	require.NoError(t, err)
	assert.Empty(t, keys)
}

func TestSeedPredicate(t *testing.T) {
	observed := map[string]any{"metadata": map[string]any{"generation": int64(3)}, "status": map[string]any{"observedGeneration": int64(3)}}
	unobserved := map[string]any{"metadata": map[string]any{"generation": int64(4)}, "status": map[string]any{"observedGeneration": int64(3)}}
	deleting := map[string]any{"metadata": map[string]any{"generation": int64(3), "deletionTimestamp": "2026-01-01T00:00:00Z"}, "status": map[string]any{"observedGeneration": int64(3)}}
	assert.False(t, SeedPredicate(event(observed, false, false)), "gardenlet's status update")
	assert.True(t, SeedPredicate(event(unobserved, false, false)), "a spec change")
	assert.True(t, SeedPredicate(event(deleting, false, false)), "deletion requested")
	assert.True(t, SeedPredicate(event(observed, true, false)), "creation")
	assert.False(t, SeedPredicate(event(observed, false, true)), "gone")
}
