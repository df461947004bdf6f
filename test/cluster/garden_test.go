package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/webhookcertificates"
	"github.com/gardener-knative/gardener-knative/pkg/function"
)

// The runtime part's registration in the virtual garden (config/garden/): gardencabundle gives it
// the CA of extension-registration's certificate, issued in the runtime cluster, and records that
// on the certificate's Secret; the garden's kube-apiserver then calls the server in the runtime
// cluster on writes of ControllerRegistrations: an invalid one is refused with gardener-apiserver's
// message, a valid one admitted (server-side dry runs), the server reading the garden's
// registrations with the runtime part's garden access.
func TestExtensionRegistrationValidatesTheGarden(t *testing.T) {
	ctx := context.Background()
	const tlsService = "extension-registration-tls"
	key := client.ObjectKey{Namespace: function.Runtime.Namespace(), Name: tlsService}
	host := tlsService + "." + key.Namespace + ".svc"
	eventually(t, 3*time.Minute, "the garden's registration trusting "+tlsService, func() error {
		secret := &corev1.Secret{}
		if err := c.Get(ctx, key, secret); err != nil {
			return err
		}
		current := webhookcertificates.Read(secret.Data).Current
		if current == nil {
			return errors.New("no certificate issued yet")
		}
		registration := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := garden.Get(ctx, client.ObjectKey{Name: "gardener-knative-extension-registration-garden"}, registration); err != nil {
			return err
		}
		for _, w := range registration.Webhooks {
			if !webhookcertificates.Verifies(w.ClientConfig.CABundle, current, host, time.Now()) {
				return fmt.Errorf("%s does not verify the certificate", w.Name)
			}
		}
		if !webhookcertificates.GardenTrusts(secret, secret.Data[webhookcertificates.KeyBundle]) {
			return errors.New("the Secret does not record the garden's bundle yet")
		}
		return nil
	})

	dryRun := client.DryRunAll
	invalid := &gardencorev1beta1.ControllerRegistration{ObjectMeta: metav1.ObjectMeta{Name: "e2e-invalid-registration"}}
	invalid.Spec.Resources = []gardencorev1beta1.ControllerResource{{Kind: "Infrastructure"}}
	err := garden.Create(ctx, invalid, dryRun)
	require.Error(t, err, "an invalid ControllerRegistration was admitted by the garden")
	require.ErrorContains(t, err, `admission webhook "validation.controllerregistrations.core.gardener.cloud" denied the request`)
	require.ErrorContains(t, err, "spec.resources[0].type: Required value")

	valid := &gardencorev1beta1.ControllerRegistration{ObjectMeta: metav1.ObjectMeta{Name: "e2e-valid-registration"}}
	valid.Spec.Resources = []gardencorev1beta1.ControllerResource{{Kind: "Infrastructure", Type: fmt.Sprintf("e2e-%d", time.Now().UnixNano()%100000)}}
	require.NoError(t, garden.Create(ctx, valid, dryRun), "a valid ControllerRegistration is admitted")
}
