// Package sources is the event plumbing, derived from the function registry (functions.All):
// one source per cluster watching the union of every function's kinds (a ContainerSource of ours,
// sources/clusters, sending Knative's ApiServerSource events), in Resource mode so that predicates
// run on the event alone; one Broker they all send to; one Trigger per
// function, filtering on the events' kind, apiversion and cluster (and, for pings, the function)
// with the Broker's retry and dead-letter delivery policy; one PingSource per sweep, sent through the same
// Broker. hack/genconfig writes Objects into config/; the local landscape runs the very same
// objects through the real cluster sources and Knative's Trigger filters.
package sources

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"knative.dev/eventing/pkg/adapter/apiserver"
	eventingv1 "knative.dev/eventing/pkg/apis/eventing/v1"
	eventingv1alpha1 "knative.dev/eventing/pkg/apis/eventing/v1alpha1"
	sourcesv1 "knative.dev/eventing/pkg/apis/sources/v1"
	duckv1 "knative.dev/pkg/apis/duck/v1"
	"knative.dev/pkg/kmeta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/clustersource"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/access"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/clients"
)

const (
	// Namespace is where the seed part's functions, sources, Broker and Triggers live
	// (function.Seed.Namespace()), and the one namespace of the plumbing of functions of several
	// parts run together (ObjectsFor: one cluster that is garden, runtime cluster and seed at once,
	// as the local landscape is).
	Namespace = function.SeedNamespace
	// Broker is the one Broker of a part every source of the part sends to.
	Broker = "gardener-knative"
	// FunctionExtension is the CloudEvents extension a function's PingSources set to its name,
	// so that its Trigger lets its ticks through.
	FunctionExtension = "function"
	// DeadLetter is the Knative Service that receives what the Broker could not deliver after
	// its retries (sources/deadletter): it logs and counts each event for operators.
	DeadLetter = "dead-letter"
)

// SourceName is the name of the event source of cluster c (a ContainerSource running
// sources/clusters), of its ServiceAccount and of its ClusterRole: source-cluster (the cluster
// the part runs in), target-clusters (every tenant of the seed, or the one target) and
// garden-cluster (the garden, for the functions that work on it).
func SourceName(c function.Cluster) string {
	if c == function.Target {
		return "target-clusters"
	}
	return string(c) + "-cluster"
}

// GardenMountPath is where config/ mounts a part's garden access (function.GardenAccessSecret)
// into the garden's source, an always-on pod (the functions, woken from zero, are given it as
// environment: function.Config.GardenKubeconfigData).
const GardenMountPath = "/var/run/secrets/gardener-knative/garden"

// SourceImage is the cluster sources' image, as ko builds it.
const SourceImage = "ko://github.com/gardener-knative/gardener-knative/sources/clusters"

// PingSourceName is the name of the PingSource of one of a function's sweeps.
func PingSourceName(fn, sweep string) string { return fn + "-" + sweep }

// PingData is the payload of a sweep's PingSource.
func PingData(sweep string) string { return fmt.Sprintf(`{"sweep":%q}`, sweep) }

// Objects returns the event plumbing of the functions as config/ deploys it, their Targets served
// per seed (function.PerSeed): the Broker; for the Source cluster a ContainerSource of ours
// watching every namespace, with its ServiceAccount and read-only RBAC; for the Target clusters
// one watching every tenant of the seed; per function its Trigger and its PingSources.
// Every source and Trigger passes Knative's own validation.
func Objects(fns []*function.Function) ([]client.Object, error) {
	return PartObjects("", fns, DefaultPlumbing())
}

// PartObjects is the event plumbing of part of config/ (Objects, with plumbing's Broker): of the
// functions among fns that the part deploys, in the part's namespace, its cluster-scoped
// objects named after that namespace, so that the parts of a runtime cluster that is also a seed
// stand side by side. An empty part is the plumbing of every function in one namespace
// (Namespace).
func PartObjects(part function.Part, fns []*function.Function, plumbing Plumbing) ([]client.Object, error) {
	namespace := Namespace
	if part != "" {
		namespace = part.Namespace()
		fns = slices.DeleteFunc(slices.Clone(fns), func(fn *function.Function) bool { return !slices.Contains(fn.Parts, part) })
	}
	for _, fn := range fns {
		// A function that works on the garden has the cluster it runs in as its Target, which the
		// part's own source watches.
		if len(fn.WatchedKinds(function.Target)) > 0 && fn.DeploymentMode() != function.PerSeed && !fn.WorksOnGarden {
			return nil, fmt.Errorf("function %s watches its Target %s: config/ runs one target source per seed for the functions deployed per seed", fn.Name, fn.DeploymentMode())
		}
	}
	return objectsIn(namespace, fns, function.PerSeed, plumbing)
}

// ObjectsFor is Objects for the functions' Targets served in mode: per seed and single-target,
// the target-clusters source watches the Target kinds (every tenant, or TARGET_KUBECONFIG's
// cluster); in seed mode the Source is the Target, so the Source's source watches them too and
// the Triggers take them from it (cluster=source). The Broker is of plumbing's class and
// carries its delivery, which every Trigger inherits.
func ObjectsFor(fns []*function.Function, mode function.Mode, plumbing Plumbing) ([]client.Object, error) {
	return objectsIn(Namespace, fns, mode, plumbing)
}

func objectsIn(namespace string, fns []*function.Function, mode function.Mode, plumbing Plumbing) ([]client.Object, error) {
	if err := plumbing.Validate(); err != nil {
		return nil, fmt.Errorf("event plumbing: %w", err)
	}
	var errs []error
	names := map[string]bool{}
	for _, fn := range fns {
		if names[fn.Name] {
			errs = append(errs, fmt.Errorf("function %q is registered twice", fn.Name))
		}
		names[fn.Name] = true
		if err := fn.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("function %s: %w", fn.Name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	ctx := context.Background()
	broker := &eventingv1.Broker{
		TypeMeta:   metav1.TypeMeta{APIVersion: eventingv1.SchemeGroupVersion.String(), Kind: "Broker"},
		ObjectMeta: objectMeta(namespace, "eventing", Broker),
	}
	// docs/deployment.md says what durability each class (and channel) gives.
	broker.Annotations = map[string]string{eventingv1.BrokerClassAnnotationKey: plumbing.BrokerClass}
	broker.Spec = eventingv1.BrokerSpec{Config: plumbing.BrokerConfig, Delivery: plumbing.Delivery()}
	if err := broker.Validate(ctx); err != nil {
		return nil, fmt.Errorf("broker is invalid: %w", err)
	}
	objs := []client.Object{broker}
	var senders []client.Object
	for _, c := range []function.Cluster{function.Source, function.Target, function.Garden} {
		if watches := watchedResources(fns, c, mode); len(watches) > 0 {
			source, err := clusterSource(namespace, c, watches, mode)
			if err != nil {
				return nil, err
			}
			objs = append(objs, source...)
			for _, obj := range source {
				if cs, ok := obj.(*sourcesv1.ContainerSource); ok {
					senders = append(senders, cs)
				}
			}
		}
	}
	for _, fn := range fns {
		trigger := triggerOf(namespace, fn, mode)
		if err := trigger.Validate(ctx); err != nil {
			return nil, fmt.Errorf("function %s: Trigger is invalid: %w", fn.Name, err)
		}
		objs = append(objs, trigger)
		// Schedules that follow the configuration (a syncPeriod) follow its defaults here.
		config, err := function.LoadConfig(fn, fn.DeployedConfigs())
		if err != nil {
			return nil, fmt.Errorf("function %s: %w", fn.Name, err)
		}
		for _, sw := range fn.Sweeps {
			ping := &sourcesv1.PingSource{
				TypeMeta:   metav1.TypeMeta{APIVersion: sourcesv1.SchemeGroupVersion.String(), Kind: "PingSource"},
				ObjectMeta: objectMeta(namespace, fn.Name, PingSourceName(fn.Name, sw.Name)),
				Spec: sourcesv1.PingSourceSpec{
					SourceSpec: duckv1.SourceSpec{
						Sink:                brokerSink(),
						CloudEventOverrides: &duckv1.CloudEventOverrides{Extensions: map[string]string{FunctionExtension: fn.Name}},
					},
					Schedule:    sw.ScheduleOf(config),
					Timezone:    sw.Timezone,
					ContentType: "application/json",
					Data:        PingData(sw.Name),
				},
			}
			if err := ping.Validate(ctx); err != nil {
				return nil, fmt.Errorf("function %s: PingSource %s is invalid: %w", fn.Name, ping.Name, err)
			}
			objs = append(objs, ping)
			senders = append(senders, ping)
		}
	}
	policy := sendersPolicy(namespace, senders)
	if err := policy.Validate(ctx); err != nil {
		return nil, fmt.Errorf("EventPolicy %s is invalid: %w", policy.Name, err)
	}
	return append(objs, policy), nil
}

// watchedResource is one resource entry of a source: a kind, and the label and field selectors
// that narrow its watch ("" for none). A field selector refers to a garden input (a function's
// Scope), which the source's container gets as the variable input from the key inputKey of the
// part's garden access.
type watchedResource struct {
	kind          function.Kind
	labelSelector string
	fieldSelector string
	// changes are the parts whose change the source tells of each update (function.Changes):
	// what any function's Trigger filters the kind's updates on.
	changes  []string
	input    string
	inputKey string
}

// watchedResources is the union of what the functions watch on cluster c (the cluster of a
// source: eventCluster), sorted: each kind once unfiltered when any watch of it has no selector,
// else once per distinct pair of selectors. In seed mode the Source's watches include the
// Target's, and the Target has none of its own; the Source watches of functions that work on the
// garden are the garden's, within the functions' scopes.
func watchedResources(fns []*function.Function, c function.Cluster, mode function.Mode) []watchedResource {
	kinds := map[schema.GroupVersionKind]function.Kind{}
	selected := map[schema.GroupVersionKind]map[[2]string]watchedResource{}
	changes := map[schema.GroupVersionKind][]string{}
	for _, fn := range fns {
		for _, w := range fn.Watches {
			if eventCluster(fn, clusterOf(w), mode) != c {
				continue
			}
			gvk := w.Kind.GroupVersionKind
			kinds[gvk] = w.Kind
			parts, _ := fn.ChangesOf(clusterOf(w), w.Kind)
			for _, part := range parts {
				if !slices.Contains(changes[gvk], part) {
					changes[gvk] = append(changes[gvk], part)
				}
			}
			if selected[gvk] == nil {
				selected[gvk] = map[[2]string]watchedResource{}
			}
			r := watchedResource{kind: w.Kind, labelSelector: w.LabelSelector}
			for _, sc := range fn.Scopes {
				if clusterOf(w) == function.Source && sc.Kind.GroupKind() == w.Kind.GroupKind() {
					r.fieldSelector, r.input, r.inputKey = sc.SourceSelector(), sc.Setting, fn.GardenInputs[sc.Setting]
				}
			}
			selected[gvk][[2]string{r.labelSelector, r.fieldSelector}] = r
		}
	}
	var out []watchedResource
	for gvk, k := range kinds {
		slices.Sort(changes[gvk])
		if _, unfiltered := selected[gvk][[2]string{}]; unfiltered {
			out = append(out, watchedResource{kind: k, changes: changes[gvk]})
			continue
		}
		for _, r := range selected[gvk] {
			r.changes = changes[gvk]
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.kind.Group != b.kind.Group {
			return a.kind.Group < b.kind.Group
		}
		if a.kind.Kind != b.kind.Kind {
			return a.kind.Kind < b.kind.Kind
		}
		if a.labelSelector != b.labelSelector {
			return a.labelSelector < b.labelSelector
		}
		return a.fieldSelector < b.fieldSelector
	})
	return out
}

func clusterOf(w function.Watch) function.Cluster {
	if w.Cluster == "" {
		return function.Source
	}
	return w.Cluster
}

// eventCluster is the cluster whose source sends the events of fn's watches on c: the garden's
// for the Source of a function that works on the garden, and the part's own source (of the
// cluster it runs in) for its Target; the Source's for the Target too in seed mode.
func eventCluster(fn *function.Function, c function.Cluster, mode function.Mode) function.Cluster {
	switch {
	case c == function.Source && fn.WorksOnGarden:
		return function.Garden
	case c == function.Target && (fn.WorksOnGarden || mode == function.SeedMode):
		return function.Source
	}
	return c
}

// adapterConfig is the configuration (K_SOURCE_CONFIG, in the format of Knative's
// ApiServerSource adapter with our field selectors: clustersource.Config) of a cluster source's
// watches of the resources in every namespace, in mode (Resource or Reference).
func adapterConfig(watches []watchedResource, mode string) clustersource.Config {
	cfg := clustersource.Config{Config: apiserver.Config{AllNamespaces: true, EventMode: mode}}
	for _, w := range watches {
		// The resource is guessed from the kind, as Knative's controller does.
		gvr, _ := meta.UnsafeGuessKindToResource(w.kind.GroupVersionKind)
		cfg.Resources = append(cfg.Resources, clustersource.ResourceWatch{
			ResourceWatch: apiserver.ResourceWatch{GVR: gvr, LabelSelector: w.labelSelector}, FieldSelector: w.fieldSelector, Changes: w.changes,
		})
	}
	return cfg
}

// clusterSource is the event source of cluster c: a ContainerSource running our watchers
// (sources/clusters) on every namespace of the Source or of the garden, or on every tenant of
// the seed (or the single target) for the Target, with its ServiceAccount and RBAC. For the
// Source that is get, list and watch on exactly the watched kinds; for the tenants, what finds
// and reaches them in the seed (their watches run with each tenant's own access, no RBAC of ours
// is needed there); the garden's is reached with the part's garden access, whose identity needs
// get, list and watch on the watched kinds there, and none where the source runs.
//
// Not Knative's ApiServerSource: its controller writes the list of every namespace into its
// adapter's Deployment even for an empty namespace selector, so that each namespace created or
// deleted rolls the adapter and loses the events of that moment (pkg/clustersource).
func clusterSource(namespace string, c function.Cluster, watches []watchedResource, mode function.Mode) ([]client.Object, error) {
	name := SourceName(c)
	// Resource mode, so that predicates decide on the event alone; Reference mode for
	// confidential kinds, whose content must not travel through the Broker: one configuration
	// each, in the same pod.
	var resources, references []watchedResource
	kinds := make([]function.Kind, 0, len(watches))
	env := []corev1.EnvVar{
		{Name: "NAME", Value: name},
		{Name: "NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
		{Name: clustersource.WatchEnv, Value: string(c)},
	}
	inputs := map[string]bool{}
	for _, w := range watches {
		kinds = append(kinds, w.kind)
		if w.kind.Confidential {
			references = append(references, w)
		} else {
			resources = append(resources, w)
		}
		if w.input != "" && !inputs[w.input] {
			// Before the configurations that refer to it, so that Kubernetes expands it there.
			inputs[w.input] = true
			env = append(env, corev1.EnvVar{Name: w.input, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: function.GardenAccessSecret}, Key: w.inputKey}}})
		}
	}
	for _, cfg := range []struct {
		name, mode string
		watched    []watchedResource
	}{
		{clustersource.ResourcesConfigEnv, sourcesv1.ResourceMode, resources},
		{clustersource.ReferencesConfigEnv, sourcesv1.ReferenceMode, references},
	} {
		if len(cfg.watched) == 0 {
			continue
		}
		config, err := json.Marshal(adapterConfig(cfg.watched, cfg.mode))
		if err != nil {
			return nil, err
		}
		env = append(env, corev1.EnvVar{Name: cfg.name, Value: string(config)})
	}
	sa := &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: objectMeta(namespace, "eventing", name),
	}
	role := &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
		ObjectMeta: clusterObjectMeta("eventing", ClusterScopedName(namespace, name)),
	}
	var tenantRole *rbacv1.ClusterRole
	var volumes []corev1.Volume
	var mounts []corev1.VolumeMount
	switch {
	case c == function.Source:
		role.Rules = WatchRules(kinds)
	case c == function.Garden:
		role = nil
		env = append(env, corev1.EnvVar{Name: "GARDEN_KUBECONFIG", Value: GardenMountPath + "/" + function.GardenAccessKubeconfigKey})
		volumes = []corev1.Volume{{Name: "garden", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: function.GardenAccessSecret}}}}
		mounts = []corev1.VolumeMount{{Name: "garden", MountPath: GardenMountPath, ReadOnly: true}}
	case mode == function.PerSeed:
		env = append(env, corev1.EnvVar{Name: "MULTI_TENANT", Value: "true"})
		// The tenants: the seed's Clusters; each tenant's access Secrets in enrolled tenants'
		// namespaces only (bound there by the enrolment).
		role.Rules = []rbacv1.PolicyRule{{APIGroups: []string{clients.ClusterGroup}, Resources: []string{clients.ClusterResource}, Verbs: []string{"get", "list"}}}
		tenantRole = &rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
			ObjectMeta: clusterObjectMeta("eventing", ClusterScopedName(namespace, name+":tenant")),
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}},
		}
		tenantRole.Labels[access.RoleLabel] = name
	default:
		// Single target: its kubeconfig from the Secret target-clusters-target; nothing to do
		// in the seed.
		role = nil
		env = append(env, corev1.EnvVar{Name: "TARGET_KUBECONFIG", Value: "/var/run/secrets/gardener-knative/target/kubeconfig"})
		volumes = []corev1.Volume{{Name: "target", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: name + "-target"}}}}
		mounts = []corev1.VolumeMount{{Name: "target", MountPath: "/var/run/secrets/gardener-knative/target", ReadOnly: true}}
	}
	objs := []client.Object{sa}
	if role != nil {
		objs = append(objs, role, &rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
			ObjectMeta: clusterObjectMeta("eventing", role.Name),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: namespace}},
		})
	}
	if tenantRole != nil {
		objs = append(objs, tenantRole)
	}
	source := &sourcesv1.ContainerSource{
		TypeMeta:   metav1.TypeMeta{APIVersion: sourcesv1.SchemeGroupVersion.String(), Kind: "ContainerSource"},
		ObjectMeta: objectMeta(namespace, "eventing", name),
		Spec: sourcesv1.ContainerSourceSpec{
			SourceSpec: duckv1.SourceSpec{
				Sink:                brokerSink(),
				CloudEventOverrides: &duckv1.CloudEventOverrides{Extensions: map[string]string{function.ClusterExtension: string(c)}},
			},
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				ServiceAccountName: sa.Name,
				Containers: []corev1.Container{{
					Name: "adapter", Image: SourceImage, Env: env, VolumeMounts: mounts,
					Ports:          []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
					ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(8080)}}},
					LivenessProbe:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}}},
					Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
					},
				}},
				Volumes: volumes,
			}},
		},
	}
	if err := source.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("ContainerSource %s is invalid: %w", source.Name, err)
	}
	return append(objs, source), nil
}

// triggerOf routes to fn the events of the kinds it watches (by apiversion, kind and cluster,
// the extensions the sources set) and its own ticks.
func triggerOf(namespace string, fn *function.Function, mode function.Mode) *eventingv1.Trigger {
	var any []eventingv1.SubscriptionsAPIFilter
	seen := map[string]bool{}
	for _, c := range fn.Clusters() {
		for _, k := range fn.WatchedKinds(c) {
			from := eventCluster(fn, c, mode)
			if key := string(from) + "/" + k.GroupVersion().String() + "/" + k.Kind; !seen[key] {
				seen[key] = true
				exact := func(extra ...string) eventingv1.SubscriptionsAPIFilter {
					attrs := map[string]string{function.ClusterExtension: string(from), "apiversion": k.GroupVersion().String(), "kind": k.Kind}
					for _, name := range extra {
						attrs[name] = "true"
					}
					return eventingv1.SubscriptionsAPIFilter{Exact: attrs}
				}
				parts, filtered := fn.ChangesOf(c, k)
				if !filtered {
					any = append(any, exact())
					continue
				}
				// Adds and deletes, and only the updates that changed a part the function acts on.
				add, del := function.ResourceAddEventType, function.ResourceDeleteEventType
				if k.Confidential {
					add, del = function.RefAddEventType, function.RefDeleteEventType
				}
				for _, t := range []string{add, del} {
					f := exact()
					f.Exact["type"] = t
					any = append(any, f)
				}
				for _, part := range parts {
					any = append(any, exact(function.ChangeAttribute(part)))
				}
			}
		}
	}
	if len(fn.Sweeps) > 0 {
		any = append(any, eventingv1.SubscriptionsAPIFilter{Exact: map[string]string{"type": function.PingEventType, FunctionExtension: fn.Name}})
	}
	meta := objectMeta(namespace, fn.Name, fn.Name)
	// Knative's defaulting labels a Trigger with its Broker; set here, what is applied is what runs.
	meta.Labels["eventing.knative.dev/broker"] = Broker
	return &eventingv1.Trigger{
		TypeMeta:   metav1.TypeMeta{APIVersion: eventingv1.SchemeGroupVersion.String(), Kind: "Trigger"},
		ObjectMeta: meta,
		Spec: eventingv1.TriggerSpec{
			Broker:  Broker,
			Filters: []eventingv1.SubscriptionsAPIFilter{{Any: any}},
			Subscriber: duckv1.Destination{
				Ref: &duckv1.KReference{APIVersion: "serving.knative.dev/v1", Kind: "Service", Name: fn.Name},
				// A Knative Service names no audience of its own: without one, the Broker's filter
				// would send no token, and the function would refuse every event (pkg/eventauth).
				Audience: ptr.To(EventAudience(namespace, fn.Name)),
			},
			// No delivery of its own: the Broker's (Plumbing) applies, one place to choose it.
		},
	}
}

// EventAudience is the audience of the tokens the Broker's filter sends a function's events with
// (Knative's authentication-oidc): the one its Trigger names for its subscriber, which the
// function checks (EVENT_AUDIENCE, pkg/eventauth). Knative's own form for an addressable,
// <group>/<kind>/<namespace>/<name> (knative.dev/eventing/pkg/auth.GetAudienceDirect).
func EventAudience(namespace, service string) string {
	return strings.ToLower("serving.knative.dev/service/" + namespace + "/" + service)
}

// TriggerSender is the identity the Broker's filter delivers a Trigger's events as: the
// Trigger's OIDC ServiceAccount, which Knative's Trigger reconciler creates
// (knative.dev/eventing/pkg/auth.GetOIDCServiceAccountNameForResource), as a user name. Its
// function honours only its own Trigger's (EVENT_SENDERS).
func TriggerSender(namespace, trigger string) string {
	return "system:serviceaccount:" + namespace + ":" + TriggerServiceAccount(trigger)
}

// TriggerServiceAccount is the name of a Trigger's OIDC ServiceAccount in its namespace.
func TriggerServiceAccount(trigger string) string {
	return strings.ToLower(kmeta.ChildName(trigger, "-oidc-eventing.knative.dev-trigger"))
}

// SendersPolicy is the EventPolicy name of a part's Broker: only the part's own sources may send
// to it (Knative's broker ingress refuses every other sender with authentication-oidc on).
const SendersPolicy = "gardener-knative-sources"

// sendersPolicy lets the sources of a part (its ContainerSources and PingSources, by their OIDC
// identities, which Knative resolves from each one's status) send to the part's Broker, and no
// one else.
func sendersPolicy(namespace string, senders []client.Object) *eventingv1alpha1.EventPolicy {
	policy := &eventingv1alpha1.EventPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: eventingv1alpha1.SchemeGroupVersion.String(), Kind: "EventPolicy"},
		ObjectMeta: objectMeta(namespace, "eventing", SendersPolicy),
		Spec: eventingv1alpha1.EventPolicySpec{
			To: []eventingv1alpha1.EventPolicySpecTo{{Ref: &eventingv1alpha1.EventPolicyToReference{
				APIVersion: eventingv1.SchemeGroupVersion.String(), Kind: "Broker", Name: Broker}}},
		},
	}
	for _, sender := range senders {
		gvk := sender.GetObjectKind().GroupVersionKind()
		policy.Spec.From = append(policy.Spec.From, eventingv1alpha1.EventPolicySpecFrom{Ref: &eventingv1alpha1.EventPolicyFromReference{
			APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: sender.GetName(), Namespace: namespace}})
	}
	return policy
}

func brokerSink() duckv1.Destination {
	return duckv1.Destination{Ref: &duckv1.KReference{APIVersion: eventingv1.SchemeGroupVersion.String(), Kind: "Broker", Name: Broker}}
}

func objectMeta(namespace, component, name string) metav1.ObjectMeta {
	m := clusterObjectMeta(component, name)
	m.Namespace = namespace
	return m
}

// ClusterScopedName is the name of a cluster-scoped object (a ClusterRole, its binding) of the
// part in namespace: <namespace>:<name>, so that two parts in one cluster never share one.
func ClusterScopedName(namespace, name string) string { return namespace + ":" + name }

func clusterObjectMeta(component, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: name,
		Labels: map[string]string{
			"app.kubernetes.io/part-of":   "gardener-knative",
			"app.kubernetes.io/component": component,
		},
	}
}

// WatchRules allow get, list and watch on exactly the given kinds, one rule per group: what a
// cluster source of them needs.
func WatchRules(kinds []function.Kind) []rbacv1.PolicyRule {
	var rules []rbacv1.PolicyRule
	index := map[string]int{}
	for _, k := range kinds {
		i, ok := index[k.Group]
		if !ok {
			i = len(rules)
			index[k.Group] = i
			rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{k.Group}, Verbs: []string{"get", "list", "watch"}})
		}
		if !slices.Contains(rules[i].Resources, k.Resource) {
			rules[i].Resources = append(rules[i].Resources, k.Resource)
		}
	}
	return rules
}
