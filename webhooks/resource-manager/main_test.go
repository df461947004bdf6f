package main

import (
	"bytes"
	"errors"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gardener-knative/gardener-knative/webhooks"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/controller/webhookcertificates"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/tenantproof"
	"github.com/gardener-knative/gardener-knative/pkg/webhook"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/webhooktest"
)

// config/ and the server must agree: every Knative Service of this binary serves webhooks the
// server knows, with the component configuration config/ ships; every webhook is served by
// some Service; and every registration (seed and shoot) names a Service that serves its path.
func TestConfigServesEveryWebhookAtItsRegisteredPaths(t *testing.T) {
	objs := decode(t, "../../config/*/*.yaml")

	var rmConfig string
	for _, o := range objs {
		if o.GetKind() == "ConfigMap" && o.GetName() == "grm-webhooks-config" {
			rmConfig, _, _ = unstructured.NestedString(o.Object, "data", "config.yaml")
		}
	}
	require.NotEmpty(t, rmConfig, "config/ ships no grm-webhooks-config")
	file := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(file, []byte(rmConfig), 0o600))
	rm, err := componentconfig.ResourceManager(file)
	require.NoError(t, err)
	require.Empty(t, rm.Unknown, "the shipped ResourceManagerConfiguration sets only fields Gardener's type knows")
	cfg := rm.ResourceManagerConfiguration
	reader := fake.NewClientBuilder().Build()
	deps := webhook.Deps{Source: reader, Target: reader, Config: cfg, Log: webhooktest.Log}

	served := map[string][]string{} // Knative Service → paths
	servedNames := map[string]bool{}
	multiTenant := map[string]bool{} // Knative Service → serves tenant paths
	for _, o := range objs {
		if o.GetKind() != "Service" || o.GetAPIVersion() != "serving.knative.dev/v1" {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			container := c.(map[string]any)
			if container["image"] != "ko://github.com/gardener-knative/gardener-knative/webhooks/resource-manager" {
				continue
			}
			multiTenant[o.GetName()] = env(container, "MULTI_TENANT") == "true"
			names := strings.Split(env(container, "WEBHOOKS"), ",")
			selected, err := webhook.Select(webhooks.All, names, &componentconfig.ResourceManagerFile{ResourceManagerConfiguration: cfg})
			require.NoError(t, err, "Service %s", o.GetName())
			for _, c := range selected {
				wh, err := c.New(deps)
				require.NoError(t, err, "Service %s: webhook %s with the shipped configuration", o.GetName(), c.Name)
				served[o.GetName()] = append(served[o.GetName()], wh.Paths()...)
				servedNames[c.Name] = true
			}
		}
	}
	for _, c := range webhooks.All {
		assert.True(t, servedNames[c.Name], "no Knative Service in config/ serves %s", c.Name)
	}

	// The plain Services in front of a Knative Service's own TLS port (config/grm-webhooks.yaml).
	direct := map[string]string{}
	for _, o := range objs {
		if o.GetAPIVersion() == "v1" && o.GetKind() == "Service" {
			if selected, ok, _ := unstructured.NestedString(o.Object, "spec", "selector", "serving.knative.dev/service"); ok {
				direct[o.GetName()] = selected
			}
		}
	}
	registrations := 0
	check := func(name string, cc admissionregistrationv1.WebhookClientConfig, seedPaths map[string]string) {
		registrations++
		u := &url.URL{}
		if cc.Service != nil {
			u.Host = direct[cc.Service.Name]
			require.NotEmpty(t, u.Host, "%s: Service %s is none of config/ in front of a Knative Service", name, cc.Service.Name)
			if seedPath, ok := seedPaths[name]; ok {
				// The seed's registration of a multi-tenant Service: its path is the
				// annotation's, which webhookcertificates writes below the seed's proof.
				require.Nil(t, cc.Service.Path, "%s: a path in config/ would be reset by every `ko apply`", name)
				require.True(t, multiTenant[u.Host], "%s: Service %s serves no seed paths (MULTI_TENANT)", name, u.Host)
				u.Path = seedPath
			} else {
				require.NotNil(t, cc.Service.Path, "%s has no service path", name)
				require.False(t, multiTenant[u.Host], "%s: Service %s serves its bare paths to no one (MULTI_TENANT): the path belongs in %s", name, u.Host, webhookcertificates.AnnotationSeedPaths)
				u.Path = *cc.Service.Path
			}
		} else {
			require.NotNil(t, cc.URL, "%s has neither service nor url", name)
			var err error
			u, err = url.Parse(*cc.URL)
			require.NoError(t, err)
		}
		service := strings.Split(u.Hostname(), ".")[0]
		if knative, ok := direct[service]; ok {
			service = knative // a shoot's url at the plain Service in front of the TLS port
		}
		path := u.Path
		if seedPath, ok := seedPaths[name]; ok && cc.URL != nil {
			require.Empty(t, path, "%s: a path in config/ would be reset by every `ko apply`", name)
			path = seedPath
		}
		if _, _, rest, ok := tenantproof.ParsePath(path, tenant.DefaultPrefix); ok {
			path = rest // a shoot's registration addresses its tenant
			assert.True(t, multiTenant[service], "%s: Service %s does not serve tenant paths (MULTI_TENANT)", name, service)
		}
		assert.True(t, slices.Contains(served[service], path), "%s: Service %s does not serve %s", name, service, u.Path)
	}
	for _, o := range objs {
		switch o.GetKind() {
		case "MutatingWebhookConfiguration":
			c := &admissionregistrationv1.MutatingWebhookConfiguration{}
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, c))
			seedPaths, err := webhookcertificates.SeedPaths(c)
			require.NoError(t, err, c.Name)
			for _, w := range c.Webhooks {
				check(w.Name, w.ClientConfig, seedPaths)
			}
		case "ValidatingWebhookConfiguration":
			c := &admissionregistrationv1.ValidatingWebhookConfiguration{}
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, c))
			seedPaths, err := webhookcertificates.SeedPaths(c)
			require.NoError(t, err, c.Name)
			for _, w := range c.Webhooks {
				check(w.Name, w.ClientConfig, seedPaths)
			}
		}
	}
	assert.NotZero(t, registrations)
}

func env(container map[string]any, name string) string {
	vars, _ := container["env"].([]any)
	for _, v := range vars {
		if m := v.(map[string]any); m["name"] == name {
			return m["value"].(string)
		}
	}
	return ""
}

func decode(t *testing.T, patterns ...string) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	for _, pattern := range patterns {
		files, err := filepath.Glob(pattern)
		require.NoError(t, err)
		for _, f := range files {
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
			for {
				u := &unstructured.Unstructured{}
				if err := decoder.Decode(&u.Object); err != nil {
					if errors.Is(err, io.EOF) {
						break
					}
					require.NoError(t, err, f)
				}
				if len(u.Object) > 0 {
					objs = append(objs, u)
				}
			}
		}
	}
	return objs
}
