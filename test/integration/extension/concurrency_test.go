package extension_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	operatorv1alpha1 "github.com/gardener/gardener/pkg/apis/operator/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/extension"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

// holdFirstCreate runs before (once) ahead of the first create of the resource (the plural)
// through the client it is installed in.
func holdFirstCreate(resource string, before *func()) func(*rest.Config) {
	var once sync.Once
	return func(cfg *rest.Config) {
		cfg.Wrap(func(next http.RoundTripper) http.RoundTripper {
			return testenv.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
				if req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/"+resource) {
					body, err := io.ReadAll(req.Body)
					if err != nil {
						return nil, err
					}
					req.Body = io.NopCloser(bytes.NewReader(body))
					once.Do(func() { (*before)() })
				}
				return next.RoundTrip(req)
			})
		})
	}
}

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
	var before func()
	a := functiontest.New(t, env, extension.Function, functiontest.AsFunction(), functiontest.At(start),
		functiontest.WithRESTConfig(holdFirstCreate("controllerdeployments", &before)))
	before = func() {
		require.NoError(t, env.Client.Delete(ctx, get(t, name, &operatorv1alpha1.Extension{})))
		b.Send("update", get(t, name, &operatorv1alpha1.Extension{}))
		require.Eventually(t, func() bool { return gone(t, name, &operatorv1alpha1.Extension{}) }, 5*time.Second, 50*time.Millisecond)
	}
	code, body := a.Post(a.Event("add", ext))
	assert.Equal(t, http.StatusOK, code, body)
	assert.True(t, gone(t, name, &gardencorev1beta1.ControllerDeployment{}), "the ControllerDeployment created for a deleted Extension is undone")
	assert.True(t, gone(t, name, &gardencorev1beta1.ControllerRegistration{}), "and no ControllerRegistration stays")
	err := env.Client.Get(ctx, client.ObjectKey{Name: name}, &operatorv1alpha1.Extension{})
	assert.True(t, apierrors.IsNotFound(err))
}
