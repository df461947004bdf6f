package manifests

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/andybalholm/brotli"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gardener-knative/gardener-knative/pkg/controller/managedresource/merge"
)

// scope knows ConfigMaps and Deployments as namespaced, Namespaces and ClusterRoles as
// cluster-scoped, and nothing else.
func scope(gvk schema.GroupVersionKind) (namespaced, known bool) {
	switch gvk.Kind {
	case "ConfigMap", "Deployment":
		return true, true
	case "Namespace", "ClusterRole":
		return false, true
	}
	return false, false
}

func secret(name string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shoot--a--b", Name: name}, Data: map[string][]byte{}}
	for key, value := range data {
		s.Data[key] = []byte(value)
	}
	return s
}

func compress(t *testing.T, data string) string {
	t.Helper()
	var buf bytes.Buffer
	w := brotli.NewWriter(&buf)
	_, err := w.Write([]byte(data))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return buf.String()
}

func checksum(data ...string) string {
	h := sha256.New()
	for _, d := range data {
		h.Write([]byte(d))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// where lists the objects as "kind namespace/name".
func where(result Result) []string {
	var out []string
	for _, obj := range result.Objects {
		out = append(out, obj.Desired.GetKind()+" "+obj.Desired.GetNamespace()+"/"+obj.Desired.GetName())
	}
	return out
}

func errorMessages(result Result) []string {
	var out []string
	for _, err := range result.Errors {
		out = append(out, err.Error())
	}
	return out
}

func TestDecodeOrderAndNamespaces(t *testing.T) {
	secrets := []*corev1.Secret{
		secret("second-by-name", map[string]string{
			"z.yaml": "{apiVersion: v1, kind: ConfigMap, metadata: {name: z}}",
			"a.yaml": `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: cluster-scoped, namespace: dropped}
---
apiVersion: v1
kind: Namespace
metadata: {name: known-namespace}
`,
		}),
		secret("first-by-name", map[string]string{
			"objects.yaml": `
apiVersion: example.com/v1
kind: Thing
metadata: {name: unknown}
---
apiVersion: example.com/v1
kind: Namespace
metadata: {name: unknown-namespace}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: explicit, namespace: kube-system}
`,
		}),
	}
	result := Decode(secrets, scope, Options{})
	require.Empty(t, result.Errors)
	assert.Equal(t, []string{
		"ClusterRole /cluster-scoped",
		"Namespace /known-namespace",
		"ConfigMap default/z",
		"Thing default/unknown",
		"Namespace /unknown-namespace",
		"ConfigMap kube-system/explicit",
	}, where(result), "Secrets in the given order, keys sorted, namespaces defaulted by scope")
	assert.NotContains(t, result.Objects[0].Desired.Object["metadata"], "namespace")
}

func TestDecodeDocuments(t *testing.T) {
	const cm = "{apiVersion: v1, kind: ConfigMap, metadata: {name: %s}}"
	tests := []struct {
		name       string
		data       string
		wantNames  []string
		wantErrors []int
	}{
		{
			name:      "empty, comment-only and null documents are skipped",
			data:      "---\n---\n# nothing here\n---\nnull\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n",
			wantNames: []string{"a"},
		},
		{
			name:       "invalid YAML in the middle does not stop the rest",
			data:       "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\nfoo: [bar\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n",
			wantNames:  []string{"a", "b"},
			wantErrors: []int{1},
		},
		{
			name:       "a document that is not an object",
			data:       "- a\n- b\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
			wantNames:  []string{"a"},
			wantErrors: []int{0},
		},
		{
			name:      "a JSON stream",
			data:      `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}} {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}}`,
			wantNames: []string{"a", "b"},
		},
		{
			name:      "JSON then YAML",
			data:      "{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"a\"}}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n",
			wantNames: []string{"a", "b"},
		},
		{
			name:       "a broken JSON stream after two objects is reported once",
			data:       `{"kind": "ConfigMap", "metadata": {"name": "a"}} {"kind": "ConfigMap", "metadata": {"name": "b"}} {"kind": `,
			wantNames:  []string{"a", "b"},
			wantErrors: []int{2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			result := Decode([]*corev1.Secret{secret("mr", map[string]string{"objects.yaml": tt.data})}, scope, Options{})
			var names []string
			for _, obj := range result.Objects {
				names = append(names, obj.Desired.GetName())
			}
			assert.Equal(t, tt.wantNames, names)
			var indexes []int
			for _, err := range result.Errors {
				assert.Equal(t, "objects.yaml", err.Key)
				assert.Equal(t, "shoot--a--b/mr", err.Secret.String())
				indexes = append(indexes, err.Index)
			}
			assert.Equal(t, tt.wantErrors, indexes)
		})
	}
}

func TestDecodeBrotli(t *testing.T) {
	const manifests = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n"
	compressed := compress(t, manifests)

	result := Decode([]*corev1.Secret{secret("mr", map[string]string{resourcesv1alpha1.CompressedDataKey: compressed})}, scope, Options{})
	require.Empty(t, result.Errors)
	assert.Equal(t, []string{"ConfigMap default/a", "ConfigMap default/b"}, where(result))
	assert.Equal(t, checksum(compressed, compressed), result.Checksum, "the checksum covers the compressed data")

	truncated := compressed[:len(compressed)-4]
	result = Decode([]*corev1.Secret{secret("mr", map[string]string{"data.yaml.br": truncated, "plain.yaml": "{apiVersion: v1, kind: ConfigMap, metadata: {name: c}}"})}, scope, Options{})
	assert.Equal(t, []string{"Could not decode resource at index 0 in 'data.yaml.br' in secret 'shoot--a--b/mr': unexpected EOF."}, errorMessages(result),
		"a broken stream is reported once and the next key is read")
	assert.Equal(t, []string{"ConfigMap default/c"}, where(result))

	excess := compress(t, `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}`) + "trailing"
	result = Decode([]*corev1.Secret{secret("mr", map[string]string{"data.yaml.br": excess})}, scope, Options{})
	assert.Equal(t, []string{"ConfigMap default/a"}, where(result))
	assert.Equal(t, []string{
		"Could not decode resource at index 1 in 'data.yaml.br' in secret 'shoot--a--b/mr': brotli: excessive input.",
		"Could not decode resource at index 2 in 'data.yaml.br' in secret 'shoot--a--b/mr': decoding failed as both JSON and YAML.",
	}, errorMessages(result), "a decoder that gave up on both formats is reported once")
}

func TestDecodeChecksum(t *testing.T) {
	const first = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n" +
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ignored, annotations: {resources.gardener.cloud/mode: Ignore}}\n---\n" +
		"foo: [bar\n---\n" +
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n"
	const nothing = "# no objects\n"
	const second = "{apiVersion: v1, kind: ConfigMap, metadata: {name: c}}"

	result := Decode([]*corev1.Secret{
		secret("one", map[string]string{"1.yaml": first, "2.yaml": nothing}),
		secret("two", map[string]string{"x.yaml": second}),
	}, scope, Options{})
	assert.Equal(t, checksum(first, first, second), result.Checksum, "the key's data once per object that is applied")

	assert.Equal(t, checksum(), Decode(nil, scope, Options{}).Checksum)
}

func TestDecodeStatus(t *testing.T) {
	ref := func(apiVersion, kind, namespace, name string, labels map[string]string) resourcesv1alpha1.ObjectReference {
		return resourcesv1alpha1.ObjectReference{
			ObjectReference: corev1.ObjectReference{APIVersion: apiVersion, Kind: kind, Namespace: namespace, Name: name},
			Labels:          labels,
		}
	}
	previousDeployment := ref("extensions/v1beta1", "Deployment", "default", "d", map[string]string{"old": "label"})
	previousDeployment.Annotations = map[string]string{"old": "annotation"}
	previousIgnored := ref("v1", "ConfigMap", "default", "released", nil)
	stale := ref("v1", "ConfigMap", "default", "stale", nil)

	data := `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: d
  labels: {own: x, team: own}
  annotations: {note: kept}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: released, annotations: {resources.gardener.cloud/mode: Ignore}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: never-managed, annotations: {resources.gardener.cloud/mode: Ignore}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: a-config}
`
	result := Decode([]*corev1.Secret{secret("mr", map[string]string{"objects.yaml": data})}, scope, Options{
		InjectLabels:              map[string]string{"team": "injected"},
		ManagedBy:                 "seed",
		ForceOverwriteAnnotations: true,
		Previous:                  []resourcesv1alpha1.ObjectReference{stale, previousIgnored, previousDeployment},
		Equivalences:              merge.NewEquivalences(),
	})
	require.Empty(t, result.Errors)

	deployment := ref("apps/v1", "Deployment", "default", "d", map[string]string{"own": "x", "team": "injected", resourcesv1alpha1.ManagedBy: "seed"})
	deployment.Annotations = map[string]string{"note": "kept"}
	configMap := ref("v1", "ConfigMap", "default", "a-config", map[string]string{"team": "injected", resourcesv1alpha1.ManagedBy: "seed"})

	assert.Equal(t, []resourcesv1alpha1.ObjectReference{configMap, deployment}, result.Resources, "sorted by key")
	assert.Equal(t, []string{"Deployment default/d", "ConfigMap default/a-config"}, where(result), "objects keep the manifest order")
	assert.Equal(t, deployment, result.Objects[0].Reference)
	assert.Equal(t, map[string]string{"own": "x", "team": "own"}, result.Objects[0].Desired.GetLabels(), "labels are injected at apply time")
	assert.Equal(t, merge.Options{
		OldLabels:                 previousDeployment.Labels,
		OldAnnotations:            previousDeployment.Annotations,
		ForceOverwriteAnnotations: true,
	}, result.Objects[0].Merge, "the extensions entry is the previous state of the apps Deployment")
	assert.Equal(t, merge.Options{ForceOverwriteAnnotations: true}, result.Objects[1].Merge)

	require.Len(t, result.Ignored, 2)
	assert.Equal(t, []string{"released", "never-managed"}, []string{result.Ignored[0].Name, result.Ignored[1].Name})
	require.Len(t, result.Release, 1)
	assert.Equal(t, "released", result.Release[0].Name)
	assert.Equal(t, []resourcesv1alpha1.ObjectReference{stale}, result.Stale, "a released object is not deleted")
}

func TestDecodeManagedByDefault(t *testing.T) {
	result := Decode([]*corev1.Secret{secret("mr", map[string]string{"a.yaml": "{apiVersion: v1, kind: ConfigMap, metadata: {name: a}}"})}, scope, Options{})
	assert.Equal(t, map[string]string{resourcesv1alpha1.ManagedBy: "gardener"}, result.Resources[0].Labels)
	assert.Nil(t, result.Resources[0].Annotations)
	assert.Empty(t, result.Stale)

	assert.Equal(t, map[string]string{"a": "b", resourcesv1alpha1.ManagedBy: "gardener"}, Options{InjectLabels: map[string]string{"a": "b"}}.Labels())
	assert.Equal(t, map[string]string{resourcesv1alpha1.ManagedBy: "seed"}, Options{ManagedBy: "seed"}.Labels())
}

func TestDecodingFailure(t *testing.T) {
	result := Result{Errors: []*DecodingError{
		{Secret: types.NamespacedName{Namespace: "shoot--a--b", Name: "mr"}, Key: "a.yaml", Index: 0, Err: errors.New("boom")},
		{Secret: types.NamespacedName{Namespace: "shoot--a--b", Name: "mr"}, Key: "b.yaml.br", Index: 3, Err: errors.New("bang")},
	}}
	assert.Equal(t, "Could not decode all new resources: ["+
		"Could not decode resource at index 0 in 'a.yaml' in secret 'shoot--a--b/mr': boom. "+
		"Could not decode resource at index 3 in 'b.yaml.br' in secret 'shoot--a--b/mr': bang.]",
		result.DecodingFailure())
	assert.ErrorIs(t, result.Errors[1], result.Errors[1].Err)
}
