package landscape

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/gardener-knative/gardener-knative/pkg/enrolment"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/tenanttest"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/webhookaccess"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
	"github.com/gardener-knative/gardener-knative/sources"
)

// BinPackingTenant is the landscape's second shoot (Options.Webhooks): unlike Tenant's, its
// Shoot has the bin-packing scheduling profile, a system-components pool with a taint and
// MatchLabelKeysInPodTopologySpread off, so that the same Pod is admitted differently in each.
const BinPackingTenant tenant.Name = "shoot--local--binpacking"

// BinPackingShoot is the Shoot the Cluster of BinPackingTenant holds.
func BinPackingShoot() *gardencorev1beta1.Shoot {
	s := tenanttest.Shoot(BinPackingTenant)
	profile := gardencorev1beta1.SchedulingProfileBinPacking
	off := map[string]bool{"MatchLabelKeysInPodTopologySpread": false}
	s.Spec.Kubernetes.KubeScheduler = &gardencorev1beta1.KubeSchedulerConfig{Profile: &profile, KubernetesConfig: gardencorev1beta1.KubernetesConfig{FeatureGates: off}}
	s.Spec.Kubernetes.KubeAPIServer = &gardencorev1beta1.KubeAPIServerConfig{KubernetesConfig: gardencorev1beta1.KubernetesConfig{FeatureGates: off}}
	s.Spec.Provider.Workers = []gardencorev1beta1.Worker{{
		Name: "system", Minimum: 1, Maximum: 3,
		Taints: []corev1.Taint{{Key: "dedicated", Value: "system", Effect: corev1.TaintEffectNoSchedule}},
	}}
	return s
}

// webhookServer is GRM's webhook server process: multi-tenant, over TLS on loopback.
type webhookServer struct {
	replica
	serving *envtest.WebhookInstallOptions
}

// startWebhooks starts the second shoot and the webhook server, and enrols both shoots with it
// through the enrolment, as an operator does (webhooks/enrol).
func (l *Landscape) startWebhooks(ctx context.Context) error {
	var err error
	if l.BinPackingShoot, err = testenv.Start(); err != nil {
		return fmt.Errorf("shoot %s: %w", BinPackingTenant, err)
	}
	if l.BinPackingShootKubeconfig, err = writeKubeconfig(l.BinPackingShoot, filepath.Join(l.opts.Dir, "binpacking-shoot-kubeconfig")); err != nil {
		return err
	}
	if err := testenv.EnrollShoot(ctx, l.Env.Client, BinPackingTenant, l.BinPackingShoot, BinPackingShoot()); err != nil {
		return fmt.Errorf("enrolling the shoot %s: %w", BinPackingTenant, err)
	}
	serving := &envtest.WebhookInstallOptions{LocalServingHost: "127.0.0.1"}
	if err := serving.PrepWithoutInstalling(); err != nil {
		return err
	}
	l.webhooks = &webhookServer{serving: serving}
	addr := serving.LocalServingHost + ":" + strconv.Itoa(serving.LocalServingPort)
	// Without WEBHOOKS and a configuration file the server serves what a shoot's resource
	// manager has (the shoot role's defaults).
	cmd := exec.Command(filepath.Join(l.opts.BinDir, "resource-manager"))
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(serving.LocalServingPort), "KUBECONFIG="+l.Kubeconfig, "MULTI_TENANT=true",
		"TENANT_ACCESS_SECRET="+webhookaccess.SecretName,
		"TLS_CERT_FILE="+filepath.Join(serving.LocalServingCertDir, "tls.crt"), "TLS_KEY_FILE="+filepath.Join(serving.LocalServingCertDir, "tls.key"))
	if l.opts.FunctionOutput != nil {
		cmd.Stdout = l.opts.FunctionOutput("webhooks")
		cmd.Stderr = cmd.Stdout
	}
	if err := l.start(&l.webhooks.replica, "webhook server", cmd); err != nil {
		return err
	}
	l.WebhooksURL = "https://" + addr
	if err := waitTLSReady(ctx, l.WebhooksURL, serving.LocalServingCAData); err != nil {
		return err
	}
	for _, t := range []tenant.Name{Tenant, BinPackingTenant} {
		if _, err := enrolment.Enrol(ctx, l.Env.Client, t, sources.Namespace, enrolment.Options{CABundle: serving.LocalServingCAData, Server: l.WebhooksURL}); err != nil {
			return fmt.Errorf("enrolling %s with the webhook server: %w", t, err)
		}
	}
	return nil
}

// waitTLSReady waits until the server at url, whose certificate ca signs, is ready.
func waitTLSReady(ctx context.Context, url string, ca []byte) error {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return errors.New("no CA certificate")
	}
	c := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if resp, err := c.Get(url + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("the webhook server at %s is not ready after 30s", url)
}
