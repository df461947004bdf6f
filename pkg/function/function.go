// Package function is the runtime every controller of gardener-knative runs on.
//
// A function is one typed declaration (Function): the kinds it watches, each with a cheap
// predicate on the event and a mapping to keys; the reconcilers it hosts; its sweeps and their
// schedules; its configuration; and which cluster each watch, list and client is on. The
// registry in functions/ lists every declaration, and everything else derives from it: the
// Knative sources, Broker Triggers and RBAC in config/, the local landscape, the docs tables and
// the functiontest harness. Nothing is declared twice.
//
// The runtime serves the CloudEvents that the shared cluster sources (ApiServerSource events) and
// the PingSources send through the Broker, reads state with uncached clients, runs sweeps over
// one paginated LIST per kind, gives reconcilers a Writer that makes every write optimistic and
// never drops fields the API types do not know, and answers each event with the status code that
// makes the sender retry exactly when retrying can help.
package function

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
)

// Key identifies one object a reconciler reconciles.
type Key = types.NamespacedName

// Cluster names the cluster a watch, list or client is on.
type Cluster string

const (
	// Source is the cluster the function is deployed for: the garden for GCM's functions, the
	// seed for GRM's. Every function has it.
	Source Cluster = "source"
	// Target is the second cluster of GRM's functions (a shoot, or the seed itself), and of a
	// function that works on the garden the cluster it runs in (Function.WorksOnGarden): a seed
	// for gardenlet's part, the runtime cluster for gardener-operator's Extensions.
	Target Cluster = "target"
	// Garden is the cluster of Gardener's API as the event plumbing of a part names it: a
	// landscape serves it apart from the runtime cluster and the seeds (a virtual garden), so a
	// part's functions that work on it take their Source events from a source of its own, which
	// labels them garden. Declarations never name it: a function's Source is the garden when it
	// WorksOnGarden.
	Garden Cluster = "garden"
)

// Kind is an API kind a function watches or lists, with the resource (plural) the API serves
// it as: the cluster sources, RBAC and the sweeps' LISTs address resources, not kinds.
type Kind struct {
	schema.GroupVersionKind
	Resource   string
	Namespaced bool
	// Confidential kinds (Secrets) are watched in Reference mode: their events name the object
	// and carry no content, so that no secret data travels through the Broker. Their watches'
	// predicates see no object (Event.Object is nil).
	Confidential bool
	// NamesTenant says that each object of this cluster-scoped Source kind is named after the
	// tenant it describes (extensions' Cluster: the shoot's control-plane namespace). Per seed,
	// a reconcile of such an object is its tenant's, as one of a namespaced object is the
	// tenant's of its namespace.
	NamesTenant bool
}

// NewKind declares a namespaced kind; its resource is the lower-case plural of the kind, as
// Knative's ApiServerSource derives it.
func NewKind(gv schema.GroupVersion, kind, resource string) Kind {
	return Kind{GroupVersionKind: gv.WithKind(kind), Resource: resource, Namespaced: true}
}

// NewClusterKind declares a cluster-scoped kind.
func NewClusterKind(gv schema.GroupVersion, kind, resource string) Kind {
	return Kind{GroupVersionKind: gv.WithKind(kind), Resource: resource}
}

// AsConfidential returns k marked Confidential.
func (k Kind) AsConfidential() Kind {
	k.Confidential = true
	return k
}

// AsNamingTenants returns the cluster-scoped k marked NamesTenant.
func (k Kind) AsNamingTenants() Kind {
	k.NamesTenant = true
	return k
}

// GroupResource is the kind's group and resource.
func (k Kind) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: k.Group, Resource: k.Resource}
}

// Event is what an ApiServerSource event says about an object. Predicates and mappers see it;
// reconcilers never do: they read the current state.
type Event struct {
	// Cluster is the cluster whose source sent the event.
	Cluster Cluster
	// Tenant is the tenant whose cluster a Target event is about (the multi-tenant event
	// source's tenant extension); empty otherwise.
	Tenant tenant.Name
	Kind   schema.GroupVersionKind
	Key    Key
	// Created and Deleted say that the event is the object's add or delete event; neither
	// means an update.
	Created, Deleted bool
	// Object is the object as the event carried it (the shared source runs in Resource mode).
	// It may be older than what the API server holds: use it to filter and map, not to decide.
	// Nil for Reference-mode events.
	Object *unstructured.Unstructured
	// changed are the change attributes the source set (ChangeAttribute: whether the update
	// changed the part), by attribute; nil when it told of none.
	changed map[string]bool
}

// mayConcern says whether an update may concern a watch of changes: false for a watch of no
// updates, and where the source told of every part the watch acts on that the update did not
// change it; true for adds, deletes, a watch of every update, and a part the source told nothing
// of (its Trigger lets through only what changed a part of the function's; this sorts out its
// watches).
func (ev Event) mayConcern(changes Changes) bool {
	if ev.Created || ev.Deleted || len(changes) == 0 {
		return true
	}
	for _, part := range changes.Parts() {
		if changed, told := ev.changed[ChangeAttribute(part)]; !told || changed {
			return true
		}
	}
	return false
}

// Predicate says whether an event can matter to a watch; it runs before any API request, on
// the event alone, so that irrelevant events cost nothing. A nil predicate lets every event
// through.
type Predicate func(Event) bool

// Mapper maps an event to the keys its reconciler must reconcile. reader reads the watch's
// cluster live. A nil mapper maps an event to the object's own key.
type Mapper func(ctx context.Context, reader client.Reader, ev Event) ([]Key, error)

// Watch feeds one reconciler with the events of one kind.
type Watch struct {
	Kind Kind
	// Cluster is where the kind is watched; empty means Source.
	Cluster Cluster
	// Reconciler names the reconciler the mapped keys go to.
	Reconciler string
	Predicate  Predicate
	Map        Mapper
	// LabelSelector narrows the source's watch of the kind on the API server: objects whose
	// labels do not match cause no event at all. The shared source watches a kind once per
	// distinct selector of all functions (once, unfiltered, when any watch has none), so the
	// predicate must still decide what is relevant.
	LabelSelector string
	// Changes are what of an updated object the watch acts on (changes.go); empty means every
	// update. The predicate still decides: the plumbing drops only the updates that change none
	// of these parts.
	Changes Changes
}

// Reconciler is one of the function's reconcilers (Gardener's controllers host several).
type Reconciler struct {
	// Name is unique within the function; it labels metrics and log lines.
	Name string
	// For is the kind the reconciler's keys name. A NotFound of it is terminal: the object is
	// gone and there is nothing to converge.
	For Kind
	// Cluster is where For lives; empty means Source.
	Cluster Cluster
	// New builds the handler once per process.
	New func(Deps) (Handler, error)
	// AppliesTo says, per seed, whether gardenlet runs the controller in the resource manager of
	// a tenant with these settings (e.g. not for workerless shoots); nil means every tenant's.
	// The runtime never reconciles a key of a tenant it does not apply to, nor sweeps that
	// tenant for it: its events are filtered, and its sweeps list nothing there.
	AppliesTo func(*tenant.Settings) bool
	// Undo, when set, undoes what a reconcile created for a primary that turned out to be gone,
	// replaced or being deleted by the time it ended (the owner guard, guard.go), instead of
	// DefaultUndo (deleting each creation that is still as created): e.g. leaving what a
	// ManagedResource with keepObjects keeps anyway.
	Undo func(ctx context.Context, req UndoRequest) error
}

// appliesTo tells whether r serves the tenant of ctx: always outside per-seed mode (no tenant).
func (r Reconciler) appliesTo(ctx context.Context) bool {
	s, ok := tenant.SettingsFrom(ctx)
	return !ok || r.AppliesTo == nil || r.AppliesTo(s)
}

// Handler converges the object a key names. It must be idempotent: events are duplicated and
// reordered, sweeps revisit everything.
type Handler interface {
	Reconcile(ctx context.Context, req Request) error
}

// HandlerFunc adapts a function to a Handler.
type HandlerFunc func(ctx context.Context, req Request) error

// Reconcile calls f.
func (f HandlerFunc) Reconcile(ctx context.Context, req Request) error { return f(ctx, req) }

// Trigger says what caused a reconcile.
type Trigger string

const (
	// ByEvent reconciles read the API server.
	ByEvent Trigger = "event"
	// BySweep reconciles read the sweep's snapshot.
	BySweep Trigger = "sweep"
)

// Request is one reconcile.
type Request struct {
	Key Key
	// Reader reads the reconciler's cluster: the API server for events, the sweep's snapshot
	// (which falls back to the API server for kinds it did not list) for sweeps.
	Reader client.Reader
	// Source reads the Source cluster, likewise live or from the sweep's lists on it: what a
	// reconciler of a Target kind reads there (Extensions in the runtime cluster, their
	// registrations in the garden).
	Source client.Reader
	// Target reads the Target cluster (of the request's tenant, which the context carries:
	// tenant.From), likewise live or from the sweep's lists on it; nil for functions without a
	// Target.
	Target  client.Reader
	Trigger Trigger
	// Sweep names the sweep for sweep reconciles.
	Sweep string
	// echo is the version of the object an event carried: the runtime skips the reconcile when
	// a successful one of the same key wrote it (ownwrites.go).
	echo *ownWrite
}

// List is one LIST a sweep reads, page by page.
type List struct {
	Kind Kind
	// Cluster is where the kind is listed; empty means Source.
	Cluster Cluster
	// MetadataOnly lists PartialObjectMetadata: enough where the decision needs no spec.
	// The reconciler then reads the kind as *metav1.PartialObjectMetadata(List).
	MetadataOnly bool
	// KeysOnly holds only each object's namespace and name once its indexes are taken: enough
	// where a decision asks only whether objects exist (by key, namespace or index). The
	// reconciler reads the kind as *metav1.PartialObjectMetadata(List) carrying nothing else, and
	// cannot select it by labels. Combine it with MetadataOnly where the indexes need no spec.
	KeysOnly bool
	// Annotations are held beside the keys of a KeysOnly list, where present: the few
	// annotations a decision reads (a Namespace's opt-out), without the whole metadata.
	Annotations []string
	// LabelSelector restricts the LIST on the server.
	LabelSelector string
	// Namespace restricts the LIST to one namespace (e.g. the seeds' Leases). Reads of the
	// kind outside it go to the API server.
	Namespace string
	// PageSize overrides the runtime's LIST_PAGE_SIZE for this list: a sweep whose cost is
	// counted in requests (the seed lifecycle's tick) reads a kind of bounded size in one page.
	PageSize int64
	// Indexes answer the field selectors the reconciler lists this kind with during the
	// sweep, by field name (e.g. "spec.seedName" → the Shoot's seed name).
	Indexes map[string]IndexFunc
	// Project, when set, is what the sweep holds of each listed object: its indexes are taken
	// from the whole object first, then only the projection is kept (the fields the decisions
	// read, in an object of the same type), so that a sweep's memory follows what it decides on,
	// not the size of the objects.
	Project func(client.Object) client.Object
	// Optional marks a kind the cluster may not serve (a CRD such as Prometheus in a shoot):
	// then it holds no objects, instead of failing the sweep.
	Optional bool
	// PerTenant lists a namespaced Source kind only where the sweep runs per tenant, confined to
	// the tenant's namespace (the Secrets of a shoot's ManagedResources: one LIST per tenant
	// instead of a GET per ManagedResource). A sweep that runs once (seed mode, a single target)
	// does not list such a related kind, since that would read the kind in every namespace of the
	// cluster: its reads go to the API server, once per object and sweep. A primary list per
	// tenant makes the sweep run per tenant per seed, though it lists no Target kind (the token
	// requestor's Secrets: it may read no namespace but the enrolled tenants', TenantRBAC), and
	// is listed whole where the sweep runs once.
	PerTenant bool
	// OnDemand lists the kind the first time a reconcile of the sweep lists it, and holds it for
	// the sweep's later lists: a sweep whose reconciles seldom need the kind lists it only then
	// (the kube-system Pods and DaemonSets of a tainted Node: none in a shoot whose Nodes are
	// all ready). A kind confined to a Namespace, or cluster-scoped, is listed whole; any other
	// namespaced kind one namespace at a time, when a reconcile lists it there, and nothing of
	// the namespaces no reconcile asks about (the Pods of a shoot's rolled-out Deployments,
	// without its workloads' elsewhere); its lists without a namespace go to the API server.
	// Gets of the kind go to the API server, once per object and sweep, as those of a kind not
	// listed.
	OnDemand bool
}

// IndexFunc returns the values of one field of an object, for field selectors.
type IndexFunc func(client.Object) []string

// Sweep is a scheduled pass over every object of the primary kind. The primary list is
// streamed page by page and each key reconciled against a snapshot that answers Get and List of
// the primary page and of every related list, so a sweep costs a constant number of LISTs per
// kind, however many objects exist, and holds only the related kinds and one primary page.
type Sweep struct {
	// Name is unique within the function; it names the PingSource.
	Name string
	// Schedule is a cron expression with an optional leading seconds field.
	Schedule string
	// Period, instead of Schedule, derives the schedule from the function's loaded Config (a
	// controller's syncPeriod): the PingSource ticks every Period (ScheduleEvery). config/ holds
	// the schedule of the default configuration; a deployment whose configuration changes the
	// period gets it from sources.ObjectsFor with that configuration (docs/configuration.md).
	Period func(config any) time.Duration
	// Timezone is an IANA time zone name; empty means UTC.
	Timezone string
	// Reconciler names the reconciler every primary key goes to.
	Reconciler string
	Primary    List
	Related    []List
	// Off, when set, says from the function's loaded Config that the sweep has nothing to do
	// (a controller Gardener only runs when configured): its ticks are then acknowledged
	// without a single request.
	Off func(config any) bool
}

// Function is the one declaration of a function.
type Function struct {
	// Name is a DNS label: the folder under functions/, the Knative Service, the Trigger.
	Name string
	// Config is a pointer to the function's typed configuration, or nil. The runtime fills it
	// from the function's part of Gardener's ControllerManagerConfiguration (the file named by
	// CONTROLLER_MANAGER_CONFIG, with Gardener's defaults) when it implements
	// ControllerManagerConfig, then from the environment through envconfig: the function's own
	// variables win.
	Config any
	// RBAC is everything the function's own ServiceAccount may do on the Source cluster, least
	// privilege for its reads and writes (Events it records included). config/<name>.yaml is
	// generated from it, and functiontest.AsFunction serves the function as that ServiceAccount
	// with exactly these rules, so a missing rule fails the tests.
	RBAC []rbacv1.PolicyRule
	// NamespacedRBAC is what it may do only inside the named namespaces (e.g. read the garden
	// namespace's pull secrets; OwnNamespace: its part's own): a Role and RoleBinding in each,
	// generated and served like RBAC.
	NamespacedRBAC map[string][]rbacv1.PolicyRule
	// PartRBAC is what it may do only where one of its Parts deploys it, beside RBAC (e.g. read
	// the seed's tenants, which a runtime cluster does not have): RBACIn.
	PartRBAC map[Part][]rbacv1.PolicyRule
	// TenantRBAC is what a function deployed per seed may do only in the seed namespaces of
	// enrolled tenants (their access Secrets, the Secrets of their ManagedResources): a
	// ClusterRole gardener-knative:<name>:tenant labelled for its ServiceAccount, which the
	// enrolment binds in each tenant's namespace and unbinds when it hands the shoot back
	// (pkg/tenant/access), so that no namespace of the seed that is not enrolled is readable.
	TenantRBAC []rbacv1.PolicyRule
	// Parts are the parts of config/ that deploy the function, where Gardener runs the component
	// it stands in for: one, but for what every part needs (the webhook servers' certificates).
	Parts       []Part
	Watches     []Watch
	Reconcilers []Reconciler
	Sweeps      []Sweep
	// Deployment is how config/ and the local landscape deploy a function that works on a
	// Target: SingleTarget (empty: the kubeconfig of the Secret <name>-target, e.g. gardenlet's
	// seed) or PerSeed (MULTI_TENANT: every shoot of the seed, GRM's functions). The same image
	// runs in every mode; the environment picks it (Mode).
	Deployment Mode
	// WorksOnGarden says that the function's Source is the garden (Gardener's API), which it
	// reaches as the component it stands in for does, with a kubeconfig of the garden
	// (GARDEN_KUBECONFIG; config/ mounts its part's Secret GardenAccessSecret), while it runs in
	// another cluster: a seed for gardenlet's part, the runtime cluster for gardener-operator's.
	// That cluster is its Target, reached in-cluster as its own ServiceAccount with TargetRBAC,
	// and watched by its part's own source (whose events say source: the runtime maps them to
	// the Target). Its RBAC and NamespacedRBAC are then what the garden kubeconfig's identity
	// needs in the garden, none of it granted where it runs.
	WorksOnGarden bool
	// TargetRBAC is what a function that works on the garden may do in the cluster it runs in,
	// its Target (gardenlet installs whatever an extension's chart holds).
	TargetRBAC []rbacv1.PolicyRule
	// NamespacedTargetRBAC is what it may do there only inside the named namespaces (OwnNamespace:
	// its part's own, e.g. the runtime part's serving certificates), beside TargetRBAC.
	NamespacedTargetRBAC map[string][]rbacv1.PolicyRule
	// GardenInputs are what an operator gives a function that works on the garden beside the
	// garden's kubeconfig, in the same Secret (GardenAccessSecret): environment variable → key of
	// that Secret (e.g. the seed's name for gardenlet's part). config/ takes them from there,
	// required, so that a part's garden access and identity are one input, never a settings
	// ConfigMap.
	GardenInputs map[string]string
	// Scopes narrow what the function sees of a kind in the garden to the objects of one of its
	// GardenInputs (gardenlet's part: its seed's ControllerInstallations), on the server: its
	// source's watch, its LISTs and the events it accepts. At most one per kind.
	Scopes []Scope
}

// GardenAccessSecret is the Secret an operator gives a part whose functions work on the garden:
// the garden's kubeconfig (key GardenAccessKubeconfigKey) and the functions' GardenInputs, in the
// part's namespace (docs/deployment.md, "Garden access").
const (
	GardenAccessSecret        = "garden-access"
	GardenAccessKubeconfigKey = "kubeconfig"
	// GardenKubeconfigDataEnv is the environment variable config/ gives a function that works on
	// the garden the kubeconfig in (Config.GardenKubeconfigData): no GardenInput may take it.
	GardenKubeconfigDataEnv = "GARDEN_KUBECONFIG_DATA"
)

// RBACIn is what the function may do cluster-wide where part deploys it: RBAC, and its PartRBAC
// for that part.
func (f *Function) RBACIn(part Part) []rbacv1.PolicyRule {
	return append(slices.Clone(f.RBAC), f.PartRBAC[part]...)
}

// DeploymentMode is how config/ deploys the function's Target ("" for functions without one).
func (f *Function) DeploymentMode() Mode {
	if !slices.Contains(f.Clusters(), Target) {
		return ""
	}
	if f.Deployment == "" {
		return SingleTarget
	}
	return f.Deployment
}

// DeployedConfigs are the component configurations config/ deploys the function with: none
// named, so the defaults of the resource manager its deployment stands in for (a shoot's where
// it serves every shoot of a seed, else the seed's).
func (f *Function) DeployedConfigs() ComponentConfigs {
	return ComponentConfigs{Role: componentconfig.RoleOf(f.DeploymentMode() == PerSeed, f.DeploymentMode() == SingleTarget)}
}

// ScheduleEvery is the cron schedule of a PingSource that ticks every d: whole seconds below a
// minute that divide it, whole minutes below an hour that divide it, whole hours that divide a
// day; other periods round down to the nearest such step (at least a second), so that a sweep
// never runs less often than configured.
func ScheduleEvery(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("*/%d * * * * *", divisorAtMost(int(d/time.Second), 60))
	case d < time.Hour:
		return fmt.Sprintf("0 */%d * * * *", divisorAtMost(int(d/time.Minute), 60))
	case d < 24*time.Hour:
		return fmt.Sprintf("0 0 */%d * * *", divisorAtMost(int(d/time.Hour), 24))
	}
	return "0 0 0 * * *"
}

// divisorAtMost is the largest divisor of whole that is at most n (and at least 1).
func divisorAtMost(n, whole int) int {
	for d := max(n, 1); d > 1; d-- {
		if whole%d == 0 {
			return d
		}
	}
	return 1
}

// ScheduleOf is the sweep's schedule with the function's loaded config.
func (s Sweep) ScheduleOf(config any) string {
	if s.Period != nil {
		return ScheduleEvery(s.Period(config))
	}
	return s.Schedule
}

// Clusters are the clusters the function talks to: Source always, Target when a watch, list or
// reconciler is on it, or when it declares how its Target is deployed (a function that only
// writes its Target, such as the token requestor).
func (f *Function) Clusters() []Cluster {
	clusters := []Cluster{Source}
	if f.Deployment != "" {
		return append(clusters, Target)
	}
	uses := func(c Cluster) {
		if c == Target && len(clusters) == 1 {
			clusters = append(clusters, Target)
		}
	}
	for _, w := range f.Watches {
		uses(w.Cluster)
	}
	for _, r := range f.Reconcilers {
		uses(r.Cluster)
	}
	for _, s := range f.Sweeps {
		for _, l := range append([]List{s.Primary}, s.Related...) {
			uses(l.Cluster)
		}
	}
	return clusters
}

// Reconciler returns the reconciler with the given name.
func (f *Function) Reconciler(name string) (Reconciler, bool) {
	for _, r := range f.Reconcilers {
		if r.Name == name {
			return r, true
		}
	}
	return Reconciler{}, false
}

// Sweep returns the sweep with the given name.
func (f *Function) Sweep(name string) (Sweep, bool) {
	for _, s := range f.Sweeps {
		if s.Name == name {
			return s, true
		}
	}
	return Sweep{}, false
}

// WatchedKinds are the kinds the function watches on a cluster, each once, in declaration order.
func (f *Function) WatchedKinds(c Cluster) []Kind {
	var kinds []Kind
	seen := map[schema.GroupVersionKind]bool{}
	for _, w := range f.Watches {
		if clusterOrSource(w.Cluster) == c && !seen[w.Kind.GroupVersionKind] {
			seen[w.Kind.GroupVersionKind] = true
			kinds = append(kinds, w.Kind)
		}
	}
	return kinds
}

// ChangesOf says whether the function's Trigger filters the updates of kind k on cluster c
// (Watch.Changes), and on which parts: the union of its watches' of the kind. It filters none
// when any of those watches names no Changes; it filters every update away when all of them act
// on adds and deletes only (NoUpdates: then parts is empty).
func (f *Function) ChangesOf(c Cluster, k Kind) (parts []string, filtered bool) {
	for _, w := range f.Watches {
		if clusterOrSource(w.Cluster) != c || w.Kind.GroupVersionKind != k.GroupVersionKind {
			continue
		}
		if len(w.Changes) == 0 {
			return nil, false
		}
		filtered = true
		for _, part := range w.Changes.Parts() {
			if !slices.Contains(parts, part) {
				parts = append(parts, part)
			}
		}
	}
	slices.Sort(parts)
	return parts, filtered
}

func clusterOrSource(c Cluster) Cluster {
	if c == "" {
		return Source
	}
	return c
}

// Validate checks the declaration's internal consistency: names, references between watches,
// sweeps and reconcilers, kinds and selectors. The runtime refuses to serve an invalid one, and
// the registry's test validates every function.
func (f *Function) Validate() error {
	var errs []error
	for _, msg := range validation.IsDNS1035Label(f.Name) {
		errs = append(errs, fmt.Errorf("name %q: %s", f.Name, msg))
	}
	for i, p := range f.Parts {
		if err := p.Validate(); err != nil || slices.Contains(f.Parts[:i], p) {
			errs = append(errs, fmt.Errorf("parts %v: each one of %v, once", f.Parts, AllParts))
		}
	}
	for _, p := range slices.Sorted(maps.Keys(f.PartRBAC)) {
		if !slices.Contains(f.Parts, p) {
			errs = append(errs, fmt.Errorf("RBAC of part %q: the function is deployed only with %v", p, f.Parts))
		}
	}
	for _, namespaced := range []map[string][]rbacv1.PolicyRule{f.NamespacedRBAC, f.NamespacedTargetRBAC} {
		for namespace := range namespaced {
			if namespace == OwnNamespace {
				continue
			}
			for _, msg := range validation.IsDNS1123Label(namespace) {
				errs = append(errs, fmt.Errorf("namespaced RBAC for %q: %s", namespace, msg))
			}
		}
	}
	if len(f.TenantRBAC) > 0 && f.DeploymentMode() != PerSeed {
		errs = append(errs, errors.New("tenant RBAC: only a function deployed per seed has tenants"))
	}
	if len(f.Reconcilers) == 0 {
		errs = append(errs, errors.New("no reconcilers"))
	}
	if !f.WorksOnGarden && (len(f.GardenInputs) > 0 || len(f.TargetRBAC) > 0 || len(f.NamespacedTargetRBAC) > 0) {
		errs = append(errs, errors.New("garden inputs and Target RBAC: only a function that works on the garden has them"))
	}
	if _, taken := f.GardenInputs[GardenKubeconfigDataEnv]; taken {
		errs = append(errs, fmt.Errorf("garden input %s: that variable holds the garden's kubeconfig", GardenKubeconfigDataEnv))
	}
	scoped := map[schema.GroupKind]bool{}
	for _, sc := range f.Scopes {
		if err := sc.validate(f); err != nil {
			errs = append(errs, err)
		}
		if scoped[sc.Kind.GroupKind()] {
			errs = append(errs, fmt.Errorf("scope of %s: more than one", sc.Kind.Kind))
		}
		scoped[sc.Kind.GroupKind()] = true
	}
	if f.WorksOnGarden {
		if f.DeploymentMode() == PerSeed {
			errs = append(errs, errors.New("works on the garden: its Target is the cluster it runs in, not every shoot of a seed"))
		}
	}
	switch f.Deployment {
	case "", SingleTarget, PerSeed:
	default:
		errs = append(errs, fmt.Errorf("deployment %q is neither %s nor %s", f.Deployment, SingleTarget, PerSeed))
	}
	names := map[string]bool{}
	for _, r := range f.Reconcilers {
		if r.Name == "" || names[r.Name] {
			errs = append(errs, fmt.Errorf("reconciler name %q is empty or not unique", r.Name))
		}
		names[r.Name] = true
		if r.New == nil {
			errs = append(errs, fmt.Errorf("reconciler %q has no constructor", r.Name))
		}
		errs = append(errs, validateKind("reconciler "+r.Name, r.For), validateCluster("reconciler "+r.Name, r.Cluster))
	}
	for _, w := range f.Watches {
		what := fmt.Sprintf("watch of %s for %q", w.Kind.Kind, w.Reconciler)
		if err := w.Changes.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
		}
		if !names[w.Reconciler] {
			errs = append(errs, fmt.Errorf("%s: no such reconciler", what))
		}
		if r, ok := f.Reconciler(w.Reconciler); ok && w.Map == nil {
			if r.For.GroupKind() != w.Kind.GroupKind() {
				errs = append(errs, fmt.Errorf("%s: a watch of another kind than the reconciler's needs a mapper", what))
			}
			if clusterOrSource(r.Cluster) != clusterOrSource(w.Cluster) {
				errs = append(errs, fmt.Errorf("%s: a watch on another cluster than the reconciler's needs a mapper", what))
			}
		}
		errs = append(errs, validateKind(what, w.Kind), validateCluster(what, w.Cluster))
		if w.LabelSelector != "" {
			if _, err := metav1.ParseToLabelSelector(w.LabelSelector); err != nil {
				errs = append(errs, fmt.Errorf("%s: label selector: %w", what, err))
			}
		}
	}
	sweeps := map[string]bool{}
	for _, s := range f.Sweeps {
		what := "sweep " + s.Name
		for _, msg := range validation.IsDNS1123Label(s.Name) {
			errs = append(errs, fmt.Errorf("%s: %s", what, msg))
		}
		if sweeps[s.Name] {
			errs = append(errs, fmt.Errorf("%s: declared twice", what))
		}
		sweeps[s.Name] = true
		if (strings.TrimSpace(s.Schedule) == "") == (s.Period == nil) {
			errs = append(errs, fmt.Errorf("%s: needs a schedule or a period, not both", what))
		}
		r, ok := f.Reconciler(s.Reconciler)
		if !ok {
			errs = append(errs, fmt.Errorf("%s: no reconciler %q", what, s.Reconciler))
		} else if r.For.GroupKind() != s.Primary.Kind.GroupKind() || clusterOrSource(r.Cluster) != clusterOrSource(s.Primary.Cluster) {
			errs = append(errs, fmt.Errorf("%s: primary kind %s on %s is not reconciler %q's kind %s on %s", what,
				s.Primary.Kind.Kind, clusterOrSource(s.Primary.Cluster), r.Name, r.For.Kind, clusterOrSource(r.Cluster)))
		}
		// The primary kind may also be related: then the sweep holds all of it for reads that
		// need the other objects of the kind (e.g. "does another binding still need this?").
		related := map[schema.GroupVersionKind]bool{}
		for _, l := range s.Related {
			if related[l.Kind.GroupVersionKind] {
				errs = append(errs, fmt.Errorf("%s: lists %s twice", what, l.Kind.Kind))
			}
			related[l.Kind.GroupVersionKind] = true
		}
		for _, l := range append([]List{s.Primary}, s.Related...) {
			errs = append(errs, validateKind(what, l.Kind), validateCluster(what, l.Cluster))
			if l.LabelSelector != "" {
				if _, err := metav1.ParseToLabelSelector(l.LabelSelector); err != nil {
					errs = append(errs, fmt.Errorf("%s: %s label selector: %w", what, l.Kind.Kind, err))
				}
			}
			if l.PerTenant && (clusterOrSource(l.Cluster) != Source || !l.Kind.Namespaced || l.Namespace != "") {
				errs = append(errs, fmt.Errorf("%s: %s is listed per tenant, which confines a namespaced Source kind to the tenant's namespace", what, l.Kind.Kind))
			}
			if l.OnDemand && (l.KeysOnly || l.PerTenant) {
				errs = append(errs, fmt.Errorf("%s: %s is listed on demand, with its objects and where the reconciles ask: neither keys only nor per tenant", what, l.Kind.Kind))
			}
			if l.KeysOnly && l.Project != nil {
				errs = append(errs, fmt.Errorf("%s: %s holds only keys, a projection would be dropped", what, l.Kind.Kind))
			}
			if !l.KeysOnly && len(l.Annotations) > 0 {
				errs = append(errs, fmt.Errorf("%s: %s holds whole objects, annotations are held beside keys only", what, l.Kind.Kind))
			}
		}
	}
	return errors.Join(errs...)
}

func validateKind(what string, k Kind) error {
	if k.Kind == "" || k.Version == "" || k.Resource == "" {
		return fmt.Errorf("%s: kind %v needs a version, kind and resource", what, k)
	}
	return nil
}

func validateCluster(what string, c Cluster) error {
	switch c {
	case "", Source, Target:
		return nil
	}
	return fmt.Errorf("%s: unknown cluster %q", what, c)
}
