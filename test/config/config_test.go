// Package config_test checks the manifests in config/ against one real kube-apiserver that
// serves Knative's own CRDs: the generated files match sources/, every object of every file
// passes a strict server-side dry run, and every ko:// image names a main package of this
// module.
//
//	KUBEBUILDER_ASSETS=$(hack/envtest-assets.sh) go test ./test/config/...
package config_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	eventingv1 "knative.dev/eventing/pkg/apis/eventing/v1"
	sourcesv1 "knative.dev/eventing/pkg/apis/sources/v1"
	"knative.dev/pkg/apis"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gardener-knative/gardener-knative/functions"
	"github.com/gardener-knative/gardener-knative/pkg/configgen"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
	"github.com/gardener-knative/gardener-knative/sources"
)

const (
	// Knative's CRDs come from the module zips of the releases the project builds against:
	// eventing at the version go.mod requires, serving from the same v0.N release line.
	eventingModule = "knative.dev/eventing"
	servingModule  = "knative.dev/serving"
	servingVersion = "v0.50.0"

	// configDir is config/ seen from this package's directory, where go test runs it.
	configDir = "../../config"
	repoRoot  = "../.."
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	crds, err := knativeCRDs()
	if err != nil {
		fmt.Fprintln(os.Stderr, "loading Knative's CRDs:", err)
		return 1
	}
	env, err = testenv.Start(crds...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	return m.Run()
}

// knativeCRDs returns the CRDs of Knative Eventing and Serving, from their module zips, without
// their conversion webhooks (no webhook runs here, and every kind is served at one stored
// version that needs no conversion).
func knativeCRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	eventingVersion, err := goOutput(repoRoot, nil, "list", "-m", "-f", "{{.Version}}", eventingModule)
	if err != nil {
		return nil, err
	}
	if minorLine(eventingVersion) != minorLine(servingVersion) {
		return nil, fmt.Errorf("%s is at %s but the test installs %s %s: move servingVersion to the same release line", eventingModule, eventingVersion, servingModule, servingVersion)
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, src := range []struct{ module, version, dir string }{
		{eventingModule, eventingVersion, "config/core/resources"},
		{servingModule, servingVersion, "config/core/300-resources"},
	} {
		moduleDir, err := moduleDir(src.module, src.version)
		if err != nil {
			return nil, err
		}
		files, err := filepath.Glob(filepath.Join(moduleDir, src.dir, "*.yaml"))
		if err != nil {
			return nil, err
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("no CRDs in %s", filepath.Join(moduleDir, src.dir))
		}
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				return nil, err
			}
			more, err := testenv.DecodeCRDs(data)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", file, err)
			}
			for _, crd := range more {
				crd.Spec.Conversion = nil
			}
			crds = append(crds, more...)
		}
	}
	return crds, nil
}

// minorLine is "v0.50" for "v0.50.3".
func minorLine(version string) string {
	parts := strings.SplitN(version, ".", 3)
	if len(parts) < 2 {
		return version
	}
	return parts[0] + "." + parts[1]
}

// moduleDir returns the directory of a module version in the module cache, downloading it
// through the module proxy if needed. It runs outside this module so that go.mod and go.sum
// stay untouched (knative.dev/serving is no dependency).
func moduleDir(module, version string) (string, error) {
	tmp, err := os.MkdirTemp("", "configtest")
	if err != nil {
		return "", err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	out, err := goOutput(tmp, []string{"GOFLAGS=-mod=mod"}, "mod", "download", "-json", module+"@"+version)
	if err != nil {
		return "", err
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %w", module, version, err)
	}
	if info.Error != "" || info.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: no directory: %s", module, version, info.Error)
	}
	return info.Dir, nil
}

func goOutput(dir string, extraEnv []string, args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), extraEnv...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}

// The generated files are what the generator makes of the registry today.
func TestGeneratedFilesAreUpToDate(t *testing.T) {
	for _, part := range function.AllParts {
		files, err := configgen.Generate(part, functions.All, sources.DefaultPlumbing())
		require.NoError(t, err)
		problems, err := configgen.Diff(filepath.Join(configDir, string(part)), files)
		require.NoError(t, err)
		for _, p := range problems {
			t.Errorf("config/%s/%s: run `go run ./hack/genconfig` to regenerate config/ from the registry", part, p)
		}
	}

	problems, err := configgen.Diff(filepath.Join(repoRoot, "docs", "functions"), []configgen.File{configgen.FunctionsIndex(functions.All)})
	require.NoError(t, err)
	for _, p := range problems {
		t.Errorf("docs/functions/%s: run `go run ./hack/genconfig` to regenerate the functions table", p)
	}

	for _, folder := range configgen.ScaleToZeroFolders {
		variant, err := configgen.ScaleToZero(configDir, folder)
		require.NoError(t, err)
		require.NotEmpty(t, variant, "the scale-to-zero variant of config/%s changes nothing", folder)
		dir := filepath.Join(configgen.ScaleToZeroDir, folder)
		problems, err = configgen.Diff(filepath.Join(configDir, dir), variant)
		require.NoError(t, err)
		for _, p := range problems {
			t.Errorf("config/%s/%s: run `go run ./hack/genconfig` to regenerate the scale-to-zero variant", filepath.ToSlash(dir), p)
		}
	}
}

type manifest struct {
	file string
	objs []*unstructured.Unstructured
}

// manifests decodes every YAML file of config/'s folders: its parts, each applied where it
// belongs (ko and kubectl read no subfolders), and what operators apply elsewhere (config/shoot/
// into shoots, the scale-to-zero variants).
func manifests(t *testing.T) []manifest {
	t.Helper()
	var files []string
	for _, pattern := range []string{"*.yaml", "*.yml", "*/*.yaml", "*/*.yml", "*/*/*.yaml", "*/*/*.yml"} {
		more, err := filepath.Glob(filepath.Join(configDir, pattern))
		require.NoError(t, err)
		files = append(files, more...)
	}
	sort.Strings(files)
	require.NotEmpty(t, files, "config/ holds no manifests")

	var ms []manifest
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		rel, err := filepath.Rel(configDir, file)
		require.NoError(t, err)
		m := manifest{file: rel}
		reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for i := 0; ; i++ {
			doc, err := reader.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err, "%s: document %d", m.file, i)
			// Strict: duplicate keys are errors, as they are for kubectl.
			js, err := yaml.YAMLToJSONStrict(doc)
			require.NoError(t, err, "%s: document %d", m.file, i)
			if s := strings.TrimSpace(string(js)); s == "null" || s == "{}" {
				continue // only comments
			}
			u := &unstructured.Unstructured{}
			require.NoError(t, u.UnmarshalJSON(js), "%s: document %d", m.file, i)
			m.objs = append(m.objs, u)
		}
		require.NotEmpty(t, m.objs, "%s yields no object", m.file)
		ms = append(ms, m)
	}
	return ms
}

func describe(u *unstructured.Unstructured) string {
	name := u.GetName()
	if u.GetNamespace() != "" {
		name = u.GetNamespace() + "/" + name
	}
	return u.GetAPIVersion() + " " + u.GetKind() + " " + name
}

// Every object of every file is accepted by the API server as it stands: the schemas of
// Kubernetes and of Knative's CRDs, with unknown and duplicate fields rejected. Namespaces
// are created for real so that the namespaced objects can be dry-run into them.
func TestManifestsPassStrictDryRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ms := manifests(t)

	for _, m := range ms {
		for _, u := range m.objs {
			if u.GroupVersionKind() == corev1.SchemeGroupVersion.WithKind("Namespace") {
				require.NoError(t, env.Client.Create(ctx, u.DeepCopy(), client.FieldValidation("Strict")), "%s: %s", m.file, describe(u))
			}
		}
	}
	// Namespaces of the garden that config/ only puts Roles into (e.g. "garden") exist wherever
	// it is applied.
	for _, m := range ms {
		for _, u := range m.objs {
			if ns := u.GetNamespace(); ns != "" {
				garden := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
				require.NoError(t, client.IgnoreAlreadyExists(env.Client.Create(ctx, garden)))
			}
		}
	}
	for _, m := range ms {
		t.Run(m.file, func(t *testing.T) {
			for _, u := range m.objs {
				if u.GroupVersionKind() == corev1.SchemeGroupVersion.WithKind("Namespace") {
					continue // created above
				}
				namespaced, err := env.Client.IsObjectNamespaced(u)
				if err != nil {
					t.Errorf("%s: %s: the API server does not serve this kind: %v", m.file, describe(u), err)
					continue
				}
				if namespaced && u.GetNamespace() == "" {
					t.Errorf("%s: %s: a namespaced object must name its namespace (it would land in the current context's namespace)", m.file, describe(u))
					continue
				}
				err = env.Client.Create(ctx, u.DeepCopy(), client.DryRunAll, client.FieldValidation("Strict"))
				if apierrors.IsAlreadyExists(err) {
					// The CRDs config/ ships are installed in every test control plane already
					// (testenv installs pkg/crds): what they would change is dry-run instead.
					err = dryRunUpdate(ctx, u)
				}
				if err != nil {
					t.Errorf("%s: %s: dry run failed: %v", m.file, describe(u), err)
				}
				if err := knativeWebhookValidation(ctx, u); err != nil {
					t.Errorf("%s: %s: Knative's admission webhook would reject it: %v", m.file, describe(u), err)
				}
			}
		})
	}
}

func dryRunUpdate(ctx context.Context, u *unstructured.Unstructured) error {
	existing := u.DeepCopy()
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(u), existing); err != nil {
		return err
	}
	updated := u.DeepCopy()
	updated.SetResourceVersion(existing.GetResourceVersion())
	return env.Client.Update(ctx, updated, client.DryRunAll, client.FieldValidation("Strict"))
}

// knativeWebhookValidation does what Knative Eventing's admission webhook does with a source
// (no webhook runs here): decode it strictly and run the type's own validation. It matters
// because the ApiServerSource CRD keeps unknown fields in spec, so the API server's strict
// field validation cannot catch a misspelt field there.
func knativeWebhookValidation(ctx context.Context, u *unstructured.Unstructured) error {
	var typed interface {
		Validate(context.Context) *apis.FieldError
	}
	switch u.GroupVersionKind() {
	case sourcesv1.SchemeGroupVersion.WithKind("ApiServerSource"):
		typed = &sourcesv1.ApiServerSource{}
	case sourcesv1.SchemeGroupVersion.WithKind("PingSource"):
		typed = &sourcesv1.PingSource{}
	case eventingv1.SchemeGroupVersion.WithKind("Trigger"):
		typed = &eventingv1.Trigger{}
	case eventingv1.SchemeGroupVersion.WithKind("Broker"):
		typed = &eventingv1.Broker{}
	default:
		return nil
	}
	data, err := u.MarshalJSON()
	if err != nil {
		return err
	}
	decoder := json.NewDecoder(bytes.NewReader(data))
	decoder.DisallowUnknownFields()
	if err := decoder.Decode(typed); err != nil {
		return err
	}
	if fe := typed.Validate(ctx); fe != nil {
		return fe
	}
	return nil
}

var koReference = regexp.MustCompile(`ko://[^\s"'#]+`)

// Every ko:// image is an import path of a main package of this module, or ko cannot build it.
func TestKoReferencesNameMainPackages(t *testing.T) {
	modulePath, err := goOutput(repoRoot, nil, "list", "-m", "-f", "{{.Path}}")
	require.NoError(t, err)
	files, err := filepath.Glob(filepath.Join(configDir, "*", "*.y*ml"))
	require.NoError(t, err)
	found := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		for _, ref := range koReference.FindAllString(string(data), -1) {
			found++
			path := strings.TrimPrefix(ref, "ko://")
			if path != modulePath && !strings.HasPrefix(path, modulePath+"/") {
				t.Errorf("%s: %s is not in module %s", filepath.Base(file), ref, modulePath)
				continue
			}
			name, err := goOutput(repoRoot, nil, "list", "-f", "{{.Name}}", path)
			if err != nil {
				t.Errorf("%s: %s: %v", filepath.Base(file), ref, err)
				continue
			}
			if name != "main" {
				t.Errorf("%s: %s is package %s, not a main package", filepath.Base(file), ref, name)
			}
		}
	}
	require.NotZero(t, found, "config/ refers to no ko:// image")
}

// Every Trigger sends to Knative Services that config/ deploys: its function's, and on failure
// the dead-letter sink of the Broker's delivery, which it inherits (it sets none of its own).
func TestEveryTriggerHasItsServices(t *testing.T) {
	services := map[string]bool{}
	var triggers, brokers []*unstructured.Unstructured
	for _, m := range manifests(t) {
		for _, u := range m.objs {
			switch {
			case u.GetAPIVersion() == "serving.knative.dev/v1" && u.GetKind() == "Service":
				services[u.GetNamespace()+"/"+u.GetName()] = true
			case u.GetKind() == "Trigger":
				triggers = append(triggers, u)
			case u.GetKind() == "Broker":
				brokers = append(brokers, u)
			}
		}
	}
	deployments := 0
	for _, fn := range functions.All {
		deployments += len(fn.Parts)
	}
	require.Len(t, triggers, deployments, "one Trigger per function and part that deploys it")
	require.Len(t, brokers, len(function.AllParts), "one Broker per part")
	refersTo := func(what string, u *unstructured.Unstructured, path ...string) {
		name, _, _ := unstructured.NestedString(u.Object, path...)
		if !services[u.GetNamespace()+"/"+name] {
			t.Errorf("%s %s: %s names Service %s/%s, which config/ does not deploy", what, u.GetName(), strings.Join(path, "."), u.GetNamespace(), name)
		}
	}
	for _, broker := range brokers {
		refersTo("Broker", broker, "spec", "delivery", "deadLetterSink", "ref", "name")
	}
	for _, tr := range triggers {
		refersTo("Trigger", tr, "spec", "subscriber", "ref", "name")
		if _, has, _ := unstructured.NestedMap(tr.Object, "spec", "delivery"); has {
			t.Errorf("Trigger %s has a delivery of its own: the Broker's is the one place to choose it", tr.GetName())
		}
		if broker, _, _ := unstructured.NestedString(tr.Object, "spec", "broker"); broker != sources.Broker {
			t.Errorf("Trigger %s subscribes to Broker %q, not %q", tr.GetName(), broker, sources.Broker)
		}
	}
}

// Every Knative Service of config/ is reachable only inside the cluster: the functions take
// events from the Broker, the webhooks and the authorizer are called by the kube-apiservers
// of the seed and its shoots by cluster-local URL. An external route would let whoever
// reaches Knative's ingress send events or ask authorization questions about a seed's shoots.
func TestEveryKnativeServiceIsClusterLocal(t *testing.T) {
	var found int
	for _, m := range manifests(t) {
		for _, u := range m.objs {
			if u.GetAPIVersion() != "serving.knative.dev/v1" || u.GetKind() != "Service" {
				continue
			}
			found++
			if got := u.GetLabels()["networking.knative.dev/visibility"]; got != "cluster-local" {
				t.Errorf("%s: %s has an external route (networking.knative.dev/visibility %q)", m.file, describe(u), got)
			}
		}
	}
	require.NotZero(t, found, "config/ deploys no Knative Service")
}
