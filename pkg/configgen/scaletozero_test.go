package configgen_test

import (
	"github.com/gardener-knative/gardener-knative/pkg/controller/webhookcertificates"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gardener-knative/gardener-knative/pkg/configgen"
)

func TestScaleToZero(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "shoot"), 0o755))
	write := func(name, content string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	write("services.yaml", `# kept replicas
apiVersion: serving.knative.dev/v1
kind: Service
metadata: {name: kept}
spec:
  template:
    metadata:
      annotations: {autoscaling.knative.dev/min-scale: "1"}
---
apiVersion: serving.knative.dev/v1
kind: Service
metadata: {name: already-scales-to-zero}
spec: {template: {metadata: {}}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: untouched}
`)
	write("shoot/registration.yaml", `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: m}
webhooks:
- name: a.example.com
  timeoutSeconds: 2
- name: b.example.com
`)
	write("own-tls.yaml", `apiVersion: serving.knative.dev/v1
kind: Service
metadata: {name: webhooks, namespace: gardener-knative}
spec:
  template:
    metadata:
      annotations: {autoscaling.knative.dev/min-scale: "2"}
    spec:
      containers:
      - name: webhooks
        env:
        - {name: WEBHOOKS, value: a}
        - {name: TLS_PORT, value: "8443"}
        - {name: TLS_CERT_FILE, value: /etc/grm-tls/tls.crt}
        - {name: TLS_KEY_FILE, value: /etc/grm-tls/tls.key}
        volumeMounts:
        - {name: tls, mountPath: /etc/grm-tls}
      volumes:
      - {name: tls, secret: {secretName: webhooks-tls}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: v}
webhooks:
- name: direct.example.com
  clientConfig:
    service: {namespace: gardener-knative, name: webhooks-tls, path: /webhooks/a, port: 443}
- name: elsewhere.example.com
  clientConfig:
    service: {namespace: other, name: x-tls, path: /b}
`)
	write("generated.yaml", configgen.Header+"\napiVersion: serving.knative.dev/v1\nkind: Service\nmetadata: {name: ignored}\nspec: {template: {metadata: {annotations: {autoscaling.knative.dev/min-scale: \"2\"}}}}\n")

	files, err := configgen.ScaleToZero(dir, ".")
	require.NoError(t, err)
	require.Len(t, files, 2, "the seed's folder holds no shoot file")
	assert.Equal(t, "own-tls.yaml", files[0].Name)
	ownTLS := string(files[0].Content)
	assert.Contains(t, ownTLS, "value: a", "what is not TLS stays")
	assert.NotContains(t, ownTLS, "TLS_", "a Service that scales to zero serves no TLS of its own")
	assert.NotContains(t, ownTLS, "volumes:")
	assert.NotContains(t, ownTLS, "volumeMounts:")
	assert.Contains(t, ownTLS, "url: https://webhooks.gardener-knative.svc.cluster.local/webhooks/a", "the registration goes through the ingress")
	assert.Contains(t, ownTLS, "name: x-tls", "a Service not of ours is left alone")
	assert.Contains(t, ownTLS, "gardener-knative.io/inject-ca-from-secret: gardener-knative/"+webhookcertificates.IngressCA)
	assert.Equal(t, "services.yaml", files[1].Name)
	services := string(files[1].Content)
	assert.True(t, strings.HasPrefix(services, configgen.Header+"\n"))
	assert.Contains(t, services, "autoscaling.knative.dev/min-scale: \"0\"")
	assert.Contains(t, services, "name: kept")
	assert.NotContains(t, services, "already-scales-to-zero")
	assert.NotContains(t, services, "untouched")

	shoot, err := configgen.ScaleToZero(dir, "shoot")
	require.NoError(t, err)
	require.Len(t, shoot, 1)
	assert.Equal(t, "registration.yaml", shoot[0].Name)
	assert.Equal(t, 2, strings.Count(string(shoot[0].Content), "timeoutSeconds: 30"))
}
