package cluster_test

import (
	"context"
	"crypto/x509"
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
	gardenTrustsCurrent(t)
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

// The runtime part's certificate rotates while the garden's kube-apiserver keeps asking
// extension-registration to admit ControllerRegistrations (server-side dry runs): the garden's
// registration follows through gardencabundle, the rotation waits for it, and not one request is
// refused; at the end the garden's registration verifies the new certificate.
func TestGardenRegistrationFollowsARotation(t *testing.T) {
	ctx := context.Background()
	secret := gardenTrustsCurrent(t)
	registration := &gardencorev1beta1.ControllerRegistration{ObjectMeta: metav1.ObjectMeta{Name: "e2e-rotation-registration"}}
	registration.Spec.Resources = []gardencorev1beta1.ControllerResource{{Kind: "Infrastructure", Type: "e2e-rotation"}}
	load := admitUnderLoad(t, garden, registration)
	defer load.stop()
	time.Sleep(3 * time.Second)
	started := time.Now()
	prepared, promoted, second := rotateCertificate(t, secret)
	served := webhookcertificates.Read(second.Data).Current
	reloaded := presentedByEveryPod(t, "extension-registration", served.Raw)
	time.Sleep(3 * time.Second)
	admitted, refused := load.stop()
	t.Logf("rotation of %s: prepared after %s, promoted %s later, presented by every pod %s later (%s in all); %d dry-run ControllerRegistration creations admitted in the garden, %d refused",
		secret.Name, prepared.Round(time.Second), promoted.Round(time.Second), reloaded.Round(time.Second), time.Since(started).Round(time.Second), admitted, len(refused))
	require.Greater(t, admitted, int64(10), "too few admissions to tell")
	require.Empty(t, refused, "admission refused in the garden during the rotation")
	require.NoError(t, verifiedByTheGarden(ctx, secret.Name, served), "after the rotation")
}

// gardenTrustsCurrent waits until the garden's registration of extension-registration verifies the
// certificate extension-registration-tls holds, and the Secret records the garden's bundle; it
// returns the Secret.
func gardenTrustsCurrent(t *testing.T) *corev1.Secret {
	t.Helper()
	ctx := context.Background()
	key := client.ObjectKey{Namespace: function.Runtime.Namespace(), Name: "extension-registration-tls"}
	secret := &corev1.Secret{}
	eventually(t, 3*time.Minute, "the garden's registration trusting "+key.Name, func() error {
		if err := c.Get(ctx, key, secret); err != nil {
			return err
		}
		current := webhookcertificates.Read(secret.Data).Current
		if current == nil {
			return errors.New("no certificate issued yet")
		}
		if err := verifiedByTheGarden(ctx, key.Name, current); err != nil {
			return err
		}
		if !webhookcertificates.GardenTrusts(secret, secret.Data[webhookcertificates.KeyBundle]) {
			return errors.New("the Secret does not record the garden's bundle yet")
		}
		return nil
	})
	return secret
}

// verifiedByTheGarden says whether every webhook of the garden's registration verifies
// certificate for the Service tlsService of the runtime part.
func verifiedByTheGarden(ctx context.Context, tlsService string, certificate *x509.Certificate) error {
	registration := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := garden.Get(ctx, client.ObjectKey{Name: "gardener-knative-extension-registration-garden"}, registration); err != nil {
		return err
	}
	host := tlsService + "." + function.Runtime.Namespace() + ".svc"
	for _, w := range registration.Webhooks {
		if !webhookcertificates.Verifies(w.ClientConfig.CABundle, certificate, host, time.Now()) {
			return fmt.Errorf("%s does not verify the certificate", w.Name)
		}
	}
	return nil
}
