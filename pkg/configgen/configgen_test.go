package configgen_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	eventingv1 "knative.dev/eventing/pkg/apis/eventing/v1"
	sourcesv1 "knative.dev/eventing/pkg/apis/sources/v1"
	duckv1 "knative.dev/pkg/apis/duck/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/gardener-knative/gardener-knative/functions"
	"github.com/gardener-knative/gardener-knative/pkg/configgen"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
	"github.com/gardener-knative/gardener-knative/sources"
)

func demo() *function.Function {
	return &function.Function{
		Name:        "demo",
		Parts:       []function.Part{function.Seed},
		RBAC:        []rbacv1.PolicyRule{{APIGroups: []string{"core.gardener.cloud"}, Resources: []string{"shoots"}, Verbs: []string{"get", "list", "patch"}}},
		Reconcilers: []function.Reconciler{{Name: "main", For: kinds.Shoot, New: func(function.Deps) (function.Handler, error) { return nil, nil }}},
		Watches:     []function.Watch{{Kind: kinds.Shoot, Reconciler: "main"}},
		Sweeps: []function.Sweep{
			{Name: "resync", Schedule: "*/10 * * * * *", Reconciler: "main", Primary: function.List{Kind: kinds.Shoot}},
			{Name: "report", Schedule: "0 6 * * 1", Timezone: "Europe/Berlin", Reconciler: "main", Primary: function.List{Kind: kinds.Shoot}},
		},
	}
}

// The function's own file holds its ServiceAccount, exactly its declared rules, and its Knative
// Service running as that ServiceAccount with the image ko builds from functions/<name>.
func TestFunctionFile(t *testing.T) {
	files, err := configgen.Generate(function.Seed, []*function.Function{demo()}, sources.DefaultPlumbing())
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		names = append(names, f.Name)
	}
	require.Equal(t, []string{configgen.NamespaceFile, configgen.PriorityClassFile, configgen.EventingFile, "demo.yaml", configgen.CRDsFile}, names)

	docs := documents(t, files[3].Content)
	require.Len(t, docs, 4)
	var role rbacv1.ClusterRole
	require.NoError(t, sigsyaml.UnmarshalStrict(docs[1], &role))
	require.Equal(t, "gardener-knative:demo", role.Name)
	// Its declared rules, and the review of its event senders' tokens.
	require.Equal(t, append(demo().RBAC, configgen.EventReceiverRule), role.Rules)
	var binding rbacv1.ClusterRoleBinding
	require.NoError(t, sigsyaml.UnmarshalStrict(docs[2], &binding))
	require.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "demo", Namespace: sources.Namespace}}, binding.Subjects)
	var svc map[string]any
	require.NoError(t, sigsyaml.Unmarshal(docs[3], &svc))
	spec := svc["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	require.Equal(t, "demo", spec["serviceAccountName"])
	container := spec["containers"].([]any)[0].(map[string]any)
	require.Equal(t, "ko://"+configgen.ModulePath+"/functions/demo", container["image"])
	require.Equal(t, "system:serviceaccount:gardener-knative:demo", configgen.ServiceAccountName(demo()))
	require.Equal(t, []any{map[string]any{"configMapRef": map[string]any{"name": "demo-settings", "optional": true}}}, container["envFrom"],
		"settings from an optional ConfigMap")
	require.NotContains(t, spec, "volumes", "no second cluster, no kubeconfig to mount")
}

// Rules confined to a namespace become a Role and RoleBinding there, not cluster-wide rules.
func TestNamespacedRBAC(t *testing.T) {
	fn := demo()
	secrets := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}}
	fn.NamespacedRBAC = map[string][]rbacv1.PolicyRule{"garden": secrets}
	objs := configgen.RBACObjects(fn, function.Seed)
	require.Len(t, objs, 5)
	role, ok := objs[3].(*rbacv1.Role)
	require.True(t, ok, "%T", objs[3])
	assert.Equal(t, "garden", role.Namespace)
	assert.Equal(t, secrets, role.Rules)
	binding, ok := objs[4].(*rbacv1.RoleBinding)
	require.True(t, ok, "%T", objs[4])
	assert.Equal(t, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name}, binding.RoleRef)
	assert.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "demo", Namespace: sources.Namespace}}, binding.Subjects)
	assert.Equal(t, demo().RBAC, objs[1].(*rbacv1.ClusterRole).Rules, "the cluster-wide rules stay as declared")
}

// Rules of one part are granted only where that part deploys the function.
func TestPartRBAC(t *testing.T) {
	fn := demo()
	fn.Parts = []function.Part{function.Seed, function.Runtime}
	clusters := rbacv1.PolicyRule{APIGroups: []string{"extensions.gardener.cloud"}, Resources: []string{"clusters"}, Verbs: []string{"list"}}
	fn.PartRBAC = map[function.Part][]rbacv1.PolicyRule{function.Seed: {clusters}}
	require.NoError(t, fn.Validate())
	rules := func(part function.Part) []rbacv1.PolicyRule {
		return configgen.RBACObjects(fn, part)[1].(*rbacv1.ClusterRole).Rules
	}
	assert.Equal(t, append(slices.Clone(demo().RBAC), clusters), rules(function.Seed))
	assert.Equal(t, demo().RBAC, rules(function.Runtime))
	assert.Equal(t, demo().RBAC, fn.RBAC, "the declaration is not changed")

	fn.Parts = []function.Part{function.Runtime}
	assert.ErrorContains(t, fn.Validate(), `RBAC of part "seed"`, "rules for a part that does not deploy the function")
}

// A part holds only its own functions, in its namespace, under cluster-scoped names of its own;
// a function of two parts is in both, each deployment with its part's namespace for
// OwnNamespace, so that a runtime cluster that is also a seed holds both parts side by side.
func TestParts(t *testing.T) {
	runtimeFn, both := demo(), demo()
	runtimeFn.Name, runtimeFn.Parts = "garden", []function.Part{function.Runtime}
	both.Name, both.Parts = "both", []function.Part{function.Seed, function.Runtime}
	secrets := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}}
	both.NamespacedRBAC = map[string][]rbacv1.PolicyRule{function.OwnNamespace: secrets}
	fns := []*function.Function{demo(), runtimeFn, both}
	seen := map[string]map[string]bool{}
	for _, part := range function.AllParts {
		files, err := configgen.Generate(part, fns, sources.DefaultPlumbing())
		require.NoError(t, err)
		for _, f := range files {
			for _, doc := range documents(t, f.Content) {
				var obj map[string]any
				require.NoError(t, sigsyaml.Unmarshal(doc, &obj))
				u := unstructured.Unstructured{Object: obj}
				if u.GetNamespace() != "" {
					assert.Equal(t, part.Namespace(), u.GetNamespace(), "%s %s of the %s part", u.GetKind(), u.GetName(), part)
				}
				if strings.HasPrefix(u.GetKind(), "Cluster") {
					assert.True(t, strings.HasPrefix(u.GetName(), part.Namespace()+":"), "%s %s of the %s part", u.GetKind(), u.GetName(), part)
				}
				if u.GetKind() == "Service" {
					if seen[string(part)] == nil {
						seen[string(part)] = map[string]bool{}
					}
					seen[string(part)][u.GetName()] = true
				}
				if u.GetKind() == "Role" {
					assert.Equal(t, part.Namespace(), u.GetNamespace(), "OwnNamespace is the part's")
				}
			}
		}
	}
	assert.Equal(t, map[string]bool{"demo": true, "both": true, "dead-letter": true}, seen["seed"])
	assert.Equal(t, map[string]bool{"garden": true, "both": true, "dead-letter": true}, seen["runtime"])
	assert.Equal(t, "system:serviceaccount:gardener-knative-runtime:garden", configgen.ServiceAccountName(runtimeFn))
}

// A function no part deploys would be missing from config/ without a word: the generator refuses it.
func TestEveryFunctionHasAPart(t *testing.T) {
	fn := demo()
	fn.Parts = nil
	_, err := configgen.Generate(function.Seed, []*function.Function{fn}, sources.DefaultPlumbing())
	assert.ErrorContains(t, err, "no part of config/ deploys it")
}

// A function that works on the garden gets the garden's kubeconfig from its part's Secret
// garden-access, its garden inputs from keys of the same Secret (required: a part's garden access
// and identity are one input), all as environment variables and none as a volume, whose mount
// the kubelet would make a wake from zero wait for; and where it runs only its TargetRBAC: its
// declared RBAC is the garden's.
func TestGardenAccess(t *testing.T) {
	fn := demo()
	fn.Sweeps[0].Related = []function.List{{Kind: kinds.Namespace, Cluster: function.Target}} // where it runs
	fn.WorksOnGarden = true
	fn.GardenInputs = map[string]string{"SEED_NAME": "seedName"}
	fn.TargetRBAC = []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}}
	require.NoError(t, fn.Validate())
	svc, err := configgen.KnativeService(fn, function.Seed)
	require.NoError(t, err)
	spec, _, _ := unstructured.NestedMap(svc.Object, "spec", "template", "spec")
	require.NotContains(t, spec, "volumes")
	container := spec["containers"].([]any)[0].(map[string]any)
	require.Equal(t, []any{
		map[string]any{"name": function.NamespaceEnv, "value": "gardener-knative"},
		map[string]any{"name": "EVENT_AUDIENCE", "value": "serving.knative.dev/service/gardener-knative/demo"},
		map[string]any{"name": "EVENT_SENDERS", "value": "system:serviceaccount:gardener-knative:demo-oidc-eventing.knative.dev-trigger"},
		map[string]any{"name": "GARDEN_KUBECONFIG_DATA", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "garden-access", "key": "kubeconfig"}}},
		map[string]any{"name": "SEED_NAME", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "garden-access", "key": "seedName"}}},
	}, container["env"])
	require.NotContains(t, container, "volumeMounts")

	var roles []*rbacv1.ClusterRole
	for _, obj := range configgen.DeployedRBACObjects(fn, function.Seed) {
		_, isRole := obj.(*rbacv1.Role)
		require.False(t, isRole, "a Role of the garden's namespaced RBAC where the function runs")
		if role, ok := obj.(*rbacv1.ClusterRole); ok {
			roles = append(roles, role)
		}
	}
	require.Len(t, roles, 1)
	assert.Equal(t, append(fn.TargetRBAC, configgen.EventReceiverRule), roles[0].Rules)
}

// config/ reaches a second cluster only as the tenants of a seed or as the garden: a single
// target of its own is GRM's classic per-shoot deployment, which no part deploys.
func TestNoPartDeploysASingleTarget(t *testing.T) {
	fn := demo()
	fn.Reconcilers[0].Cluster = function.Target
	_, err := configgen.KnativeService(fn, function.Seed)
	assert.ErrorContains(t, err, "no part of config/ deploys")
}

// Only a function that works on the garden has garden inputs and Target RBAC.
func TestGardenInputsNeedTheGarden(t *testing.T) {
	fn := demo()
	fn.GardenInputs = map[string]string{"SEED_NAME": "seedName"}
	assert.ErrorContains(t, fn.Validate(), "only a function that works on the garden")
	fn.GardenInputs = nil
	fn.WorksOnGarden = true
	fn.Reconcilers[0].Cluster = function.Target
	fn.Deployment = function.PerSeed
	assert.ErrorContains(t, fn.Validate(), "not every shoot of a seed")
}

// The YAML holds exactly the objects: decoding it gives them back, with no status and no
// creationTimestamp noise.
func TestEventingRoundTrip(t *testing.T) {
	files, err := configgen.Generate(function.Seed, []*function.Function{demo()}, sources.DefaultPlumbing())
	require.NoError(t, err)
	content := files[2].Content
	require.True(t, strings.HasPrefix(string(content), configgen.Header+"\n"))
	require.NotContains(t, string(content), "status")
	require.NotContains(t, string(content), "creationTimestamp")

	objs, err := sources.Objects([]*function.Function{demo()})
	require.NoError(t, err)
	docs := documents(t, content)
	require.Len(t, docs, len(objs)+1, "the plumbing and the dead-letter sink")
	var deadLetter map[string]any
	require.NoError(t, sigsyaml.Unmarshal(docs[len(objs)], &deadLetter))
	require.Equal(t, normalized(t, configgen.DeadLetterService(sources.Namespace).Object), normalized(t, deadLetter))
	for i, want := range objs {
		got := want.DeepCopyObject().(client.Object)
		reset(got)
		require.NoError(t, sigsyaml.UnmarshalStrict(docs[i], got), "document %d", i)
		require.Equal(t, want, got, "document %d", i)
	}
}

// normalized is m as JSON decodes it, for comparing with objects built in Go.
func normalized(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	data, err := json.Marshal(m)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(data, &out))
	return out
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
	for _, part := range function.AllParts {
		a, err := configgen.Generate(part, functions.All, sources.DefaultPlumbing())
		require.NoError(t, err)
		for range 5 {
			b, err := configgen.Generate(part, functions.All, sources.DefaultPlumbing())
			require.NoError(t, err)
			require.Equal(t, a, b)
		}
	}
}

// Knative's own defaulting (its admission webhook) must not change the generated sources and
// Triggers, except for filling in the sinks' namespace: what is applied is what the cluster runs.
func TestKnativeDefaultsChangeNothing(t *testing.T) {
	objs, err := sources.Objects([]*function.Function{demo()})
	require.NoError(t, err)
	for _, obj := range objs {
		defaultable, ok := obj.DeepCopyObject().(interface {
			client.Object
			SetDefaults(context.Context)
		})
		if !ok {
			continue
		}
		defaultable.SetDefaults(context.Background())
		var refs []*duckv1.KReference
		switch d := defaultable.(type) {
		case *sourcesv1.ApiServerSource:
			refs = append(refs, d.Spec.Sink.Ref)
		case *sourcesv1.PingSource:
			refs = append(refs, d.Spec.Sink.Ref)
		case *eventingv1.Trigger:
			refs = append(refs, d.Spec.Subscriber.Ref)
		case *eventingv1.Broker:
			refs = append(refs, d.Spec.Delivery.DeadLetterSink.Ref)
		}
		for _, ref := range refs {
			if ref != nil && ref.Namespace != "" {
				require.Equal(t, sources.Namespace, ref.Namespace)
				ref.Namespace = ""
			}
		}
		if tr, ok := defaultable.(*eventingv1.Trigger); ok && tr.Spec.Filter != nil && len(tr.Spec.Filter.Attributes) == 0 {
			tr.Spec.Filter = nil // an empty attributes filter passes everything: the Filters decide
		}
		require.Equal(t, obj, defaultable, obj.GetName())
	}
}

func TestWriteAndDiff(t *testing.T) {
	dir := t.TempDir()
	fn := demo()
	fn.Parts = []function.Part{function.Runtime}
	files, err := configgen.Generate(function.Runtime, []*function.Function{fn}, sources.DefaultPlumbing())
	require.NoError(t, err)
	handWritten := filepath.Join(dir, "hand.yaml")
	require.NoError(t, os.WriteFile(handWritten, []byte("# hand-written\n"), 0o644))

	problems, err := configgen.Diff(dir, files)
	require.NoError(t, err)
	require.ElementsMatch(t, []configgen.Problem{{Name: configgen.NamespaceFile, Reason: "missing"}, {Name: configgen.PriorityClassFile, Reason: "missing"}, {Name: "eventing.yaml", Reason: "missing"}, {Name: "demo.yaml", Reason: "missing"}}, problems)

	changed, err := configgen.Write(dir, files)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{configgen.NamespaceFile, configgen.PriorityClassFile, "eventing.yaml", "demo.yaml"}, changed)
	problems, err = configgen.Diff(dir, files)
	require.NoError(t, err)
	require.Empty(t, problems)
	changed, err = configgen.Write(dir, files)
	require.NoError(t, err)
	require.Empty(t, changed, "an up-to-date directory is not rewritten")

	// A hand edit is found and undone; a function that is gone leaves a stale file that is removed.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "eventing.yaml"), append(files[2].Content, "# edited\n"...), 0o644))
	other := demo()
	other.Name, other.Parts = "other", []function.Part{function.Runtime}
	only, err := configgen.Generate(function.Runtime, []*function.Function{other}, sources.DefaultPlumbing())
	require.NoError(t, err)
	problems, err = configgen.Diff(dir, only)
	require.NoError(t, err)
	require.ElementsMatch(t, []configgen.Problem{{Name: "eventing.yaml", Reason: "differs"}, {Name: "other.yaml", Reason: "missing"}, {Name: "demo.yaml", Reason: "stale"}}, problems)
	_, err = configgen.Write(dir, only)
	require.NoError(t, err)
	problems, err = configgen.Diff(dir, only)
	require.NoError(t, err)
	require.Empty(t, problems)
	require.NoFileExists(t, filepath.Join(dir, "demo.yaml"))
	require.FileExists(t, handWritten, "files without the generated header are never touched")
}

// config/garden/ gives each part's functions that work on the garden one identity there, with
// every rule they declare, get, list and watch on every kind the part's garden source watches,
// and the Roles of their namespaced rules; a part without such functions gets none.
func TestGardenIdentity(t *testing.T) {
	onGarden := demo()
	onGarden.WorksOnGarden = true
	onGarden.NamespacedRBAC = map[string][]rbacv1.PolicyRule{"garden": {{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}}}
	require.NoError(t, onGarden.Validate())
	assert.Nil(t, configgen.GardenAccess(function.Seed, []*function.Function{demo()}))

	objs := configgen.GardenAccess(function.Seed, []*function.Function{onGarden})
	var role *rbacv1.ClusterRole
	var roles []*rbacv1.Role
	var token *corev1.Secret
	for _, obj := range objs {
		switch o := obj.(type) {
		case *rbacv1.ClusterRole:
			role = o
		case *rbacv1.Role:
			roles = append(roles, o)
		case *corev1.Secret:
			token = o
		}
		if obj.GetNamespace() != "" {
			assert.Contains(t, []string{"kube-system", "garden"}, obj.GetNamespace(), "%T %s", obj, obj.GetName())
		}
	}
	require.NotNil(t, role)
	assert.Equal(t, "gardener-knative:garden-access", role.Name)
	for _, r := range onGarden.RBAC {
		assert.Contains(t, role.Rules, r)
	}
	for _, k := range onGarden.WatchedKinds(function.Source) {
		assert.Contains(t, role.Rules, rbacv1.PolicyRule{APIGroups: []string{k.Group}, Resources: []string{k.Resource}, Verbs: []string{"get", "list", "watch"}}, k.Kind)
	}
	require.Len(t, roles, 1)
	assert.Equal(t, "garden", roles[0].Namespace)
	require.NotNil(t, token)
	assert.Equal(t, corev1.SecretTypeServiceAccountToken, token.Type)
	assert.Equal(t, configgen.GardenIdentity(function.Seed), token.Annotations[corev1.ServiceAccountNameKey])

	files, err := configgen.GardenFiles(functions.All)
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		names = append(names, f.Name)
	}
	assert.Equal(t, []string{"runtime.yaml", "seed.yaml"}, names, "gardener-controller-manager's and gardenlet's part")
}
