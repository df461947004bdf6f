package extension_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	operatorv1alpha1 "github.com/gardener/gardener/pkg/apis/operator/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/extension"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

// Two replicas, an Extension created and deleted at once: A (the finalizer already there) reads
// no ControllerDeployment and creates one; meanwhile B sees the deletion, finds nothing to delete
// and removes the finalizer. The owner guard finds the Extension gone after A's creates and
// deletes the ControllerDeployment and ControllerRegistration again: nothing stays in the garden
// without an owner (issue case 4; before, controllerregistration kept installing them on seeds).
func TestRegistrationOfADeletedExtensionIsUndone(t *testing.T) {
	ctx := context.Background()
	const name = "local-quick"
	ext := newExtension(t, name, operatorv1alpha1.FinalizerName)
	b := newHarness(t)
	hold := &testenv.Create{Resource: "controllerdeployments"}
	a := functiontest.New(t, env, extension.Function, functiontest.AsFunction(), functiontest.At(start),
		functiontest.WithRESTConfig(testenv.Interleave(hold)))
	hold.Before = func() {
		require.NoError(t, env.Client.Delete(ctx, get(t, name, &operatorv1alpha1.Extension{})))
		b.Send("update", get(t, name, &operatorv1alpha1.Extension{}))
		require.Eventually(t, func() bool { return gone(t, name, &operatorv1alpha1.Extension{}) }, 5*time.Second, 50*time.Millisecond)
	}
	code, body := a.Post(a.Event("add", ext))
	assert.Equal(t, http.StatusOK, code, body)
	require.True(t, hold.Done(), "A created the ControllerDeployment")
	assert.True(t, gone(t, name, &gardencorev1beta1.ControllerDeployment{}), "the ControllerDeployment created for a deleted Extension is undone")
	assert.True(t, gone(t, name, &gardencorev1beta1.ControllerRegistration{}), "and no ControllerRegistration stays")
	err := env.Client.Get(ctx, client.ObjectKey{Name: name}, &operatorv1alpha1.Extension{})
	assert.True(t, apierrors.IsNotFound(err))
}
