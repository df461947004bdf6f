// Package webhooks_test runs GRM's webhooks in-process over TLS and lets a real kube-apiserver
// call them through the webhook configurations of config/. Two control planes play GRM's two
// clusters: the source (where the server runs and reads e.g. Machines) and the target (whose
// kube-apiserver calls the admission and authorization webhooks).
package webhooks_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	testclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/gardener-knative/gardener-knative/functions"
	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/configgen"
	"github.com/gardener-knative/gardener-knative/pkg/controller/webhookcertificates"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/tenantproof"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
	"github.com/gardener-knative/gardener-knative/pkg/webhook"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/webhooktest"
)

// The webhooks under test register themselves (with the configuration they need) from their
// test files' init functions; the harness serves exactly those and installs, from config/,
// exactly the webhook entries whose paths they serve.
var (
	constructors []webhook.Constructor
	configurers  []func(*rmv1alpha1.ResourceManagerConfiguration)
)

func register(c webhook.Constructor, configure func(*rmv1alpha1.ResourceManagerConfiguration)) {
	constructors = append(constructors, c)
	if configure != nil {
		configurers = append(configurers, configure)
	}
}

var (
	source, target *testenv.Env
	// serving is where the webhook server listens and the CA the kube-apiserver trusts.
	serving *envtest.WebhookInstallOptions
	// clock is the webhooks' clock.
	clock = testclock.NewFakeClock(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
)

// AuthorizerPath is where the target kube-apiserver sends SubjectAccessReviews.
const AuthorizerPath = "/webhooks/auth/nodeagent"

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
	authzKubeconfig, err := writeAuthorizationKubeconfig()
	if err != nil {
		return 0, err
	}

	if source, err = testenv.Start(); err != nil {
		return 0, fmt.Errorf("source control plane: %w", err)
	}
	defer func() { _ = source.Stop() }()
	target, err = testenv.StartWith(testenv.Options{APIServerArgs: map[string]string{
		"authorization-mode":                           "RBAC,Webhook",
		"authorization-webhook-config-file":            authzKubeconfig,
		"authorization-webhook-version":                "v1",
		"authorization-webhook-cache-authorized-ttl":   "0s",
		"authorization-webhook-cache-unauthorized-ttl": "0s",
	}})
	if err != nil {
		return 0, fmt.Errorf("target control plane: %w", err)
	}
	defer func() { _ = target.Stop() }()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	paths, served, err := startServer(ctx)
	if err != nil {
		return 0, err
	}
	if err := installWebhookConfigurations(ctx, paths); err != nil {
		return 0, err
	}
	code := m.Run()
	cancel()
	if err := <-served; err != nil {
		return code, fmt.Errorf("webhook server: %w", err)
	}
	return code, nil
}

// startServer serves the registered webhooks over TLS with the certificate the target trusts.
func startServer(ctx context.Context) (map[string]bool, <-chan error, error) {
	file, err := componentconfig.ResourceManager("")
	if err != nil {
		return nil, nil, err
	}
	cfg := file.ResourceManagerConfiguration
	for _, configure := range configurers {
		configure(cfg)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("WEBHOOK_TEST_LOGS") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	// Each webhook reads both control planes as the ServiceAccount of the Service config/ serves
	// it with, with exactly that manifest's RBAC: the seed serving itself, where Source and
	// Target are one cluster.
	manifests, err := testenv.WebhookManifests("../../../config")
	if err != nil {
		return nil, nil, err
	}
	depsOf := map[string]webhook.Deps{}
	deps := func(name string) (webhook.Deps, error) {
		manifest, ok := manifests[name]
		if !ok {
			return webhook.Deps{}, fmt.Errorf("no Service of config/ serves webhook %s", name)
		}
		if d, ok := depsOf[manifest]; ok {
			return d, nil
		}
		sourceClient, err := source.ManifestClient(ctx, manifest)
		if err != nil {
			return webhook.Deps{}, fmt.Errorf("source: %w", err)
		}
		targetClient, err := targetClientOf(ctx, manifest)
		if err != nil {
			return webhook.Deps{}, fmt.Errorf("target: %w", err)
		}
		depsOf[manifest] = webhook.Deps{Source: sourceClient, Target: targetClient, Config: cfg, Clock: clock, Log: log}
		return depsOf[manifest], nil
	}
	paths := map[string]bool{}
	var webhooks []webhook.Webhook
	for _, c := range constructors {
		d, err := deps(c.Name)
		if err != nil {
			return nil, nil, err
		}
		wh, err := c.New(d)
		if err != nil {
			return nil, nil, fmt.Errorf("webhook %s: %w", c.Name, err)
		}
		webhooks = append(webhooks, wh)
		for _, path := range wh.Paths() {
			paths[path] = true
		}
	}
	served, err := webhooktest.StartServer(ctx, serving, webhooks, log)
	if err != nil {
		return nil, nil, err
	}
	return paths, served, nil
}

func servingAddr() string { return webhooktest.ServingAddr(serving) }

// targetClientOf is the client the manifest's server reads the target with: its ServiceAccount's,
// or for a server that reads the garden (config/runtime/webhook-extension-registration.yaml: its
// TARGET_KUBECONFIG is its part's garden access), its part's identity in the garden with exactly
// the rules config/garden/ grants it; the target plays the garden then.
func targetClientOf(ctx context.Context, manifest string) (client.Client, error) {
	data, err := os.ReadFile(manifest)
	if err != nil {
		return nil, err
	}
	if !bytes.Contains(data, []byte("name: TARGET_KUBECONFIG")) || !bytes.Contains(data, []byte("secretName: "+function.GardenAccessSecret)) {
		return target.ManifestClient(ctx, manifest)
	}
	part := function.Part(filepath.Base(filepath.Dir(manifest)))
	if err := target.ApplyRBAC(ctx, configgen.GardenAccess(part, functions.All)); err != nil {
		return nil, err
	}
	c, _, err := target.FunctionClient("system:serviceaccount:" + configgen.GardenIdentityNamespace + ":" + configgen.GardenIdentity(part))
	return c, err
}

// installWebhookConfigurations installs the Mutating- and ValidatingWebhookConfigurations of
// config/shoot/ (the target plays a shoot), every part of config/ (registrations in the cluster the
// webhooks run in) and config/garden/ (the runtime part's in the garden) into the target, pointed at the local server and its CA. It keeps only the
// webhook entries whose path is served (an entry nobody serves would fail every matching
// request), and of two entries with the same name the shoot's.
func installWebhookConfigurations(ctx context.Context, served map[string]bool) error {
	shootFiles, err := filepath.Glob("../../../config/shoot/*.yaml")
	if err != nil {
		return err
	}
	files := shootFiles
	folders := []string{configgen.GardenDir}
	for _, part := range function.AllParts {
		folders = append(folders, string(part))
	}
	for _, folder := range folders {
		partFiles, err := filepath.Glob("../../../config/" + folder + "/*.yaml")
		if err != nil {
			return err
		}
		files = append(files, partFiles...)
	}
	seen := map[string]bool{}
	first := func(name string) bool {
		if seen[name] {
			return false
		}
		seen[name] = true
		return true
	}
	var mutating []*admissionregistrationv1.MutatingWebhookConfiguration
	var validating []*admissionregistrationv1.ValidatingWebhookConfiguration
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		m, v, err := decodeWebhookConfigurations(data)
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		mutating = append(mutating, m...)
		validating = append(validating, v...)
	}
	local := func(cc *admissionregistrationv1.WebhookClientConfig) (bool, error) {
		u, err := registeredURL(cc)
		if err != nil {
			return false, err
		}
		// config/shoot/ addresses a tenant of the multi-tenant server; this server is
		// single-tenant, its target plays the shoot.
		if _, _, rest, ok := tenantproof.ParsePath(u.Path, tenant.DefaultPrefix); ok {
			u.Path = rest
		}
		if !served[u.Path] {
			return false, nil
		}
		u.Host = servingAddr()
		cc.URL, cc.Service = ptrTo(u.String()), nil
		cc.CABundle = serving.LocalServingCAData
		return true, nil
	}
	keep := func(cc *admissionregistrationv1.WebhookClientConfig, name string) (bool, error) {
		ok, err := local(cc)
		return ok && first(name), err
	}
	var installM []*admissionregistrationv1.MutatingWebhookConfiguration
	for _, c := range mutating {
		if c.Webhooks, err = kept(c.Name, c.Webhooks, func(w *admissionregistrationv1.MutatingWebhook) (*admissionregistrationv1.WebhookClientConfig, string) {
			return &w.ClientConfig, w.Name
		}, keep); err != nil {
			return err
		}
		if len(c.Webhooks) > 0 {
			installM = append(installM, c)
		}
	}
	var installV []*admissionregistrationv1.ValidatingWebhookConfiguration
	for _, c := range validating {
		if c.Webhooks, err = kept(c.Name, c.Webhooks, func(w *admissionregistrationv1.ValidatingWebhook) (*admissionregistrationv1.WebhookClientConfig, string) {
			return &w.ClientConfig, w.Name
		}, keep); err != nil {
			return err
		}
		if len(c.Webhooks) > 0 {
			installV = append(installV, c)
		}
	}
	for _, c := range installM {
		if err := target.Client.Create(ctx, c); err != nil {
			return err
		}
	}
	for _, c := range installV {
		if err := target.Client.Create(ctx, c); err != nil {
			return err
		}
	}
	return envtest.WaitForWebhooks(target.Config, installM, installV, *serving)
}

// kept returns the webhooks of a configuration that keep says to keep (it may rewrite their
// client configs); Mutating- and ValidatingWebhooks differ only in type.
func kept[W any](config string, webhooks []W, access func(*W) (*admissionregistrationv1.WebhookClientConfig, string), keep func(*admissionregistrationv1.WebhookClientConfig, string) (bool, error)) ([]W, error) {
	var out []W
	for i := range webhooks {
		cc, name := access(&webhooks[i])
		ok, err := keep(cc, name)
		if err != nil {
			return nil, fmt.Errorf("%s/%s: %w", config, name, err)
		}
		if ok {
			out = append(out, webhooks[i])
		}
	}
	return out, nil
}

// installRegistration installs the webhook configurations of config/<file> into the target
// until the test ends, renamed with suffix (the harness may have installed another cluster's
// registration of the same name) and pointed at the local single-tenant server, and returns when
// probe sees the webhook answer. It serves what the harness does not install: a seed's entry of
// a webhook both register (the harness installs only the shoot's, which matches kube-system and
// kubernetes-dashboard alone, where the seed's matches the test's namespaces labelled
// gardener.cloud/role), and the opt-in registrations of config/{seed,shoot}-opt-in/.
func installRegistration(t *testing.T, file, suffix string, probe func(ctx context.Context) bool) {
	t.Helper()
	ctx := context.Background()
	data, err := os.ReadFile(filepath.Join("../../../config", file))
	require.NoError(t, err)
	mutating, _, err := decodeWebhookConfigurations(data)
	require.NoError(t, err)
	require.NotEmpty(t, mutating, file)
	for _, c := range mutating {
		c.Name += suffix
		for i := range c.Webhooks {
			cc := &c.Webhooks[i].ClientConfig
			u, err := registeredURL(cc)
			require.NoError(t, err)
			// A shoot template addresses a tenant of the multi-tenant server; this one is
			// single-tenant and its target plays the shoot.
			if _, _, rest, ok := tenantproof.ParsePath(u.Path, tenant.DefaultPrefix); ok {
				u.Path = rest
			}
			u.Host = servingAddr()
			cc.URL, cc.Service, cc.CABundle = ptrTo(u.String()), nil, serving.LocalServingCAData
		}
		require.NoError(t, target.Client.Create(ctx, c))
		t.Cleanup(func() { assert.NoError(t, target.Client.Delete(context.Background(), c)) })
	}
	waitForWebhook(t, probe)
}

// registeredURL is where a registration sends its requests: its url, or its Service's path (the
// seed's registrations reach the servers' own TLS port, config/seed/grm-webhooks.yaml).
func registeredURL(cc *admissionregistrationv1.WebhookClientConfig) (*url.URL, error) {
	switch {
	case cc.URL != nil:
		return url.Parse(*cc.URL)
	case cc.Service != nil && cc.Service.Path != nil:
		return &url.URL{Scheme: "https", Host: cc.Service.Name + "." + cc.Service.Namespace + ".svc", Path: *cc.Service.Path}, nil
	}
	return nil, errors.New("webhook client config without url or service path")
}

// waitForWebhook waits until the kube-apiserver calls a webhook whose configuration was just
// created: it learns of configurations asynchronously.
func waitForWebhook(t *testing.T, probe func(ctx context.Context) bool) {
	t.Helper()
	require.Eventually(t, func() bool { return probe(context.Background()) }, 30*time.Second, 100*time.Millisecond, "the webhook is never called")
}

// writeAuthorizationKubeconfig writes the file the target kube-apiserver's
// --authorization-webhook-config-file names: the authorizer at the local server.
func writeAuthorizationKubeconfig() (string, error) {
	path := filepath.Join(serving.LocalServingCertDir, "authorization-webhook.kubeconfig")
	content := strings.NewReplacer(
		"SERVER", "https://"+servingAddr()+AuthorizerPath,
		"CA", base64.StdEncoding.EncodeToString(serving.LocalServingCAData),
	).Replace(`apiVersion: v1
kind: Config
clusters:
- name: node-agent-authorizer
  cluster:
    server: SERVER
    certificate-authority-data: CA
users:
- name: kube-apiserver
contexts:
- name: webhook
  context:
    cluster: node-agent-authorizer
    user: kube-apiserver
current-context: webhook
`)
	return path, os.WriteFile(path, []byte(content), 0o600)
}

func ptrTo[T any](v T) *T { return &v }

// decodeWebhookConfigurations picks the webhook configurations out of a multi-document file.
func decodeWebhookConfigurations(data []byte) ([]*admissionregistrationv1.MutatingWebhookConfiguration, []*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	var mutating []*admissionregistrationv1.MutatingWebhookConfiguration
	var validating []*admissionregistrationv1.ValidatingWebhookConfiguration
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var raw runtime.RawExtension
		if err := decoder.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return mutating, validating, nil
			}
			return nil, nil, err
		}
		if len(bytes.TrimSpace(raw.Raw)) == 0 || string(raw.Raw) == "null" {
			continue // a document of comments only
		}
		var meta metav1.TypeMeta
		if err := json.Unmarshal(raw.Raw, &meta); err != nil {
			return nil, nil, err
		}
		switch meta.Kind {
		case "MutatingWebhookConfiguration":
			c := &admissionregistrationv1.MutatingWebhookConfiguration{}
			if err := json.Unmarshal(raw.Raw, c); err != nil {
				return nil, nil, err
			}
			for i := range c.Webhooks {
				if err := bareSeedPath(c, c.Webhooks[i].Name, &c.Webhooks[i].ClientConfig); err != nil {
					return nil, nil, err
				}
			}
			mutating = append(mutating, c)
		case "ValidatingWebhookConfiguration":
			c := &admissionregistrationv1.ValidatingWebhookConfiguration{}
			if err := json.Unmarshal(raw.Raw, c); err != nil {
				return nil, nil, err
			}
			for i := range c.Webhooks {
				if err := bareSeedPath(c, c.Webhooks[i].Name, &c.Webhooks[i].ClientConfig); err != nil {
					return nil, nil, err
				}
			}
			validating = append(validating, c)
		}
	}
}

// bareSeedPath gives a seed registration's webhook the path its annotation names
// (webhookcertificates.AnnotationSeedPaths) without the seed's proof: this suite's server is
// single-tenant and serves the seed at its bare paths.
func bareSeedPath(obj client.Object, name string, cc *admissionregistrationv1.WebhookClientConfig) error {
	paths, err := webhookcertificates.SeedPaths(obj)
	if path, ok := paths[name]; ok && cc.Service != nil {
		cc.Service.Path = &path
	}
	return err
}
