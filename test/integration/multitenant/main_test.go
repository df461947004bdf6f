// Package multitenant_test proves the multi-tenant webhook server against four real control
// planes: a seed, whose shoot control-plane namespaces hold each shoot's access Secrets and
// Cluster, and three shoots that differ in everything gardenlet configures per shoot, whose
// kube-apiservers call the seed's one webhook server over TLS through the registrations the
// enrolment (pkg/enrolment) renders for each, at its own tenant path.
package multitenant_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubernetesscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	testclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/gardener-knative/gardener-knative/pkg/bootstrap"
	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	enrolmentpkg "github.com/gardener-knative/gardener-knative/pkg/enrolment"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/clients"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/tenanttest"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/webhookaccess"
	"github.com/gardener-knative/gardener-knative/pkg/tenantproof"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
	"github.com/gardener-knative/gardener-knative/pkg/webhook"
	"github.com/gardener-knative/gardener-knative/webhooks"
)

// shoot is one shoot: its control plane, its control-plane namespace in the seed (its tenant)
// and the Shoot its Cluster holds (its settings come from it).
type shoot struct {
	tenant tenant.Name
	env    *testenv.Env
	object *gardencorev1beta1.Shoot
	// settings are what gardenlet v1.150 derives from object for the shoot's resource manager.
	settings tenant.Settings
}

// The three shoots differ in everything gardenlet configures per shoot: A is a default shoot
// (balanced profile, one pool without taints, default feature gates); B has the bin-packing
// profile, a system-components pool with a taint, MatchLabelKeysInPodTopologySpread off in both
// components and AuthorizeWithSelectors off; C is workerless. Each has its own domain.
var (
	seed   *testenv.Env
	shootA = newShoot("shoot--test--a", nil)
	shootB = newShoot("shoot--test--b", func(s *gardencorev1beta1.Shoot) {
		profile := gardencorev1beta1.SchedulingProfileBinPacking
		gates := map[string]bool{"MatchLabelKeysInPodTopologySpread": false}
		s.Spec.Kubernetes.KubeScheduler = &gardencorev1beta1.KubeSchedulerConfig{Profile: &profile, KubernetesConfig: gardencorev1beta1.KubernetesConfig{FeatureGates: gates}}
		s.Spec.Kubernetes.KubeAPIServer = &gardencorev1beta1.KubeAPIServerConfig{KubernetesConfig: gardencorev1beta1.KubernetesConfig{
			FeatureGates: map[string]bool{"MatchLabelKeysInPodTopologySpread": false, "AuthorizeWithSelectors": false},
		}}
		s.Spec.Provider.Workers = []gardencorev1beta1.Worker{{
			Name: "system", Minimum: 1, Maximum: 3, SystemComponents: &gardencorev1beta1.WorkerSystemComponents{Allow: true},
			Taints: []corev1.Taint{{Key: "dedicated", Value: "system", Effect: corev1.TaintEffectNoSchedule}},
		}}
	})
	shootC = newShoot("shoot--test--c", func(s *gardencorev1beta1.Shoot) { s.Spec.Provider.Workers = nil })
	shoots = []*shoot{shootA, shootB, shootC}

	serving   *envtest.WebhookInstallOptions
	tenants   *clients.Clients
	serverReg = prometheus.NewRegistry()
	// proofKey signs the tenants' proofs: the seed's first key, made before the shoots start
	// (their authorizer files carry it).
	proofKey tenantproof.Key
)

// tenantPath is path below tenant t with t's proof, as the enrolment renders it.
func tenantPath(t tenant.Name, path string) string {
	return "/" + string(t) + tenantproof.Separator + proofKey.Proof(t) + path
}

func newShoot(t tenant.Name, mutate func(*gardencorev1beta1.Shoot)) *shoot {
	s := &shoot{tenant: t, object: tenanttest.Shoot(t)}
	if mutate != nil {
		mutate(s.object)
	}
	s.settings = tenant.SettingsOf(s.object, tenanttest.SeedObject())
	return s
}

// authorizerPath is the node-agent authorizer's path below a tenant.
const authorizerPath = "/webhooks/auth/nodeagent"

func TestMain(m *testing.M) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

// enrolment is how the suite enrols its shoots: the one local server for every Service, and its CA.
func enrolment() enrolmentpkg.Options {
	return enrolmentpkg.Options{CABundle: serving.LocalServingCAData, Server: "https://" + servingAddr(), Key: proofKey}
}

func run(m *testing.M) (int, error) {
	serving = &envtest.WebhookInstallOptions{LocalServingHost: "127.0.0.1"}
	if err := serving.PrepWithoutInstalling(); err != nil {
		return 0, err
	}
	defer func() { _ = serving.Cleanup() }()

	var err error
	if seed, err = testenv.Start(); err != nil {
		return 0, fmt.Errorf("seed control plane: %w", err)
	}
	defer func() { _ = seed.Stop() }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The servers' namespace: their ServiceAccount, which the enrolment's RoleBindings name, and
	// the tenant proof keys.
	if err := seed.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gardener-knative"}}); err != nil {
		return 0, err
	}
	if proofKey, err = tenantproof.SigningKey(ctx, seed.Client, "gardener-knative", time.Now()); err != nil {
		return 0, err
	}
	for _, s := range shoots {
		// As test/integration/webhooks does: the shoot's kube-apiserver asks the seed's server
		// (at its tenant path) for every authorization RBAC does not grant; the enrolment's
		// file, which a workerless shoot (no node agents) does not get.
		args := map[string]string{}
		authz, err := enrolmentpkg.AuthorizerKubeconfig(s.tenant, &s.settings, enrolment())
		if err != nil {
			return 0, err
		}
		if authz != nil {
			path := filepath.Join(serving.LocalServingCertDir, "authorization-webhook-"+string(s.tenant)+".kubeconfig")
			if err := os.WriteFile(path, authz, 0o600); err != nil {
				return 0, err
			}
			args = map[string]string{
				"authorization-mode":                           "RBAC,Webhook",
				"authorization-webhook-config-file":            path,
				"authorization-webhook-version":                "v1",
				"authorization-webhook-cache-authorized-ttl":   "0s",
				"authorization-webhook-cache-unauthorized-ttl": "0s",
			}
		}
		if s.env, err = testenv.StartWith(testenv.Options{APIServerArgs: args}); err != nil {
			return 0, fmt.Errorf("shoot %s control plane: %w", s.tenant, err)
		}
		defer func(e *testenv.Env) { _ = e.Stop() }(s.env)
	}

	for _, s := range shoots {
		if err := testenv.EnrollShoot(ctx, seed.Client, s.tenant, s.env, s.object); err != nil {
			return 0, fmt.Errorf("enrolling %s: %w", s.tenant, err)
		}
	}
	served, err := startServer(ctx)
	if err != nil {
		return 0, err
	}
	// The operator's part (docs/deployment.md): the enrolment command's, for each shoot.
	for _, s := range shoots {
		if _, err := enrolmentpkg.Enrol(ctx, seed.Client, s.tenant, "gardener-knative", enrolment()); err != nil {
			return 0, fmt.Errorf("enrolling %s with the servers: %w", s.tenant, err)
		}
	}
	code := m.Run()
	cancel()
	if err := <-served; err != nil {
		return code, fmt.Errorf("webhook server: %w", err)
	}
	return code, nil
}

// startServer serves every webhook a shoot's resource manager has (the shoot role's defaults)
// in the multi-tenant mode, over TLS with the certificate the shoots trust, as webhook.Run
// builds it.
func startServer(ctx context.Context) (<-chan error, error) {
	file := componentconfig.ShootResourceManager()
	log := slog.New(slog.DiscardHandler)
	if os.Getenv("WEBHOOK_TEST_LOGS") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	// The servers read the seed as their ServiceAccount with exactly config/'s RBAC.
	seedReader, err := seed.ManifestClient(ctx, "../../../config/seed/grm-webhooks.yaml")
	if err != nil {
		return nil, err
	}
	if tenants, err = clients.New(clients.Options{
		Seed: seedReader, Scheme: kubernetesscheme.Scheme, Log: log, AccessSecret: webhookaccess.SecretName,
		SharedMapper: seedReader.RESTMapper(), ConfigureREST: bootstrap.Unthrottled,
	}); err != nil {
		return nil, err
	}
	deps := webhook.Deps{Source: seedReader, Target: clients.NewRouting(seedReader, tenants), Config: file.ResourceManagerConfiguration, Clock: testclock.NewFakeClock(time.Now()), Log: log}
	selected, err := webhook.Select(webhooks.All, nil, file)
	if err != nil {
		return nil, err
	}
	var served []webhook.Webhook
	for _, c := range selected {
		wh, err := c.Build(deps)
		if err != nil {
			return nil, fmt.Errorf("webhook %s: %w", c.Name, err)
		}
		served = append(served, wh)
	}
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- webhook.Serve(ctx, webhook.ServeOptions{
			Addr:           servingAddr(),
			CertFile:       filepath.Join(serving.LocalServingCertDir, "tls.crt"),
			KeyFile:        filepath.Join(serving.LocalServingCertDir, "tls.key"),
			RequestTimeout: 10 * time.Second, ShutdownTimeout: 5 * time.Second,
			Ready:   func(net.Addr) { close(ready) },
			Tenants: tenants, Proofs: tenantproof.NewRing(seedReader, "gardener-knative", clock.RealClock{}),
		}, served, serverReg, log)
	}()
	select {
	case <-ready:
		return done, nil
	case err := <-done:
		return nil, err
	case <-time.After(10 * time.Second):
		return nil, errors.New("webhook server did not start")
	}
}

func servingAddr() string {
	return serving.LocalServingHost + ":" + strconv.Itoa(serving.LocalServingPort)
}

func ptrTo[T any](v T) *T { return &v }
