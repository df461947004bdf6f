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

	"github.com/gardener-knative/gardener-knative/pkg/webhook/tenant"

	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	"github.com/prometheus/client_golang/prometheus"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kubernetesscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	testclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
	tenants   *webhook.TenantClients
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
	if seed, err = testenv.StartWith(testenv.Options{CRDs: []*apiextensionsv1.CustomResourceDefinition{clusterCRD()}}); err != nil {
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
		if err := enrol(ctx, s.tenant, s.env); err != nil {
			return 0, fmt.Errorf("enrolling %s: %w", s.tenant, err)
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

// clusterCRD is extensions.gardener.cloud's Cluster, which testenv does not install: gardenlet
// annotates it with the name of the namespace's generic token kubeconfig.
func clusterCRD() *apiextensionsv1.CustomResourceDefinition {
	preserve := true
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "clusters.extensions.gardener.cloud"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "extensions.gardener.cloud", Scope: apiextensionsv1.ClusterScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "clusters", Singular: "cluster", Kind: "Cluster", ListKind: "ClusterList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1alpha1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &preserve}},
			}},
		},
	}
}

// enrol does in the seed and the shoot what gardenlet does for a shoot's
// gardener-resource-manager: the ServiceAccount kube-system/gardener-resource-manager in the
// shoot, bound to cluster-admin; in the seed the control-plane namespace, the Cluster annotated
// with the generic token kubeconfig's name, that kubeconfig (server and CA, a token file) and
// the access Secret holding the ServiceAccount's token.
func enrol(ctx context.Context, t tenant.Name, shootEnv *testenv.Env) error {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: v1beta1constants.DeploymentNameGardenerResourceManager}}
	if err := shootEnv.Client.Create(ctx, sa); err != nil {
		return err
	}
	if err := shootEnv.Client.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "gardener.cloud:target:resource-manager"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: sa.Namespace, Name: sa.Name}},
	}); err != nil {
		return err
	}
	tokenRequest := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptrTo(int64(24 * 3600))}}
	if err := shootEnv.Client.SubResource("token").Create(ctx, sa, tokenRequest); err != nil {
		return fmt.Errorf("requesting a token: %w", err)
	}

	ns := string(t)
	if err := seed.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return err
	}
	kubeconfigName := v1beta1constants.SecretNameGenericTokenKubeconfig + "-0123abcd"
	cluster := &unstructured.Unstructured{}
	cluster.SetAPIVersion("extensions.gardener.cloud/v1alpha1")
	cluster.SetKind("Cluster")
	cluster.SetName(ns)
	cluster.SetAnnotations(map[string]string{v1beta1constants.AnnotationKeyGenericTokenKubeconfigSecretName: kubeconfigName})
	if err := seed.Client.Create(ctx, cluster); err != nil {
		return err
	}
	kubeconfig, err := genericTokenKubeconfig(ns, shootEnv.Config)
	if err != nil {
		return err
	}
	if err := seed.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: kubeconfigName}, Data: map[string][]byte{"kubeconfig": kubeconfig}}); err != nil {
		return err
	}
	return seed.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: webhook.DefaultTenantAccessSecret},
		Data:       map[string][]byte{"token": []byte(tokenRequest.Status.Token)},
	})
}

// genericTokenKubeconfig is Gardener's generic token kubeconfig for a shoot: its kube-apiserver
// with its CA, and a token file that only the shoot's pods mount.
func genericTokenKubeconfig(contextName string, cfg *rest.Config) ([]byte, error) {
	kc := clientcmdapi.NewConfig()
	kc.Clusters[contextName] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[contextName] = &clientcmdapi.AuthInfo{TokenFile: "/var/run/secrets/gardener.cloud/shoot/generic-kubeconfig/token"}
	kc.Contexts[contextName] = &clientcmdapi.Context{Cluster: contextName, AuthInfo: contextName}
	kc.CurrentContext = contextName
	return clientcmd.Write(*kc)
}

// startServer serves projected-token-mount and the node-agent authorizer in the multi-tenant
// mode, over TLS with the certificate the shoots trust, as webhook.Run builds it.
func startServer(ctx context.Context) (<-chan error, error) {
	cfg, err := componentconfig.ResourceManager("")
	if err != nil {
		return nil, err
	}
	cfg.Webhooks.ProjectedTokenMount.Enabled = true
	cfg.Webhooks.NodeAgentAuthorizer.Enabled = true
	log := slog.New(slog.DiscardHandler)
	if os.Getenv("WEBHOOK_TEST_LOGS") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	seedReader, err := client.New(rest.CopyConfig(seed.Config), client.Options{Scheme: kubernetesscheme.Scheme})
	if err != nil {
		return nil, err
	}
	if tenants, err = webhook.NewTenantClients(webhook.TenantClientsOptions{
		Seed: seedReader, Scheme: kubernetesscheme.Scheme, Log: log,
		SharedMapper: seedReader.RESTMapper(), ConfigureREST: bootstrap.Unthrottled,
	}); err != nil {
		return nil, err
	}
	deps := webhook.Deps{Source: seedReader, Target: webhook.NewRoutingReader(seedReader, tenants), Config: cfg, Clock: testclock.NewFakeClock(time.Now()), Log: log}
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
			_, rest, ok := webhook.ParseTenantPath(u.Path, webhook.DefaultTenantPrefix)
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
		_, rest, ok := webhook.ParseTenantPath(u.Path, webhook.DefaultTenantPrefix)
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
