package sources_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	eventingv1 "knative.dev/eventing/pkg/apis/eventing/v1"
	eventingv1alpha1 "knative.dev/eventing/pkg/apis/eventing/v1alpha1"
	sourcesv1 "knative.dev/eventing/pkg/apis/sources/v1"
	"knative.dev/eventing/pkg/auth"
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

// containerEnv is the environment of a cluster source's container, by name.
func containerEnv(cs *sourcesv1.ContainerSource) map[string]string {
	env := map[string]string{}
	for _, e := range cs.Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	return env
}

// N functions share one source per cluster, watching the union of their kinds with read-only
// RBAC for exactly those, and get one Trigger each. The Source's source is our ContainerSource
// watching every namespace, not Knative's ApiServerSource (which writes the namespace list into
// its adapter and restarts it for each namespace).
func TestOneSourcePerClusterOneTriggerPerFunction(t *testing.T) {
	fns := []*function.Function{
		demo("alpha", []function.Kind{kinds.Bastion, kinds.Shoot}),
		demo("beta", []function.Kind{kinds.Shoot, kinds.Secret}, function.Sweep{Name: "resync", Schedule: "*/10 * * * * *", Reconciler: "main", Primary: function.List{Kind: kinds.Shoot}}),
	}
	objs, err := sources.Objects(fns)
	require.NoError(t, err)

	require.Len(t, byKind[*eventingv1.Broker](objs), 1)
	assert.Empty(t, byKind[*sourcesv1.ApiServerSource](objs))
	containers := byKind[*sourcesv1.ContainerSource](objs)
	require.Len(t, containers, 1, "one pod for the garden: content and confidential references")
	cs := containers[0]
	assert.Equal(t, "source-cluster", cs.Name)
	assert.Equal(t, sources.SourceImage, cs.Spec.Template.Spec.Containers[0].Image)
	assert.Equal(t, "Broker", cs.Spec.Sink.Ref.Kind)
	assert.Equal(t, map[string]string{function.ClusterExtension: "source"}, cs.Spec.CloudEventOverrides.Extensions)
	env := containerEnv(cs)
	assert.Equal(t, "source", env["WATCH"])
	assert.NotContains(t, env, "MULTI_TENANT")
	assert.JSONEq(t, `{"namespaces":null,"allNamespaces":true,"resources":[
		{"gvr":{"Group":"core.gardener.cloud","Version":"v1beta1","Resource":"shoots"}},
		{"gvr":{"Group":"operations.gardener.cloud","Version":"v1alpha1","Resource":"bastions"}}],"mode":"Resource"}`,
		env["K_SOURCE_CONFIG"], "the union, each kind once, every namespace without a list")
	assert.JSONEq(t, `{"namespaces":null,"allNamespaces":true,"resources":[{"gvr":{"Group":"","Version":"v1","Resource":"secrets"}}],"mode":"Reference"}`,
		env["K_REFERENCES_CONFIG"], "no Secret content travels through the Broker")

	roles := byKind[*rbacv1.ClusterRole](objs)
	require.Len(t, roles, 1)
	assert.ElementsMatch(t, []rbacv1.PolicyRule{
		{APIGroups: []string{"core.gardener.cloud"}, Resources: []string{"shoots"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"operations.gardener.cloud"}, Resources: []string{"bastions"}, Verbs: []string{"get", "list", "watch"}},
	}, roles[0].Rules, "exactly the watched kinds; no namespaces")
	require.Len(t, byKind[*corev1.ServiceAccount](objs), 1)

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

// A function whose watches name Changes gets adds, deletes and the updates that changed one of
// those parts, through Knative's own filters; the source is told to say which parts each update
// changed. A function with a watch of every update gets them all.
func TestTriggersLetThroughOnlyTheUpdatesAFunctionActsOn(t *testing.T) {
	spec := demo("spec", []function.Kind{kinds.Shoot, kinds.Secret})
	spec.Watches[0].Changes = function.Changes{function.ChangedSpec, function.StatusField("seedName")}
	spec.Watches[1].Changes = function.NoUpdates
	every := demo("every", []function.Kind{kinds.Shoot})
	objs, err := sources.Objects([]*function.Function{spec, every})
	require.NoError(t, err)
	filters := map[string]eventfilter.Filter{}
	for _, tr := range byKind[*eventingv1.Trigger](objs) {
		filters[tr.Name] = subscriptionsapi.CreateSubscriptionsAPIFilters(zap.NewNop(), tr.Spec.Filters)
	}
	routed := func(typ, kind, apiVersion string, changed map[string]string) []string {
		e := cloudevents.NewEvent()
		e.SetID("1")
		e.SetSource("test")
		e.SetType(typ)
		e.SetExtension("apiversion", apiVersion)
		e.SetExtension("kind", kind)
		e.SetExtension(function.ClusterExtension, "source")
		for k, v := range changed {
			e.SetExtension(k, v)
		}
		var to []string
		for _, name := range []string{"every", "spec"} {
			if filters[name].Filter(context.Background(), e) == eventfilter.PassFilter {
				to = append(to, name)
			}
		}
		return to
	}
	const shoot, core = "Shoot", "core.gardener.cloud/v1beta1"
	statusOnly := map[string]string{"chspec": "false", "chseedname": "false"}
	assert.Equal(t, []string{"every"}, routed(function.ResourceUpdateEventType, shoot, core, statusOnly), "a status write")
	assert.Equal(t, []string{"every", "spec"}, routed(function.ResourceUpdateEventType, shoot, core, map[string]string{"chspec": "true", "chseedname": "false"}))
	assert.Equal(t, []string{"every", "spec"}, routed(function.ResourceUpdateEventType, shoot, core, map[string]string{"chspec": "false", "chseedname": "true"}))
	assert.Equal(t, []string{"every", "spec"}, routed(function.ResourceAddEventType, shoot, core, nil))
	assert.Equal(t, []string{"every", "spec"}, routed(function.ResourceDeleteEventType, shoot, core, nil))
	// Secrets are confidential: their events are references.
	assert.Empty(t, routed(function.RefUpdateEventType, "Secret", "v1", map[string]string{"chspec": "true"}), "no update of a Secret")
	assert.Equal(t, []string{"spec"}, routed(function.RefAddEventType, "Secret", "v1", nil))
	assert.Equal(t, []string{"spec"}, routed(function.RefDeleteEventType, "Secret", "v1", nil))

	source := byKind[*sourcesv1.ContainerSource](objs)
	require.Len(t, source, 1)
	var config struct {
		Resources []struct {
			GVR     schema.GroupVersionResource `json:"gvr"`
			Changes []string                    `json:"changes"`
		} `json:"resources"`
	}
	require.NoError(t, json.Unmarshal([]byte(containerEnv(source[0])["K_SOURCE_CONFIG"]), &config))
	changes := map[string][]string{}
	for _, r := range config.Resources {
		changes[r.GVR.Resource] = r.Changes
	}
	assert.Equal(t, map[string][]string{"shoots": {function.ChangedSpec, function.StatusField("seedName")}}, changes, "the source tells of the Shoots' parts alone")
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
	for _, part := range function.AllParts {
		objs, err := sources.PartObjects(part, functions.All, sources.DefaultPlumbing())
		require.NoError(t, err)
		assert.Empty(t, byKind[*sourcesv1.ApiServerSource](objs))
		var deployed []*function.Function
		perSeed, onGarden := false, false
		for _, fn := range functions.All {
			if slices.Contains(fn.Parts, part) {
				deployed = append(deployed, fn)
				perSeed = perSeed || fn.DeploymentMode() == function.PerSeed
				onGarden = onGarden || fn.WorksOnGarden
			}
		}
		containers := byKind[*sourcesv1.ContainerSource](objs)
		want := 1 // the cluster the part runs in, however many functions
		if perSeed {
			want++ // every tenant of the seed
		}
		if onGarden {
			want++ // the garden, for the functions that work on it
		}
		require.Len(t, containers, want, "%s part", part)
		assert.Len(t, byKind[*eventingv1.Trigger](objs), len(deployed), "%s part: a Trigger per function", part)
		// What one ApiServerSource per function, as before, would cost: an adapter each and a watch
		// per function and kind. The figures go into docs/deployment.md.
		perFunctionWatches, watches := 0, 0
		for _, fn := range deployed {
			perFunctionWatches += len(fn.WatchedKinds(function.Source))
		}
		pods := 0
		for _, cs := range containers {
			if cs.Name == sources.SourceName(function.Target) {
				continue
			}
			pods++
			env := containerEnv(cs)
			for _, key := range []string{"K_SOURCE_CONFIG", "K_REFERENCES_CONFIG"} {
				var cfg struct{ Resources []json.RawMessage }
				if env[key] != "" {
					require.NoError(t, json.Unmarshal([]byte(env[key]), &cfg))
				}
				watches += len(cfg.Resources)
			}
		}
		t.Logf("%s part, %d functions: %d source pods and %d watch streams on its cluster and the garden; one source per function would be %d adapters and %d watch streams",
			part, len(deployed), pods, watches, len(deployed), perFunctionWatches)
	}
}

// withTargetWatch adds a watch of kind on the Target cluster to fn.
func withTargetWatch(fn *function.Function, kind function.Kind) *function.Function {
	fn.Deployment = function.PerSeed
	fn.Watches = append(fn.Watches, function.Watch{Kind: kind, Cluster: function.Target, Reconciler: "main",
		Map: func(context.Context, client.Reader, function.Event) ([]function.Key, error) { return nil, nil }})
	return fn
}

// Per seed, one ContainerSource watches every tenant (one always-on pod per seed), watching the
// union of the Target kinds; the Triggers take them with cluster=target.
// In seed mode the Source's source watches them instead, with cluster=source.
func TestTargetSourceOnePerSeed(t *testing.T) {
	fns := []*function.Function{
		withTargetWatch(demo("alpha", []function.Kind{kinds.Bastion}), kinds.Namespace),
		withTargetWatch(demo("beta", []function.Kind{kinds.Shoot}), kinds.Namespace),
	}
	objs, err := sources.Objects(fns)
	require.NoError(t, err)
	containers := byKind[*sourcesv1.ContainerSource](objs)
	require.Len(t, containers, 2, "the Source's source, and one target source for all functions and tenants")
	cs := containers[1]
	assert.Equal(t, sources.SourceName(function.Target), cs.Name)
	assert.Equal(t, map[string]string{function.ClusterExtension: "target"}, cs.Spec.CloudEventOverrides.Extensions)
	assert.Equal(t, sources.SourceImage, cs.Spec.Template.Spec.Containers[0].Image)
	env := containerEnv(cs)
	assert.Equal(t, "target", env["WATCH"])
	assert.Equal(t, "true", env["MULTI_TENANT"])
	assert.JSONEq(t, `{"namespaces":null,"allNamespaces":true,"resources":[{"gvr":{"Group":"","Version":"v1","Resource":"namespaces"}}],"mode":"Resource"}`, env["K_SOURCE_CONFIG"])
	for _, tr := range byKind[*eventingv1.Trigger](objs) {
		assert.Contains(t, tr.Spec.Filters[0].Any, eventingv1.SubscriptionsAPIFilter{Exact: map[string]string{function.ClusterExtension: "target", "apiversion": "v1", "kind": "Namespace"}}, tr.Name)
	}
	roles := byKind[*rbacv1.ClusterRole](objs)
	var targetRole *rbacv1.ClusterRole
	for _, r := range roles {
		if r.Name == "gardener-knative:"+sources.SourceName(function.Target) {
			targetRole = r
		}
	}
	require.NotNil(t, targetRole, "the target source finds and reaches the tenants in the seed")

	seedMode, err := sources.ObjectsFor(fns, function.SeedMode, sources.DefaultPlumbing())
	require.NoError(t, err)
	seedSources := byKind[*sourcesv1.ContainerSource](seedMode)
	require.Len(t, seedSources, 1)
	assert.Equal(t, sources.SourceName(function.Source), seedSources[0].Name)
	var watched struct {
		Resources []struct{ GVR struct{ Resource string } }
	}
	require.NoError(t, json.Unmarshal([]byte(containerEnv(seedSources[0])["K_SOURCE_CONFIG"]), &watched))
	var resources []string
	for _, r := range watched.Resources {
		resources = append(resources, r.GVR.Resource)
	}
	assert.ElementsMatch(t, []string{"bastions", "shoots", "namespaces"}, resources, "the seed's one source watches the Target kinds too")
	for _, tr := range byKind[*eventingv1.Trigger](seedMode) {
		assert.Contains(t, tr.Spec.Filters[0].Any, eventingv1.SubscriptionsAPIFilter{Exact: map[string]string{function.ClusterExtension: "source", "apiversion": "v1", "kind": "Namespace"}}, tr.Name)
	}

	// Confidential kinds: a second configuration, watched per tenant in Reference mode, so that
	// no secret content travels through the Broker; it ends up in the seed's references source in
	// seed mode.
	confidential := []*function.Function{withTargetWatch(withTargetWatch(demo("gamma", []function.Kind{kinds.Bastion}), kinds.Secret), kinds.Namespace)}
	objs, err = sources.Objects(confidential)
	require.NoError(t, err)
	env = containerEnv(byKind[*sourcesv1.ContainerSource](objs)[1])
	assert.JSONEq(t, `{"namespaces":null,"allNamespaces":true,"resources":[{"gvr":{"Group":"","Version":"v1","Resource":"namespaces"}}],"mode":"Resource"}`, env["K_SOURCE_CONFIG"])
	assert.JSONEq(t, `{"namespaces":null,"allNamespaces":true,"resources":[{"gvr":{"Group":"","Version":"v1","Resource":"secrets"}}],"mode":"Reference"}`, env["K_REFERENCES_CONFIG"])
	seedMode, err = sources.ObjectsFor(confidential, function.SeedMode, sources.DefaultPlumbing())
	require.NoError(t, err)
	env = containerEnv(byKind[*sourcesv1.ContainerSource](seedMode)[0])
	assert.JSONEq(t, `{"namespaces":null,"allNamespaces":true,"resources":[{"gvr":{"Group":"","Version":"v1","Resource":"secrets"}}],"mode":"Reference"}`, env["K_REFERENCES_CONFIG"])
	single := withTargetWatch(demo("delta", []function.Kind{kinds.Bastion}), kinds.Namespace)
	single.Deployment = ""
	_, err = sources.Objects([]*function.Function{single})
	assert.ErrorContains(t, err, "per seed", "config/ runs the target source for the functions deployed per seed")
}

// A function that works on the garden takes its Source events from the garden's own source,
// which reaches the garden with the part's garden access and is granted nothing where it runs;
// the part's local source watches the other functions' kinds and its Target's (where it runs:
// gardener-operator's Extensions), and each Trigger takes its kinds from its own cluster's
// source.
func TestGardenSource(t *testing.T) {
	onGarden := withTargetWatch(demo("alpha", []function.Kind{kinds.ControllerInstallation, kinds.ControllerDeployment}), kinds.Extension)
	onGarden.Deployment = ""
	onGarden.WorksOnGarden = true
	// Its seed's installations only, by the seed's name from the garden access.
	onGarden.GardenInputs = map[string]string{"SEED_NAME": "seedName"}
	onGarden.Config = &struct {
		Seed string `envconfig:"SEED_NAME"`
	}{}
	onGarden.Scopes = []function.Scope{{Kind: kinds.ControllerInstallation, Field: "spec.seedRef.name", Setting: "SEED_NAME"}}
	local := demo("beta", []function.Kind{kinds.Secret, kinds.ControllerInstallation})
	objs, err := sources.Objects([]*function.Function{onGarden, local})
	require.NoError(t, err)
	containers := byKind[*sourcesv1.ContainerSource](objs)
	require.Len(t, containers, 2, "the cluster the part runs in, and the garden")
	garden := containers[1]
	assert.Equal(t, "garden-cluster", garden.Name)
	assert.Equal(t, map[string]string{function.ClusterExtension: "garden"}, garden.Spec.CloudEventOverrides.Extensions)
	env := containerEnv(garden)
	assert.Equal(t, "garden", env["WATCH"])
	assert.Equal(t, sources.GardenMountPath+"/kubeconfig", env["GARDEN_KUBECONFIG"])
	assert.JSONEq(t, `{"namespaces":null,"allNamespaces":true,"resources":[
		{"gvr":{"Group":"core.gardener.cloud","Version":"v1beta1","Resource":"controllerdeployments"}},
		{"gvr":{"Group":"core.gardener.cloud","Version":"v1beta1","Resource":"controllerinstallations"},"fieldSelector":"spec.seedRef.name=$(SEED_NAME)"}],"mode":"Resource"}`, env["K_SOURCE_CONFIG"])
	var names []string
	for _, e := range garden.Spec.Template.Spec.Containers[0].Env {
		names = append(names, e.Name)
		if e.Name == "SEED_NAME" {
			assert.Equal(t, &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: function.GardenAccessSecret}, Key: "seedName"}, e.ValueFrom.SecretKeyRef)
		}
	}
	assert.Less(t, slices.Index(names, "SEED_NAME"), slices.Index(names, "K_SOURCE_CONFIG"), "defined before the configuration, so that Kubernetes expands it there")
	assert.NotEqual(t, -1, slices.Index(names, "SEED_NAME"))
	spec := garden.Spec.Template.Spec
	require.Len(t, spec.Volumes, 1)
	assert.Equal(t, function.GardenAccessSecret, spec.Volumes[0].Secret.SecretName)
	assert.Equal(t, sources.GardenMountPath, spec.Containers[0].VolumeMounts[0].MountPath)
	for _, role := range byKind[*rbacv1.ClusterRole](objs) {
		assert.NotContains(t, role.Name, "garden-cluster", "the garden's source needs no rights where it runs")
	}
	assert.JSONEq(t, `{"namespaces":null,"allNamespaces":true,"resources":[
		{"gvr":{"Group":"core.gardener.cloud","Version":"v1beta1","Resource":"controllerinstallations"}},
		{"gvr":{"Group":"operator.gardener.cloud","Version":"v1alpha1","Resource":"extensions"}}],"mode":"Resource"}`,
		containerEnv(containers[0])["K_SOURCE_CONFIG"], "the local source watches beta's kinds and alpha's Target, none of alpha's garden")

	filters := map[string][]eventingv1.SubscriptionsAPIFilter{}
	for _, tr := range byKind[*eventingv1.Trigger](objs) {
		filters[tr.Name] = tr.Spec.Filters[0].Any
	}
	installations := func(cluster string) eventingv1.SubscriptionsAPIFilter {
		return eventingv1.SubscriptionsAPIFilter{Exact: map[string]string{function.ClusterExtension: cluster, "apiversion": "core.gardener.cloud/v1beta1", "kind": "ControllerInstallation"}}
	}
	assert.Contains(t, filters["alpha"], installations("garden"))
	assert.NotContains(t, filters["alpha"], installations("source"))
	assert.Contains(t, filters["beta"], installations("source"))
	assert.NotContains(t, filters["beta"], installations("garden"))
	assert.Contains(t, filters["alpha"], eventingv1.SubscriptionsAPIFilter{Exact: map[string]string{function.ClusterExtension: "source", "apiversion": "operator.gardener.cloud/v1alpha1", "kind": "Extension"}},
		"alpha's Target is where it runs: the local source's")
}

// With Knative's authentication-oidc on, the Broker's filter sends a function's events with a
// token of its Trigger's OIDC ServiceAccount for the audience its Trigger names; the function
// honours those only (EVENT_AUDIENCE, EVENT_SENDERS). The names are Knative's own formulas; the
// Broker takes events only from the part's sources (its EventPolicy).
func TestSendersAreTheTriggersAndTheSources(t *testing.T) {
	objs, err := sources.Objects(functions.All)
	require.NoError(t, err)
	triggerKind := eventingv1.SchemeGroupVersion.WithKind("Trigger")
	var policies []*eventingv1alpha1.EventPolicy
	var senders []string
	for _, obj := range objs {
		switch o := obj.(type) {
		case *eventingv1.Trigger:
			require.NotNil(t, o.Spec.Subscriber.Audience, o.Name)
			assert.Equal(t, auth.GetAudienceDirect(servingService, o.Namespace, o.Spec.Subscriber.Ref.Name), *o.Spec.Subscriber.Audience)
			assert.Equal(t, sources.EventAudience(o.Namespace, o.Spec.Subscriber.Ref.Name), *o.Spec.Subscriber.Audience)
			assert.Equal(t, "system:serviceaccount:"+o.Namespace+":"+auth.GetOIDCServiceAccountNameForResource(triggerKind, o.ObjectMeta), sources.TriggerSender(o.Namespace, o.Name))
		case *sourcesv1.ContainerSource, *sourcesv1.PingSource:
			senders = append(senders, obj.GetObjectKind().GroupVersionKind().Kind+"/"+obj.GetName())
		case *eventingv1alpha1.EventPolicy:
			policies = append(policies, o)
		}
	}
	require.Len(t, policies, 1)
	var from []string
	for _, f := range policies[0].Spec.From {
		require.NotNil(t, f.Ref, "senders by reference, resolved by Knative")
		from = append(from, f.Ref.Kind+"/"+f.Ref.Name)
	}
	assert.ElementsMatch(t, senders, from)
	require.Len(t, policies[0].Spec.To, 1)
	assert.Equal(t, "Broker", policies[0].Spec.To[0].Ref.Kind)
}

var servingService = schema.GroupVersionKind{Group: "serving.knative.dev", Version: "v1", Kind: "Service"}
