package configgen_test

import (
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
	write("generated.yaml", configgen.Header+"\napiVersion: serving.knative.dev/v1\nkind: Service\nmetadata: {name: ignored}\nspec: {template: {metadata: {annotations: {autoscaling.knative.dev/min-scale: \"2\"}}}}\n")

	files, err := configgen.ScaleToZero(dir, ".")
	require.NoError(t, err)
	require.Len(t, files, 1, "the seed's folder holds no shoot file")
	assert.Equal(t, "services.yaml", files[0].Name)
	services := string(files[0].Content)
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
