package configgen_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/gardener-knative/gardener-knative/pkg/configgen"
)

func TestReleaseLabelsEveryObjectAndEveryPod(t *testing.T) {
	resolved := []byte(`# a comment ko keeps
apiVersion: v1
kind: Namespace
metadata: {name: gardener-knative}
---
# only a comment
---
apiVersion: serving.knative.dev/v1
kind: Service
metadata:
  name: project
  labels: {app.kubernetes.io/part-of: gardener-knative}
spec:
  template:
    spec:
      containers:
      - image: registry.example.com/gardener-knative/project@sha256:0123
`)
	out, err := configgen.Release(resolved, "v1.2.3", "gardener-knative.yaml")
	require.NoError(t, err)
	assert.Contains(t, string(out), "# gardener-knative v1.2.3: gardener-knative.yaml")

	var namespace, service map[string]any
	docs := splitDocuments(t, out)
	require.Len(t, docs, 2)
	require.NoError(t, yaml.Unmarshal(docs[0], &namespace))
	require.NoError(t, yaml.Unmarshal(docs[1], &service))
	label := func(obj map[string]any, path ...string) any {
		for _, p := range path {
			obj = obj[p].(map[string]any)
		}
		return obj["labels"].(map[string]any)[configgen.VersionLabel]
	}
	assert.Equal(t, "v1.2.3", label(namespace, "metadata"))
	assert.Equal(t, "v1.2.3", label(service, "metadata"))
	assert.Equal(t, "v1.2.3", label(service, "spec", "template", "metadata"), "the pods carry the version too")
	assert.Equal(t, "gardener-knative", service["metadata"].(map[string]any)["labels"].(map[string]any)["app.kubernetes.io/part-of"])
	assert.Contains(t, string(docs[1]), "registry.example.com/gardener-knative/project@sha256:0123", "the image stays as ko resolved it")
}

func TestReleaseRefusesWhatIsNoRelease(t *testing.T) {
	for _, version := range []string{"", "1.2.3", "v1.2", "latest", "v1.2.3+build", "v1.2.3 "} {
		_, err := configgen.Release([]byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n"), version, "x.yaml")
		assert.Error(t, err, "version %q", version)
	}
	_, err := configgen.Release([]byte("# nothing\n"), "v1.0.0", "x.yaml")
	assert.ErrorContains(t, err, "holds no object")
}

func splitDocuments(t *testing.T, stream []byte) [][]byte {
	t.Helper()
	var docs [][]byte
	for _, doc := range strings.Split(string(stream), "---\n") {
		var obj map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(doc), &obj))
		if obj != nil {
			docs = append(docs, []byte(doc))
		}
	}
	return docs
}
