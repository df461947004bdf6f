package sources_test

import (
	"context"
	"testing"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	eventingv1 "knative.dev/eventing/pkg/apis/eventing/v1"
	sourcesv1 "knative.dev/eventing/pkg/apis/sources/v1"
	"knative.dev/eventing/pkg/eventfilter"
	"knative.dev/eventing/pkg/eventfilter/subscriptionsapi"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/functions"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kinds"
	"github.com/gardener-knative/gardener-knative/sources"
)

func noop(function.Deps) (function.Handler, error) { return nil, nil }

func demo(name string, watched []function.Kind, sweeps ...function.Sweep) *function.Function {
	fn := &function.Function{Name: name, Reconcilers: []function.Reconciler{{Name: "main", For: watched[0], New: noop}}, Sweeps: sweeps}
	for _, k := range watched {
		w := function.Watch{Kind: k, Reconciler: "main"}
		if k != watched[0] {
			w.Map = func(context.Context, client.Reader, function.Event) ([]function.Key, error) { return nil, nil }
		}
		fn.Watches = append(fn.Watches, w)
	}
	return fn
}

func byKind[T client.Object](objs []client.Object) []T {
	var out []T
	for _, o := range objs {
		if t, ok := o.(T); ok {
			out = append(out, t)
		}
	}
	return out
}

// N functions share one ApiServerSource per cluster, watching the union of their kinds with
// read-only RBAC for exactly those, and get one Trigger each.
func TestOneSourcePerClusterOneTriggerPerFunction(t *testing.T) {
	fns := []*function.Function{
		demo("alpha", []function.Kind{kinds.Bastion, kinds.Shoot}),
		demo("beta", []function.Kind{kinds.Shoot, kinds.Secret}, function.Sweep{Name: "resync", Schedule: "*/10 * * * * *", Reconciler: "main", Primary: function.List{Kind: kinds.Shoot}}),
	}
	objs, err := sources.Objects(fns)
	require.NoError(t, err)

	require.Len(t, byKind[*eventingv1.Broker](objs), 1)
	apiSources := byKind[*sourcesv1.ApiServerSource](objs)
	require.Len(t, apiSources, 2, "one for content, one for the confidential kinds' references")
	watched := func(src *sourcesv1.ApiServerSource) []string {
		var out []string
		for _, r := range src.Spec.Resources {
			out = append(out, r.APIVersion+"/"+r.Kind)
		}
		return out
	}
	content, references := apiSources[0], apiSources[1]
	assert.Equal(t, "source-cluster", content.Name)
	assert.Equal(t, sourcesv1.ResourceMode, content.Spec.EventMode)
	assert.Equal(t, []string{"core.gardener.cloud/v1beta1/Shoot", "operations.gardener.cloud/v1alpha1/Bastion"}, watched(content), "the union, each kind once")
	assert.Equal(t, "source-cluster-references", references.Name)
	assert.Equal(t, sourcesv1.ReferenceMode, references.Spec.EventMode, "no Secret content travels through the Broker")
	assert.Equal(t, []string{"v1/Secret"}, watched(references))
	for _, src := range apiSources {
		assert.Equal(t, "Broker", src.Spec.Sink.Ref.Kind)
		assert.Equal(t, map[string]string{function.ClusterExtension: "source"}, src.Spec.CloudEventOverrides.Extensions)
	}

	roles := byKind[*rbacv1.ClusterRole](objs)
	require.Len(t, roles, 2)
	assert.ElementsMatch(t, []rbacv1.PolicyRule{
		{APIGroups: []string{"core.gardener.cloud"}, Resources: []string{"shoots"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"operations.gardener.cloud"}, Resources: []string{"bastions"}, Verbs: []string{"get", "list", "watch"}},
	}, roles[0].Rules)
	assert.Equal(t, []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch"}}}, roles[1].Rules)
	require.Len(t, byKind[*corev1.ServiceAccount](objs), 2)

	triggers := byKind[*eventingv1.Trigger](objs)
	require.Len(t, triggers, 2)
	pings := byKind[*sourcesv1.PingSource](objs)
	require.Len(t, pings, 1)
	assert.Equal(t, "beta-resync", pings[0].Name)
	assert.Equal(t, "*/10 * * * * *", pings[0].Spec.Schedule)
	assert.JSONEq(t, `{"sweep":"resync"}`, pings[0].Spec.Data)
	assert.Equal(t, "Broker", pings[0].Spec.Sink.Ref.Kind)
}

// The Triggers route with Knative's own filter code: a function gets the events of the kinds
// it watches and its own ticks, nothing else.
func TestTriggersRouteWithKnativesFilters(t *testing.T) {
	fns := []*function.Function{
		demo("alpha", []function.Kind{kinds.Bastion, kinds.Shoot}, function.Sweep{Name: "resync", Schedule: "* * * * *", Reconciler: "main", Primary: function.List{Kind: kinds.Bastion}}),
		demo("beta", []function.Kind{kinds.Secret}, function.Sweep{Name: "resync", Schedule: "* * * * *", Reconciler: "main", Primary: function.List{Kind: kinds.Secret}}),
	}
	objs, err := sources.Objects(fns)
	require.NoError(t, err)
	filters := map[string]eventfilter.Filter{}
	for _, tr := range byKind[*eventingv1.Trigger](objs) {
		filters[tr.Name] = subscriptionsapi.CreateSubscriptionsAPIFilters(zap.NewNop(), tr.Spec.Filters)
	}
	event := func(typ string, ext map[string]string) cloudevents.Event {
		e := cloudevents.NewEvent()
		e.SetID("1")
		e.SetSource("test")
		e.SetType(typ)
		for k, v := range ext {
			e.SetExtension(k, v)
		}
		return e
	}
	routed := func(e cloudevents.Event) []string {
		var to []string
		for _, name := range []string{"alpha", "beta"} {
			if filters[name].Filter(context.Background(), e) == eventfilter.PassFilter {
				to = append(to, name)
			}
		}
		return to
	}
	shoot := event(function.ResourceUpdateEventType, map[string]string{"apiversion": "core.gardener.cloud/v1beta1", "kind": "Shoot", function.ClusterExtension: "source"})
	assert.Equal(t, []string{"alpha"}, routed(shoot))
	secret := event(function.ResourceAddEventType, map[string]string{"apiversion": "v1", "kind": "Secret", function.ClusterExtension: "source"})
	assert.Equal(t, []string{"beta"}, routed(secret))
	otherCluster := event(function.ResourceAddEventType, map[string]string{"apiversion": "v1", "kind": "Secret", function.ClusterExtension: "target"})
	assert.Empty(t, routed(otherCluster))
	assert.Equal(t, []string{"beta"}, routed(event(function.PingEventType, map[string]string{sources.FunctionExtension: "beta"})))
	assert.Empty(t, routed(event(function.PingEventType, map[string]string{sources.FunctionExtension: "gamma"})))
}

func TestInvalidDeclarationsAreRefused(t *testing.T) {
	dup := demo("alpha", []function.Kind{kinds.Bastion})
	_, err := sources.Objects([]*function.Function{dup, dup})
	assert.ErrorContains(t, err, "registered twice")

	bad := demo("alpha", []function.Kind{kinds.Bastion}, function.Sweep{Name: "resync", Schedule: "every minute", Reconciler: "main", Primary: function.List{Kind: kinds.Bastion}})
	_, err = sources.Objects([]*function.Function{bad})
	assert.ErrorContains(t, err, "PingSource")
}

// The registry's functions produce valid plumbing: the Triggers and sources pass Knative's own
// validation (checked inside Objects).
func TestRegistry(t *testing.T) {
	objs, err := sources.Objects(functions.All)
	require.NoError(t, err)
	apiSources := byKind[*sourcesv1.ApiServerSource](objs)
	assert.LessOrEqual(t, len(apiSources), 2, "at most two adapters for the garden (content, and confidential references), however many functions")
	assert.Len(t, byKind[*eventingv1.Trigger](objs), len(functions.All))
	// What one ApiServerSource per function, as before, would cost: an adapter each and a watch
	// per function and kind. The figures go into docs/deployment.md.
	perFunctionWatches, watches := 0, 0
	for _, fn := range functions.All {
		perFunctionWatches += len(fn.WatchedKinds(function.Source))
	}
	for _, src := range apiSources {
		watches += len(src.Spec.Resources)
	}
	t.Logf("%d functions: %d adapters and %d watch streams; one source per function would be %d adapters and %d watch streams",
		len(functions.All), len(apiSources), watches, len(functions.All), perFunctionWatches)
}

// withTargetWatch adds a watch of kind on the Target cluster to fn.
func withTargetWatch(fn *function.Function, kind function.Kind) *function.Function {
	fn.Deployment = function.PerSeed
	fn.Watches = append(fn.Watches, function.Watch{Kind: kind, Cluster: function.Target, Reconciler: "main",
		Map: func(context.Context, client.Reader, function.Event) ([]function.Key, error) { return nil, nil }})
	return fn
}

// Per seed, one ContainerSource runs Knative's adapter for every tenant (one always-on pod per
// seed), watching the union of the Target kinds; the Triggers take them with cluster=target.
// In seed mode the Source's ApiServerSource watches them instead, with cluster=source.
func TestTargetSourceOnePerSeed(t *testing.T) {
	fns := []*function.Function{
		withTargetWatch(demo("alpha", []function.Kind{kinds.Bastion}), kinds.Namespace),
		withTargetWatch(demo("beta", []function.Kind{kinds.Shoot}), kinds.Namespace),
	}
	objs, err := sources.Objects(fns)
	require.NoError(t, err)
	containers := byKind[*sourcesv1.ContainerSource](objs)
	require.Len(t, containers, 1, "one target source for all functions and tenants")
	cs := containers[0]
	assert.Equal(t, sources.TargetSourceName, cs.Name)
	assert.Equal(t, map[string]string{function.ClusterExtension: "target"}, cs.Spec.CloudEventOverrides.Extensions)
	container := cs.Spec.Template.Spec.Containers[0]
	assert.Equal(t, sources.TargetSourceImage, container.Image)
	env := map[string]string{}
	for _, e := range container.Env {
		env[e.Name] = e.Value
	}
	assert.Equal(t, "true", env["MULTI_TENANT"])
	assert.JSONEq(t, `{"namespaces":null,"allNamespaces":true,"resources":[{"gvr":{"Group":"","Version":"v1","Resource":"namespaces"}}],"mode":"Resource"}`, env["K_SOURCE_CONFIG"])
	for _, tr := range byKind[*eventingv1.Trigger](objs) {
		assert.Contains(t, tr.Spec.Filters[0].Any, eventingv1.SubscriptionsAPIFilter{Exact: map[string]string{function.ClusterExtension: "target", "apiversion": "v1", "kind": "Namespace"}}, tr.Name)
	}
	roles := byKind[*rbacv1.ClusterRole](objs)
	var targetRole *rbacv1.ClusterRole
	for _, r := range roles {
		if r.Name == "gardener-knative:"+sources.TargetSourceName {
			targetRole = r
		}
	}
	require.NotNil(t, targetRole, "the target source finds and reaches the tenants in the seed")

	seedMode, err := sources.ObjectsFor(fns, function.SeedMode)
	require.NoError(t, err)
	assert.Empty(t, byKind[*sourcesv1.ContainerSource](seedMode))
	apiSources := byKind[*sourcesv1.ApiServerSource](seedMode)
	require.Len(t, apiSources, 1)
	var watched []string
	for _, r := range apiSources[0].Spec.Resources {
		watched = append(watched, r.Kind)
	}
	assert.ElementsMatch(t, []string{"Bastion", "Shoot", "Namespace"}, watched, "the seed's one source watches the Target kinds too")
	for _, tr := range byKind[*eventingv1.Trigger](seedMode) {
		assert.Contains(t, tr.Spec.Filters[0].Any, eventingv1.SubscriptionsAPIFilter{Exact: map[string]string{function.ClusterExtension: "source", "apiversion": "v1", "kind": "Namespace"}}, tr.Name)
	}

	// Confidential kinds: a second adapter per tenant, in Reference mode, so that no secret
	// content travels through the Broker; it ends up in the seed's references source in seed mode.
	confidential := []*function.Function{withTargetWatch(withTargetWatch(demo("gamma", []function.Kind{kinds.Bastion}), kinds.Secret), kinds.Namespace)}
	objs, err = sources.Objects(confidential)
	require.NoError(t, err)
	env = map[string]string{}
	for _, e := range byKind[*sourcesv1.ContainerSource](objs)[0].Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	assert.JSONEq(t, `{"namespaces":null,"allNamespaces":true,"resources":[{"gvr":{"Group":"","Version":"v1","Resource":"namespaces"}}],"mode":"Resource"}`, env["K_SOURCE_CONFIG"])
	assert.JSONEq(t, `{"namespaces":null,"allNamespaces":true,"resources":[{"gvr":{"Group":"","Version":"v1","Resource":"secrets"}}],"mode":"Reference"}`, env["K_REFERENCES_CONFIG"])
	seedMode, err = sources.ObjectsFor(confidential, function.SeedMode)
	require.NoError(t, err)
	for _, s := range byKind[*sourcesv1.ApiServerSource](seedMode) {
		for _, r := range s.Spec.Resources {
			assert.Equal(t, r.Kind == "Secret", s.Spec.EventMode == sourcesv1.ReferenceMode, "%s in %s", r.Kind, s.Name)
		}
	}
	single := withTargetWatch(demo("delta", []function.Kind{kinds.Bastion}), kinds.Namespace)
	single.Deployment = ""
	_, err = sources.Objects([]*function.Function{single})
	assert.ErrorContains(t, err, "per seed", "config/ runs the target source for the functions deployed per seed")
}
