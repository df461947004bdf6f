// Package multitenant_test proves the multi-tenant webhook server against three real control
// planes: a seed, whose shoot control-plane namespaces hold each shoot's access Secrets, and
// two shoots, whose kube-apiservers call the seed's one webhook server over TLS through the
// registrations of config/shoot/, each at its own tenant path.
package multitenant_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/clients"

	"github.com/prometheus/client_golang/prometheus"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kubernetesscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	testclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/gardener-knative/gardener-knative/pkg/bootstrap"
	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
	"github.com/gardener-knative/gardener-knative/pkg/webhook"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/nodeagentauthorizer"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/projectedtokenmount"
)

// shoot is one shoot: its control plane and its control-plane namespace in the seed (its tenant).
type shoot struct {
	tenant tenant.Name
	env    *testenv.Env
}

var (
	seed      *testenv.Env
	shootA    = &shoot{tenant: "shoot--test--a"}
	shootB    = &shoot{tenant: "shoot--test--b"}
	serving   *envtest.WebhookInstallOptions
	tenants   *clients.Clients
	serverReg = prometheus.NewRegistry()
)

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
	for _, s := range []*shoot{shootA, shootB} {
		authz, err := writeAuthorizationKubeconfig(s.tenant)
		if err != nil {
			return 0, err
		}
		// As test/integration/webhooks does: the shoot's kube-apiserver asks the seed's server
		// (at its tenant path) for every authorization RBAC does not grant.
		if s.env, err = testenv.StartWith(testenv.Options{APIServerArgs: map[string]string{
			"authorization-mode":                           "RBAC,Webhook",
			"authorization-webhook-config-file":            authz,
			"authorization-webhook-version":                "v1",
			"authorization-webhook-cache-authorized-ttl":   "0s",
			"authorization-webhook-cache-unauthorized-ttl": "0s",
		}}); err != nil {
			return 0, fmt.Errorf("shoot %s control plane: %w", s.tenant, err)
		}
		defer func(e *testenv.Env) { _ = e.Stop() }(s.env)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, s := range []*shoot{shootA, shootB} {
		if err := testenv.Enroll(ctx, seed.Client, s.tenant, s.env); err != nil {
			return 0, fmt.Errorf("enrolling %s: %w", s.tenant, err)
		}
		// The operator's part (docs/deployment.md): the servers may read this namespace's
		// Secrets, and those of no namespace not enrolled.
		if err := seed.Client.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: string(s.tenant), Name: "gardener-knative:grm-webhooks-tenant-access"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "gardener-knative:grm-webhooks-tenant-access"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "gardener-knative", Name: "grm-webhooks"}},
		}); err != nil {
			return 0, fmt.Errorf("tenant access of %s: %w", s.tenant, err)
		}
	}
	served, err := startServer(ctx)
	if err != nil {
		return 0, err
	}
	for _, s := range []*shoot{shootA, shootB} {
		if err := installShootRegistrations(ctx, s); err != nil {
			return 0, fmt.Errorf("registrations of %s: %w", s.tenant, err)
		}
	}
	code := m.Run()
	cancel()
	if err := <-served; err != nil {
		return code, fmt.Errorf("webhook server: %w", err)
	}
	return code, nil
}

// startServer serves projected-token-mount and the node-agent authorizer in the multi-tenant
// mode, over TLS with the certificate the shoots trust, as webhook.Run builds it.
func startServer(ctx context.Context) (<-chan error, error) {
	file, err := componentconfig.ResourceManager("")
	if err != nil {
		return nil, err
	}
	cfg := file.ResourceManagerConfiguration
	cfg.Webhooks.ProjectedTokenMount.Enabled = true
	cfg.Webhooks.NodeAgentAuthorizer.Enabled = true
	log := slog.New(slog.DiscardHandler)
	if os.Getenv("WEBHOOK_TEST_LOGS") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	// The servers read the seed as their ServiceAccount with exactly config/'s RBAC.
	seedReader, err := seed.ManifestClient(ctx, "../../../config/grm-webhooks.yaml")
	if err != nil {
		return nil, err
	}
	if tenants, err = clients.New(clients.Options{
		Seed: seedReader, Scheme: kubernetesscheme.Scheme, Log: log,
		SharedMapper: seedReader.RESTMapper(), ConfigureREST: bootstrap.Unthrottled,
	}); err != nil {
		return nil, err
	}
	deps := webhook.Deps{Source: seedReader, Target: clients.NewRouting(seedReader, tenants), Config: cfg, Clock: testclock.NewFakeClock(time.Now()), Log: log}
	var webhooks []webhook.Webhook
	for _, c := range []webhook.Constructor{projectedtokenmount.Webhook, nodeagentauthorizer.Webhook} {
		wh, err := c.New(deps)
		if err != nil {
			return nil, err
		}
		webhooks = append(webhooks, wh)
	}
	ready := make(chan struct{})
	served := make(chan error, 1)
	go func() {
		served <- webhook.Serve(ctx, webhook.ServeOptions{
			Addr:           servingAddr(),
			CertFile:       filepath.Join(serving.LocalServingCertDir, "tls.crt"),
			KeyFile:        filepath.Join(serving.LocalServingCertDir, "tls.key"),
			RequestTimeout: 10 * time.Second, ShutdownTimeout: 5 * time.Second,
			Ready:   func(net.Addr) { close(ready) },
			Tenants: tenants,
		}, webhooks, serverReg, log)
	}()
	select {
	case <-ready:
		return served, nil
	case err := <-served:
		return nil, err
	case <-time.After(10 * time.Second):
		return nil, errors.New("webhook server did not start")
	}
}

func servingAddr() string {
	return serving.LocalServingHost + ":" + strconv.Itoa(serving.LocalServingPort)
}

// installShootRegistrations fills in config/shoot/webhook-projected-token-mount.yaml for the
// shoot, as an operator or gardenlet does (the tenant's namespace in the url's path, the
// server's host and CA), and installs it into the shoot's kube-apiserver.
func installShootRegistrations(ctx context.Context, s *shoot) error {
	data, err := os.ReadFile("../../../config/shoot/webhook-projected-token-mount.yaml")
	if err != nil {
		return err
	}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var configs []*admissionregistrationv1.MutatingWebhookConfiguration
	for {
		c := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := decoder.Decode(c); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return err
		}
		if c.Kind != "MutatingWebhookConfiguration" {
			continue
		}
		for i := range c.Webhooks {
			cc := &c.Webhooks[i].ClientConfig
			u, err := url.Parse(*cc.URL)
			if err != nil {
				return err
			}
			_, rest, ok := webhook.ParseTenantPath(u.Path, tenant.DefaultPrefix)
			if !ok {
				return fmt.Errorf("%s: the url %s addresses no tenant", c.Name, *cc.URL)
			}
			u.Host, u.Path = servingAddr(), "/"+string(s.tenant)+rest
			cc.URL, cc.CABundle = ptrTo(u.String()), serving.LocalServingCAData
		}
		if err := s.env.Client.Create(ctx, c); err != nil {
			return err
		}
		configs = append(configs, c)
	}
	if len(configs) == 0 {
		return errors.New("config/shoot/webhook-projected-token-mount.yaml registers nothing")
	}
	return nil
}

// writeAuthorizationKubeconfig fills in config/shoot/authorization-webhook.kubeconfig.example for
// the tenant: the server at the tenant's path, and its CA.
func writeAuthorizationKubeconfig(t tenant.Name) (string, error) {
	example, err := os.ReadFile("../../../config/shoot/authorization-webhook.kubeconfig.example")
	if err != nil {
		return "", err
	}
	// The example leaves the CA for the operator to fill in.
	example = []byte(strings.Replace(string(example), "<base64 PEM of the CA>", base64.StdEncoding.EncodeToString(serving.LocalServingCAData), 1))
	kc, err := clientcmd.Load(example)
	if err != nil {
		return "", err
	}
	for _, c := range kc.Clusters {
		u, err := url.Parse(c.Server)
		if err != nil {
			return "", err
		}
		_, rest, ok := webhook.ParseTenantPath(u.Path, tenant.DefaultPrefix)
		if !ok || rest != authorizerPath {
			return "", fmt.Errorf("the example's server %s is not the authorizer's tenant path", c.Server)
		}
		u.Host, u.Path = servingAddr(), "/"+string(t)+rest
		c.Server, c.CertificateAuthorityData = u.String(), serving.LocalServingCAData
	}
	path := filepath.Join(serving.LocalServingCertDir, "authorization-webhook-"+string(t)+".kubeconfig")
	return path, clientcmd.WriteToFile(*kc, path)
}

func ptrTo[T any](v T) *T { return &v }
