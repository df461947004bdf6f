package config_test

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gardener-knative/gardener-knative/pkg/configgen"
	"github.com/gardener-knative/gardener-knative/pkg/function"
)

const (
	minScaleKey = "autoscaling.knative.dev/min-scale"
	maxScaleKey = "autoscaling.knative.dev/max-scale"
	// knativeServiceLabel is the label Knative Serving puts on every pod of a Service.
	knativeServiceLabel = "serving.knative.dev/service"
)

func isKnativeService(u *unstructured.Unstructured) bool {
	return u.GetAPIVersion() == "serving.knative.dev/v1" && u.GetKind() == "Service"
}

func scaleAnnotation(t *testing.T, u *unstructured.Unstructured, key string) (int, bool) {
	t.Helper()
	value, found, err := unstructured.NestedString(u.Object, "spec", "template", "metadata", "annotations", key)
	require.NoError(t, err, "%s: %s", describe(u), key)
	if !found {
		return 0, false
	}
	n, err := strconv.Atoi(value)
	require.NoError(t, err, "%s: %s %q", describe(u), key, value)
	return n, true
}

// Every Knative Service bounds what Knative may start of it and what one pod takes at once
// (docs/deployment.md, "Scale bounds"): without max-scale a burst of events or admission calls
// starts as many pods as the autoscaler likes, each with its own API load and read cache.
func TestEveryKnativeServiceBoundsItsScale(t *testing.T) {
	var found int
	for _, m := range manifests(t) {
		for _, u := range m.objs {
			if !isKnativeService(u) {
				continue
			}
			found++
			maxScale, ok := scaleAnnotation(t, u, maxScaleKey)
			if !ok || maxScale < 1 {
				t.Errorf("%s: %s sets no positive %s", m.file, describe(u), maxScaleKey)
			}
			if minScale, ok := scaleAnnotation(t, u, minScaleKey); ok && minScale > maxScale {
				t.Errorf("%s: %s: min-scale %d above max-scale %d", m.file, describe(u), minScale, maxScale)
			}
			concurrency, ok, err := unstructured.NestedInt64(u.Object, "spec", "template", "spec", "containerConcurrency")
			require.NoError(t, err, "%s: %s", m.file, describe(u))
			if !ok || concurrency < 1 {
				t.Errorf("%s: %s sets no positive containerConcurrency", m.file, describe(u))
			}
		}
	}
	require.NotZero(t, found, "config/ deploys no Knative Service")
}

var authorizerServer = regexp.MustCompile(`(?m)^\s*server:\s*(\S+)`)

// failClosedServices are the Knative Services behind a registration that refuses requests while
// it is unreachable: every admission webhook of config/ and its subfolders with failurePolicy
// Fail (the default), and the node-agent authorizer the shoots' kube-apiservers ask. Each is
// mapped to the registrations that make it fail-closed.
func failClosedServices(t *testing.T) map[string][]string {
	t.Helper()
	services := map[string][]string{}
	direct := directServices(t)
	add := func(rawURL, why string) {
		u, err := url.Parse(rawURL)
		require.NoError(t, err, why)
		service, _, _ := strings.Cut(u.Hostname(), ".")
		if knativeService, ok := direct[service]; ok {
			service = knativeService // a shoot's url at the plain Service in front of the TLS port
		}
		services[service] = append(services[service], why)
	}
	for _, m := range manifests(t) {
		if strings.HasPrefix(m.file, configgen.ScaleToZeroDir+string(filepath.Separator)) {
			continue // the variant that accepts cold starts on purpose
		}
		for _, u := range m.objs {
			if kind := u.GetKind(); kind != "MutatingWebhookConfiguration" && kind != "ValidatingWebhookConfiguration" {
				continue
			}
			webhooks, _, err := unstructured.NestedSlice(u.Object, "webhooks")
			require.NoError(t, err, describe(u))
			for _, w := range webhooks {
				webhook := w.(map[string]any)
				if policy, _ := webhook["failurePolicy"].(string); policy == "Ignore" {
					continue
				}
				why := m.file + ": " + webhook["name"].(string)
				if name, ok, _ := unstructured.NestedString(webhook, "clientConfig", "service", "name"); ok {
					knativeService, ok := direct[name]
					require.True(t, ok, "%s: the Service %s is none of config/ that selects a Knative Service's pods", why, name)
					services[knativeService] = append(services[knativeService], why)
					continue
				}
				rawURL, _, _ := unstructured.NestedString(webhook, "clientConfig", "url")
				require.NotEmpty(t, rawURL, "%s: %s: webhook %v has neither clientConfig.service nor url", m.file, describe(u), webhook["name"])
				add(rawURL, why)
			}
		}
	}
	kubeconfig, err := os.ReadFile(filepath.Join(configDir, "shoot", "authorization-webhook.kubeconfig.example"))
	require.NoError(t, err)
	match := authorizerServer.FindSubmatch(kubeconfig)
	require.NotNil(t, match, "the authorization webhook kubeconfig names no server")
	add(string(match[1]), "shoot/authorization-webhook.kubeconfig.example")
	return services
}

// directServices maps the plain Services of config/ that reach a Knative Service's pods
// straight (config/grm-webhooks.yaml: a server's own TLS port) to that Knative Service.
func directServices(t *testing.T) map[string]string {
	t.Helper()
	direct := map[string]string{}
	for _, m := range manifests(t) {
		for _, u := range m.objs {
			if u.GetAPIVersion() != "v1" || u.GetKind() != "Service" {
				continue
			}
			if selected, ok, _ := unstructured.NestedString(u.Object, "spec", "selector", knativeServiceLabel); ok {
				direct[u.GetName()] = selected
			}
		}
	}
	return direct
}

// A Service that reaches a Knative Service's pods straight lands on the port where they serve TLS,
// with the certificate issued for that Service: its Secret is the one they mount
// (pkg/controller/webhookcertificates issues the Secret of a registration's Service).
func TestDirectServicesReachTheServersOwnTLS(t *testing.T) {
	knativeServices := map[string]*unstructured.Unstructured{}
	var plain []*unstructured.Unstructured
	for _, m := range manifests(t) {
		if filepath.Dir(m.file) != "." {
			continue
		}
		for _, u := range m.objs {
			switch {
			case isKnativeService(u):
				knativeServices[u.GetName()] = u
			case u.GetAPIVersion() == "v1" && u.GetKind() == "Service":
				plain = append(plain, u)
			}
		}
	}
	direct := directServices(t)
	require.Contains(t, direct, "grm-webhooks-tls")
	for _, svc := range plain {
		target, ok := direct[svc.GetName()]
		if !ok {
			continue
		}
		ksvc := knativeServices[target]
		if !assert.NotNil(t, ksvc, "%s selects the pods of %s, no Knative Service of config/", svc.GetName(), target) {
			continue
		}
		ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
		require.Len(t, ports, 1, svc.GetName())
		targetPort := fmt.Sprint(ports[0].(map[string]any)["targetPort"])
		containers, _, _ := unstructured.NestedSlice(ksvc.Object, "spec", "template", "spec", "containers")
		env := map[string]string{}
		for _, e := range containers[0].(map[string]any)["env"].([]any) {
			env[fmt.Sprint(e.(map[string]any)["name"])] = fmt.Sprint(e.(map[string]any)["value"])
		}
		assert.Equal(t, targetPort, env["TLS_PORT"], "%s: its target port is not where %s serves TLS", svc.GetName(), target)
		volumes, _, _ := unstructured.NestedSlice(ksvc.Object, "spec", "template", "spec", "volumes")
		mounted := false
		for _, v := range volumes {
			name, _, _ := unstructured.NestedString(v.(map[string]any), "secret", "secretName")
			mounted = mounted || name == svc.GetName()
		}
		assert.True(t, mounted, "%s does not mount the Secret %s, the certificate issued for the Service", target, svc.GetName())
	}
}

// A fail-closed webhook's Service survives the loss of a pod (docs/deployment.md, "Fail-closed
// webhooks"): while none of its pods serves, Pods of every shoot namespace, node agents'
// requests or the garden's registrations are refused. Two replicas, spread over nodes, a
// PodDisruptionBudget that lets a drain take one at a time, and a priority class config/ ships.
func TestFailClosedWebhooksSurviveAPodsLoss(t *testing.T) {
	services := map[string]*unstructured.Unstructured{}
	budgets := map[string]*unstructured.Unstructured{}
	priorityClasses := map[string]bool{} // by part and name: each part applies alone
	partOf := map[string]string{}
	for _, m := range manifests(t) {
		part := filepath.Dir(m.file)
		if function.Part(part).Validate() != nil {
			continue // what ko apply -f config/<part>/ deploys
		}
		for _, u := range m.objs {
			switch {
			case isKnativeService(u):
				services[u.GetName()] = u
				partOf[u.GetName()] = part
			case u.GetKind() == "PodDisruptionBudget":
				selected, _, _ := unstructured.NestedString(u.Object, "spec", "selector", "matchLabels", knativeServiceLabel)
				budgets[selected] = u
			case u.GetKind() == "PriorityClass":
				priorityClasses[part+"/"+u.GetName()] = true
			}
		}
	}

	failClosed := failClosedServices(t)
	require.Contains(t, failClosed, "grm-webhooks", "the fail-closed registrations were not found")
	for name, why := range failClosed {
		svc, ok := services[name]
		if !assert.True(t, ok, "%s (fail-closed: %v) is no Knative Service of config/", name, why) {
			continue
		}
		if minScale, _ := scaleAnnotation(t, svc, minScaleKey); minScale < 2 {
			t.Errorf("%s (fail-closed: %s): min-scale %d, want at least 2", name, why[0], minScale)
		}
		podSpec, _, _ := unstructured.NestedMap(svc.Object, "spec", "template", "spec")
		if class, _ := podSpec["priorityClassName"].(string); !priorityClasses[partOf[name]+"/"+class] {
			t.Errorf("%s: priorityClassName %q is no PriorityClass of config/%s", name, class, partOf[name])
		}
		spreadByNode := false
		constraints, _ := podSpec["topologySpreadConstraints"].([]any)
		for _, c := range constraints {
			constraint := c.(map[string]any)
			selected, _, _ := unstructured.NestedString(constraint, "labelSelector", "matchLabels", knativeServiceLabel)
			if constraint["topologyKey"] == "kubernetes.io/hostname" && selected == name {
				spreadByNode = true
			}
		}
		assert.True(t, spreadByNode, "%s: no topology spread over kubernetes.io/hostname of its own pods", name)

		budget, ok := budgets[name]
		if !assert.True(t, ok, "%s: no PodDisruptionBudget selects %s=%s", name, knativeServiceLabel, name) {
			continue
		}
		assert.Equal(t, svc.GetNamespace(), budget.GetNamespace(), "%s: PodDisruptionBudget %s", name, budget.GetName())
		maxUnavailable, _, _ := unstructured.NestedFieldNoCopy(budget.Object, "spec", "maxUnavailable")
		assert.EqualValues(t, 1, maxUnavailable, "%s: PodDisruptionBudget %s: a drain may take one pod at a time", name, budget.GetName())
	}
}
