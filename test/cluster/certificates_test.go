package cluster_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"testing"
	"time"

	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/webhookcertificates"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
)

// The fail-closed servers' certificate rotates while admission requests run
// (docs/functions/webhookcertificates.md): an operator asks for a rotation on the Secret, the new
// CA joins every registration's bundle, the new certificate is served once every registration
// has trusted it for the promotion delay, and the pods present it after kubelet refreshed their
// volume. A shoot's registrations (kept by shootcabundle) follow: the rotation waits for them.
// Not one admission request is refused on the way, in the seed or the shoot, and every
// registration verifies the new certificate.
func TestWebhookCertificateRotation(t *testing.T) {
	const service, tlsService = "grm-webhooks", "grm-webhooks-tls"
	ctx := context.Background()
	key := client.ObjectKey{Namespace: "gardener-knative", Name: tlsService}
	eventually(t, 3*time.Minute, service+" with two Ready pods", func() error {
		if n := len(readyPodsOf(t, service)); n != 2 {
			return fmt.Errorf("%d Ready pods", n)
		}
		return nil
	})
	pod := tokenMountPod(t, "r")
	assertTokenMounted(t, c, pod)
	secret := &corev1.Secret{}
	require.NoError(t, c.Get(ctx, key, secret))
	first := webhookcertificates.Read(secret.Data).Current
	require.NotNil(t, first, "webhookcertificates issued no certificate")

	load := admitUnderLoad(t, c, pod)
	defer load.stop()
	// A shoot whose kube-apiserver calls grm-webhooks-tls by url (the default part; the
	// scale-to-zero part's go through the ingress): its registrations follow the rotation too.
	var tenantShoot *shoot
	var shootLoad *admissionLoad
	if os.Getenv("CLUSTER_SCALE_TO_ZERO") == "" {
		tenantShoot = startShoot(t, tenant.Name(fmt.Sprintf("shoot--e2e--c%d", time.Now().Unix()%100000)))
		shootPod := noAutomountPod(t, tenantShoot.env.Client)
		assertTokenMounted(t, tenantShoot.env.Client, shootPod)
		shootLoad = admitUnderLoad(t, tenantShoot.env.Client, shootPod)
		defer shootLoad.stop()
	}
	time.Sleep(3 * time.Second)
	started := time.Now()
	prepared, promoted, second := rotateCertificate(t, secret)
	served := webhookcertificates.Read(second.Data).Current
	reloaded := presentedByEveryPod(t, service, served.Raw)
	time.Sleep(3 * time.Second)
	admitted, refused := load.stop()
	t.Logf("rotation: prepared after %s, promoted %s later, presented by every pod %s later (%s in all); %d dry-run Pod creations admitted, %d refused",
		prepared.Round(time.Second), promoted.Round(time.Second), reloaded.Round(time.Second), time.Since(started).Round(time.Second), admitted, len(refused))
	require.Greater(t, admitted, int64(10), "too few admissions to tell")
	require.Empty(t, refused, "admission refused during the rotation")
	if shootLoad != nil {
		admitted, refused := shootLoad.stop()
		t.Logf("rotation: %d dry-run Pod creations admitted in the shoot, %d refused", admitted, len(refused))
		require.Greater(t, admitted, int64(10), "too few admissions in the shoot to tell")
		require.Empty(t, refused, "admission refused in the shoot during the rotation")
	}

	host := tlsService + ".gardener-knative.svc"
	bundles := 0
	for _, cc := range registrationConfigs(t, c, map[string]string{"app.kubernetes.io/part-of": "gardener-knative"}) {
		if cc.Service != nil && cc.Service.Name == tlsService {
			bundles++
			assert.True(t, webhookcertificates.Verifies(cc.CABundle, served, host, time.Now()), "a registration of %s does not verify the new certificate", tlsService)
		}
	}
	require.NotZero(t, bundles, "no registration names %s", tlsService)
	if tenantShoot != nil {
		inShoot := 0
		for _, cc := range registrationConfigs(t, tenantShoot.env.Client, tenant.RegistrationLabels) {
			if u, err := url.Parse(ptr.Deref(cc.URL, "")); err == nil && u.Hostname() == host {
				inShoot++
				assert.True(t, webhookcertificates.Verifies(cc.CABundle, served, host, time.Now()), "a shoot's registration of %s does not verify the new certificate", tlsService)
			}
		}
		require.NotZero(t, inShoot, "no registration of the shoot names %s", host)
	}
}

// rotateCertificate asks for a rotation of the serving certificate in secret, as an operator does,
// and waits until its new certificate is served: how long until it was prepared, and then
// promoted, and the Secret then. The trust is recorded by webhookcertificates' sweep (every 5
// minutes) once every registration (the shoots', the garden's too) carries the new CA; the
// promotion follows the delay later, brought by an operator's reconcile once the delay has passed
// rather than by the next sweep.
func rotateCertificate(t *testing.T, secret *corev1.Secret) (prepared, promoted time.Duration, second *corev1.Secret) {
	t.Helper()
	ctx := context.Background()
	key := client.ObjectKeyFromObject(secret)
	first := webhookcertificates.Read(secret.Data).Current
	annotate(t, secret, v1beta1constants.OperationRotateCAStart)
	prepared = eventually(t, 3*time.Minute, key.Name+"'s rotation prepared", func() error {
		if err := c.Get(ctx, key, secret); err != nil {
			return err
		}
		if webhookcertificates.Read(secret.Data).Pending == nil || secret.Annotations[v1beta1constants.GardenerOperation] != "" {
			return errors.New("no certificate pending yet")
		}
		return nil
	})
	promoted = eventually(t, 8*time.Minute, key.Name+"'s new certificate promoted", func() error {
		if err := c.Get(ctx, key, secret); err != nil {
			return err
		}
		if current := webhookcertificates.Read(secret.Data).Current; current != nil && string(current.Raw) != string(first.Raw) {
			second = secret.DeepCopy()
			return nil
		}
		if since, err := time.Parse(time.RFC3339, secret.Annotations[webhookcertificates.AnnotationTrustedSince]); err == nil &&
			time.Since(since) > time.Minute+5*time.Second && secret.Annotations[v1beta1constants.GardenerOperation] == "" {
			annotate(t, secret, v1beta1constants.GardenerOperationReconcile)
		}
		return errors.New("still serving the old certificate")
	})
	return prepared, promoted, second
}

// presentedByEveryPod waits until every Ready pod of service presents certificate on its own TLS
// port (kubelet refreshes the Secret's volume within a minute or so).
func presentedByEveryPod(t *testing.T, service string, certificate []byte) time.Duration {
	t.Helper()
	return eventually(t, 4*time.Minute, "every pod of "+service+" presents the new certificate", func() error {
		for _, p := range readyPodsOf(t, service) {
			presented, err := presentedCertificate(p.Status.PodIP)
			if err != nil {
				return fmt.Errorf("%s: %w", p.Name, err)
			}
			if string(presented) != string(certificate) {
				return fmt.Errorf("%s presents the old certificate", p.Name)
			}
		}
		return nil
	})
}

// registrationConfigs are the client configurations of every webhook of the registrations with
// the labels.
func registrationConfigs(t *testing.T, cl client.Client, labels map[string]string) []admissionregistrationv1.WebhookClientConfig {
	t.Helper()
	ctx := context.Background()
	mutating := &admissionregistrationv1.MutatingWebhookConfigurationList{}
	require.NoError(t, cl.List(ctx, mutating, client.MatchingLabels(labels)))
	validating := &admissionregistrationv1.ValidatingWebhookConfigurationList{}
	require.NoError(t, cl.List(ctx, validating, client.MatchingLabels(labels)))
	var configs []admissionregistrationv1.WebhookClientConfig
	for _, m := range mutating.Items {
		for _, w := range m.Webhooks {
			configs = append(configs, w.ClientConfig)
		}
	}
	for _, v := range validating.Items {
		for _, w := range v.Webhooks {
			configs = append(configs, w.ClientConfig)
		}
	}
	return configs
}

// annotate sets gardener.cloud/operation on a Secret, as an operator does with kubectl annotate.
func annotate(t *testing.T, secret *corev1.Secret, operation string) {
	t.Helper()
	patch := client.MergeFrom(secret.DeepCopy())
	metav1.SetMetaDataAnnotation(&secret.ObjectMeta, v1beta1constants.GardenerOperation, operation)
	require.NoError(t, c.Patch(context.Background(), secret, patch))
}

// presentedCertificate is the certificate a server presents on its own TLS port (the one
// grm-webhooks-tls targets), read straight from the pod's address.
func presentedCertificate(podIP string) ([]byte, error) {
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	conn, err := tls.DialWithDialer(dialer, "tcp", net.JoinHostPort(podIP, "8443"), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only reads what is presented
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].Raw, nil
}
