package configgen_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	sourcesv1 "knative.dev/eventing/pkg/apis/sources/v1"
	duckv1 "knative.dev/pkg/apis/duck/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/gardener-knative/gardener-knative/pkg/configgen"
	"github.com/gardener-knative/gardener-knative/sources"
)

func feed() sources.Feed {
	return sources.Feed{
		Function: "demo",
		Mode:     sources.ResourceMode,
		Resources: []sources.Resource{
			{APIVersion: "core.gardener.cloud/v1beta1", Kind: "Shoot", Plural: "shoots", LabelSelector: "team=a,tier in (gold,silver),!legacy"},
			{APIVersion: "v1", Kind: "Secret", Plural: "secrets"},
			{APIVersion: "core.gardener.cloud/v1beta1", Kind: "Seed", Plural: "seeds"},
			{APIVersion: "core.gardener.cloud/v1", Kind: "Shoot", Plural: "shoots"},
		},
		Pings: []sources.Ping{
			{Sweep: "resync", Schedule: "*/10 * * * * *"},
			{Sweep: "report", Schedule: "0 6 * * 1", Timezone: "Europe/Berlin"},
		},
	}
}

func TestObjects(t *testing.T) {
	objs, err := configgen.Objects(feed())
	require.NoError(t, err)
	require.Len(t, objs, 6)

	sa := objs[0].(*corev1.ServiceAccount)
	require.Equal(t, "demo-source", sa.Name)
	require.Equal(t, configgen.Namespace, sa.Namespace)

	role := objs[1].(*rbacv1.ClusterRole)
	require.Equal(t, "gardener-knative:demo-source", role.Name)
	require.Empty(t, role.Namespace)
	watch := []string{"get", "list", "watch"}
	require.Equal(t, []rbacv1.PolicyRule{
		{APIGroups: []string{"core.gardener.cloud"}, Resources: []string{"shoots", "seeds"}, Verbs: watch},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: watch},
	}, role.Rules)

	binding := objs[2].(*rbacv1.ClusterRoleBinding)
	require.Equal(t, role.Name, binding.Name)
	require.Equal(t, rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name}, binding.RoleRef)
	require.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "demo-source", Namespace: configgen.Namespace}}, binding.Subjects)

	src := objs[3].(*sourcesv1.ApiServerSource)
	require.Equal(t, "demo", src.Name)
	require.Equal(t, configgen.Namespace, src.Namespace)
	require.Equal(t, "Resource", src.Spec.EventMode)
	require.Equal(t, "demo-source", src.Spec.ServiceAccountName)
	require.Equal(t, &metav1.LabelSelector{}, src.Spec.NamespaceSelector, "the source must watch all namespaces")
	require.Equal(t, map[string]string{"gardenerfunction": "demo"}, src.Spec.CloudEventOverrides.Extensions)
	require.Equal(t, "serving.knative.dev/v1", src.Spec.Sink.Ref.APIVersion)
	require.Equal(t, "Service", src.Spec.Sink.Ref.Kind)
	require.Equal(t, "demo", src.Spec.Sink.Ref.Name)
	require.Len(t, src.Spec.Resources, 4)
	require.Equal(t, &metav1.LabelSelector{
		MatchLabels: map[string]string{"team": "a"},
		MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "legacy", Operator: metav1.LabelSelectorOpDoesNotExist},
			{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"gold", "silver"}},
		},
	}, src.Spec.Resources[0].LabelSelector)
	require.Nil(t, src.Spec.Resources[1].LabelSelector)
	require.Equal(t, "v1", src.Spec.Resources[1].APIVersion)
	require.Equal(t, "Secret", src.Spec.Resources[1].Kind)

	resync := objs[4].(*sourcesv1.PingSource)
	require.Equal(t, "demo-resync", resync.Name)
	require.Equal(t, "*/10 * * * * *", resync.Spec.Schedule)
	require.Empty(t, resync.Spec.Timezone)
	require.Equal(t, "application/json", resync.Spec.ContentType)
	require.JSONEq(t, `{"sweep":"resync"}`, resync.Spec.Data)
	require.Equal(t, src.Spec.Sink, resync.Spec.Sink)
	require.Equal(t, map[string]string{"gardenerfunction": "demo"}, resync.Spec.CloudEventOverrides.Extensions)

	report := objs[5].(*sourcesv1.PingSource)
	require.Equal(t, "demo-report", report.Name)
	require.Equal(t, "Europe/Berlin", report.Spec.Timezone)
	require.JSONEq(t, `{"sweep":"report"}`, report.Spec.Data)
}

// The YAML holds exactly the objects: decoding it gives them back, with no status and no
// creationTimestamp noise.
func TestGenerateFeedRoundTrip(t *testing.T) {
	file, err := configgen.GenerateFeed(feed())
	require.NoError(t, err)
	require.Equal(t, "demo-sources.yaml", file.Name)
	require.True(t, strings.HasPrefix(string(file.Content), configgen.Header+"\n"))
	require.NotContains(t, string(file.Content), "status")
	require.NotContains(t, string(file.Content), "creationTimestamp")

	objs, err := configgen.Objects(feed())
	require.NoError(t, err)
	docs := documents(t, file.Content)
	require.Len(t, docs, len(objs))
	for i, want := range objs {
		got := want.DeepCopyObject().(client.Object)
		reset(got)
		require.NoError(t, sigsyaml.UnmarshalStrict(docs[i], got), "document %d", i)
		require.Equal(t, want, got, "document %d", i)
	}
}

// reset zeroes obj in place, keeping its type.
func reset(obj client.Object) {
	v := reflect.ValueOf(obj).Elem()
	v.Set(reflect.Zero(v.Type()))
}

// documents splits a YAML stream into its non-empty documents (comments only count as empty).
func documents(t *testing.T, data []byte) [][]byte {
	t.Helper()
	var docs [][]byte
	reader := yaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return docs
		}
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, sigsyaml.Unmarshal(doc, &m))
		if len(m) > 0 {
			docs = append(docs, doc)
		}
	}
}

func TestGenerateIsDeterministic(t *testing.T) {
	a, err := configgen.Generate(sources.All)
	require.NoError(t, err)
	require.Len(t, a, len(sources.All))
	for i := 0; i < 5; i++ {
		b, err := configgen.Generate(sources.All)
		require.NoError(t, err)
		require.Equal(t, a, b)
	}
}

// Every feed the project declares passes the generator's checks and Knative's validation.
func TestGenerateAll(t *testing.T) {
	files, err := configgen.Generate(sources.All)
	require.NoError(t, err)
	for i, f := range files {
		require.True(t, strings.HasSuffix(f.Name, configgen.FileSuffix), f.Name)
		if i > 0 {
			require.Less(t, files[i-1].Name, f.Name)
		}
	}
	bastion, err := configgen.GenerateFeed(sources.Bastion)
	require.NoError(t, err)
	require.Contains(t, files, bastion)
}

func TestInvalidFeeds(t *testing.T) {
	for name, tc := range map[string]struct {
		change func(*sources.Feed)
		err    string
	}{
		"bad function name":  {func(f *sources.Feed) { f.Function = "Demo_1" }, "function name"},
		"unknown mode":       {func(f *sources.Feed) { f.Mode = "Everything" }, `mode "Everything"`},
		"no resources":       {func(f *sources.Feed) { f.Resources = nil }, "no resources"},
		"bad api version":    {func(f *sources.Feed) { f.Resources[1].APIVersion = "a/b/c" }, "is not group/version"},
		"plural not guessed": {func(f *sources.Feed) { f.Resources[1].Plural = "secretz" }, `plural "secretz" is not "secrets"`},
		"missing kind":       {func(f *sources.Feed) { f.Resources[1].Kind = "" }, "plural"},
		"bad selector":       {func(f *sources.Feed) { f.Resources[0].LabelSelector = "a in b" }, "selector"},
		"duplicate sweep":    {func(f *sources.Feed) { f.Pings[1].Sweep = "resync" }, `sweep "resync" has more than one ping`},
		"bad sweep name":     {func(f *sources.Feed) { f.Pings[1].Sweep = "Re Sync" }, "PingSource name"},
		"bad schedule":       {func(f *sources.Feed) { f.Pings[0].Schedule = "@every 1m" }, "schedule"},
		"bad cron":           {func(f *sources.Feed) { f.Pings[0].Schedule = "61 * * * *" }, "schedule"},
		"bad timezone":       {func(f *sources.Feed) { f.Pings[1].Timezone = "Mars/Olympus" }, "timezone"},
	} {
		t.Run(name, func(t *testing.T) {
			f := feed()
			tc.change(&f)
			_, err := configgen.Objects(f)
			require.ErrorContains(t, err, tc.err)
			_, err = configgen.Generate([]sources.Feed{f})
			require.ErrorContains(t, err, tc.err)
		})
	}
	_, err := configgen.Generate([]sources.Feed{feed(), feed()})
	require.ErrorContains(t, err, `function "demo" has more than one feed`)
}

// Knative's own defaulting (its admission webhook) must not change the generated sources,
// except for filling in the sink's namespace: what is applied is what the cluster runs.
func TestKnativeDefaultsChangeNothing(t *testing.T) {
	objs, err := configgen.Objects(feed())
	require.NoError(t, err)
	for _, obj := range objs[3:] {
		defaulted := obj.DeepCopyObject().(interface {
			client.Object
			SetDefaults(context.Context)
		})
		defaulted.SetDefaults(context.Background())
		var ref *duckv1.KReference
		switch d := defaulted.(type) {
		case *sourcesv1.ApiServerSource:
			ref = d.Spec.Sink.Ref
		case *sourcesv1.PingSource:
			ref = d.Spec.Sink.Ref
		}
		if ref.Namespace != "" {
			require.Equal(t, configgen.Namespace, ref.Namespace)
			ref.Namespace = ""
		}
		require.Equal(t, obj, defaulted, obj.GetName())
	}
}

func TestWriteAndDiff(t *testing.T) {
	dir := t.TempDir()
	files, err := configgen.Generate([]sources.Feed{feed(), sources.Bastion})
	require.NoError(t, err)
	handWritten := filepath.Join(dir, "demo.yaml")
	require.NoError(t, os.WriteFile(handWritten, []byte("# hand-written\n"), 0o644))

	problems, err := configgen.Diff(dir, files)
	require.NoError(t, err)
	require.ElementsMatch(t, []configgen.Problem{{Name: "bastion-sources.yaml", Reason: "missing"}, {Name: "demo-sources.yaml", Reason: "missing"}}, problems)

	changed, err := configgen.Write(dir, files)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"bastion-sources.yaml", "demo-sources.yaml"}, changed)
	problems, err = configgen.Diff(dir, files)
	require.NoError(t, err)
	require.Empty(t, problems)
	changed, err = configgen.Write(dir, files)
	require.NoError(t, err)
	require.Empty(t, changed, "an up-to-date directory is not rewritten")

	// A hand edit is found and undone; a feed that is gone leaves a stale file that is removed.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bastion-sources.yaml"), append(files[0].Content, "# edited\n"...), 0o644))
	only, err := configgen.Generate([]sources.Feed{sources.Bastion})
	require.NoError(t, err)
	problems, err = configgen.Diff(dir, only)
	require.NoError(t, err)
	require.ElementsMatch(t, []configgen.Problem{{Name: "bastion-sources.yaml", Reason: "differs"}, {Name: "demo-sources.yaml", Reason: "stale"}}, problems)
	_, err = configgen.Write(dir, only)
	require.NoError(t, err)
	problems, err = configgen.Diff(dir, only)
	require.NoError(t, err)
	require.Empty(t, problems)
	require.NoFileExists(t, filepath.Join(dir, "demo-sources.yaml"))
	require.FileExists(t, handWritten, "files without the generated header are never touched")
}
