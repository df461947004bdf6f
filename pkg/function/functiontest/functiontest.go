// Package functiontest serves one function in-process over HTTP against a real kube-apiserver
// (pkg/testenv) and sends it the CloudEvents the sources would: ApiServerSource events built by
// Knative's own event code, and PingSource ticks. Time is a fake clock; the function's API
// requests are counted. It is the counterpart of webhooktest for functions.
package functiontest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	testclock "k8s.io/utils/clock/testing"
	"knative.dev/eventing/pkg/adapter/apiserver/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/gardener-knative/gardener-knative/pkg/componentconfig"
	"github.com/gardener-knative/gardener-knative/pkg/configgen"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/kube"
	"github.com/gardener-knative/gardener-knative/pkg/scheme"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/access"
	"github.com/gardener-knative/gardener-knative/pkg/tenant/clients"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
	"github.com/gardener-knative/gardener-knative/sources"
)

// DefaultOptions are the runtime's defaults, with a generous event budget for a loaded CI machine.
var DefaultOptions = function.Options{EventTimeout: 30 * time.Second, SweepTimeout: 2 * time.Minute, SweepConcurrency: 8, ListPageSize: 500, ConflictRetries: 3}

// Harness is one function served over HTTP.
type Harness struct {
	t       testing.TB
	fn      *function.Function
	Env     *testenv.Env
	Clock   *testclock.FakeClock
	Server  *function.Server
	URL     string
	Counter *kube.RequestCounter
	// Target is the second control plane (WithTarget), and TargetCounter counts the function's
	// requests to it (Helm's included); both nil without WithTarget.
	Target        *testenv.Env
	TargetCounter *kube.RequestCounter
	// Registry holds the function's metrics.
	Registry *prometheus.Registry
}

// Option tunes a harness.
type Option func(*settings)

type settings struct {
	config     any
	asFunction bool
	// configureTarget adapts the REST configuration of the function's target clients.
	configureTarget []func(*rest.Config)
	opts            function.Options
	now             time.Time
	target          *testenv.Env
	tenants         bool
	configure       []func(*rest.Config)
}

// WithConfig serves the function with this configuration instead of LoadConfig's.
func WithConfig(cfg any) Option { return func(s *settings) { s.config = cfg } }

// AsFunction serves the function as its own ServiceAccount, with exactly the RBAC config/
// grants it (configgen.RBACObjects, from Function.RBAC): a request its declaration does not
// allow fails the test the way it would fail in a cluster.
func AsFunction() Option { return func(s *settings) { s.asFunction = true } }

// WithOptions sets the runtime options.
func WithOptions(o function.Options) Option { return func(s *settings) { s.opts = o } }

// At starts the fake clock at now.
func At(now time.Time) Option { return func(s *settings) { s.now = now } }

// WithTarget serves the function with env as its Target cluster (a second control plane, e.g.
// the seed of a garden function), as cluster-admin: the Target's RBAC is the kubeconfig's, not
// the function's declaration.
func WithTarget(env *testenv.Env) Option { return func(s *settings) { s.target = env } }

// WithTenants serves the function per seed (function.PerSeed): env is the seed, and each
// reconcile's Target is the cluster of its tenant, enrolled in the seed with testenv.Enroll. The
// function reads the tenants' access in the seed with its own client (its RBAC, AsFunction).
// TargetCounter counts its requests to every tenant.
func WithTenants() Option { return func(s *settings) { s.tenants = true } }

// WithRESTConfig changes the rest.Config of the function's client of env (AsFunction), e.g. to
// put testenv.APIFaults between the function and the kube-apiserver.
func WithRESTConfig(configure func(*rest.Config)) Option {
	return func(s *settings) { s.configure = append(s.configure, configure) }
}

// WithTargetRESTConfig changes the rest.Config of the function's clients of its target (the
// single target, or every tenant's), e.g. to hold a request until a concurrent reconcile did its
// part (testenv.RoundTripperFunc).
func WithTargetRESTConfig(configure func(*rest.Config)) Option {
	return func(s *settings) { s.configureTarget = append(s.configureTarget, configure) }
}

// New serves fn against env until the test ends.
func New(t testing.TB, env *testenv.Env, fn *function.Function, options ...Option) *Harness {
	t.Helper()
	s := settings{opts: DefaultOptions, now: time.Now()}
	for _, o := range options {
		o(&s)
	}
	if s.config == nil {
		// Serving shoots (per seed or one target), the defaults are a shoot resource manager's;
		// otherwise those of Gardener's API.
		role := componentconfig.NoRole
		if s.tenants || s.target != nil {
			role = componentconfig.ShootRole
		}
		cfg, err := function.LoadConfig(fn, function.ComponentConfigs{Role: role})
		require.NoError(t, err)
		s.config = cfg
	}
	var (
		c       client.Client
		counter *kube.RequestCounter
		err     error
	)
	if s.asFunction {
		ApplyRBAC(t, env, fn)
		if s.target != nil && !s.tenants {
			applySingleTargetTenantRBAC(t, env, fn)
		}
		if fn.WorksOnGarden && s.target == nil {
			// Seed mode: the one cluster is its garden and where it runs, its Target.
			applyTargetRBAC(t, env, fn)
		}
		c, counter, err = env.FunctionClient(configgen.ServiceAccountName(fn), s.configure...)
	} else {
		require.Empty(t, s.configure, "WithRESTConfig needs AsFunction")
		c, counter, err = env.CountingClient()
	}
	require.NoError(t, err)
	h := &Harness{t: t, fn: fn, Env: env, Clock: testclock.NewFakeClock(s.now), Counter: counter, Registry: prometheus.NewRegistry()}
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	if os.Getenv("FUNCTIONTEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	fnEnv := function.Env{Source: c, Clock: h.Clock, Log: log, Registry: h.Registry, Config: s.config}
	if s.target != nil {
		h.Target = s.target
		fnEnv.TargetConfig = rest.CopyConfig(s.target.Config)
		h.TargetCounter = kube.NewRequestCounter(prometheus.NewRegistry())
		h.TargetCounter.Instrument(fnEnv.TargetConfig)
		for _, configure := range s.configureTarget {
			configure(fnEnv.TargetConfig)
		}
		fnEnv.Target, err = kube.NewClient(fnEnv.TargetConfig, scheme.Gardener)
		require.NoError(t, err)
	}
	if s.tenants {
		require.Nil(t, s.target, "WithTenants and WithTarget are two modes: choose one")
		h.TargetCounter = kube.NewRequestCounter(prometheus.NewRegistry())
		fnEnv.Tenants, err = clients.New(clients.Options{
			Seed: c, Scheme: scheme.Gardener, SharedMapper: c.RESTMapper(), Log: log,
			ConfigureREST: func(c *rest.Config) {
				h.TargetCounter.Instrument(c)
				kube.WithDefaultRate(c)
				for _, configure := range s.configureTarget {
					configure(c)
				}
			},
		})
		require.NoError(t, err)
	}
	h.Server, err = function.NewServer(fn, fnEnv, s.opts)
	require.NoError(t, err)
	server := httptest.NewServer(h.Server)
	t.Cleanup(server.Close)
	h.URL = server.URL
	return h
}

// ApplyRBAC creates (or updates) the function's ServiceAccount, ClusterRole, Roles and bindings
// as config/ declares them, and binds its tenant role in the namespaces of the tenants enrolled
// so far, as the enrolment does (testenv.Enroll binds it in those enrolled later).
func ApplyRBAC(t testing.TB, env *testenv.Env, fn *function.Function) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, env.ApplyRBAC(ctx, configgen.RBACObjects(fn, fn.HomePart())))
	if len(fn.TenantRBAC) == 0 {
		return
	}
	tenants, err := clients.Discover(ctx, env.Client, "", 0)
	require.NoError(t, err)
	for _, tn := range tenants {
		_, err := access.Bind(ctx, env.Client, tn, fn.HomePart().Namespace())
		require.NoError(t, err)
	}
}

// applySingleTargetTenantRBAC grants a per-seed function served for one target (GRM's classic
// per-shoot deployment, which has no enrolled tenants) its TenantRBAC where it reads the target's
// objects in env: whoever deploys such a process binds it in the shoot's namespace; the suites put
// each test's objects in a namespace of their own, so here it is bound cluster-wide.
func applySingleTargetTenantRBAC(t testing.TB, env *testenv.Env, fn *function.Function) {
	t.Helper()
	if len(fn.TenantRBAC) == 0 {
		return
	}
	name := configgen.TenantRoleName(fn)
	sa := fn.Name
	require.NoError(t, env.ApplyRBAC(context.Background(), []client.Object{
		configgen.TenantRole(sa, name, fn.TenantRBAC),
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name + ":single-target"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: fn.HomePart().Namespace()}},
		},
	}))
}

// applyTargetRBAC grants a function that works on the garden, as its ServiceAccount in env, what
// config/ grants it where it runs (configgen.DeployedRBACObjects: its TargetRBAC and
// NamespacedTargetRBAC), beside its
// garden rules (ApplyRBAC): the ClusterRole and binding of those get another name.
func applyTargetRBAC(t testing.TB, env *testenv.Env, fn *function.Function) {
	t.Helper()
	var objs []client.Object
	for _, obj := range configgen.DeployedRBACObjects(fn, fn.HomePart()) {
		switch o := obj.(type) {
		case *rbacv1.ClusterRole:
			o.Name += ":target"
		case *rbacv1.ClusterRoleBinding:
			o.Name += ":target"
			o.RoleRef.Name += ":target"
		case *rbacv1.Role:
			o.Name += ":target"
		case *rbacv1.RoleBinding:
			o.Name += ":target"
			o.RoleRef.Name += ":target"
		}
		objs = append(objs, obj)
	}
	require.NoError(t, env.ApplyRBAC(context.Background(), objs))
}

// Post sends event over HTTP in binary mode and returns the status code and body.
func (h *Harness) Post(event cloudevents.Event) (int, string) {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.URL, nil)
	require.NoError(h.t, err)
	require.NoError(h.t, cehttp.WriteRequest(context.Background(), binding.ToMessage(&event), req))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(h.t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(bytes.TrimSpace(body))
}

// Event builds the ApiServerSource event the cluster source sends about obj ("add", "update" or
// "delete"; Knative's event code, as the source's), from the source cluster: in Resource mode, or
// in Reference mode for confidential kinds (Secrets), as the source cluster's source runs them.
func (h *Harness) Event(verb string, obj client.Object) cloudevents.Event {
	h.t.Helper()
	reference, kind := false, ToUnstructured(h.t, obj).GroupVersionKind().GroupKind()
	for _, w := range h.fn.Watches {
		if w.Kind.GroupKind() == kind && w.Kind.Confidential {
			reference = true
		}
	}
	return h.event(verb, obj, reference)
}

// ReferenceEvent builds the event a source in Reference mode sends about obj: its kind and name,
// no content (as for Secrets; an operator may run any kind's source so).
func (h *Harness) ReferenceEvent(verb string, obj client.Object) cloudevents.Event {
	h.t.Helper()
	return h.event(verb, obj, true)
}

func (h *Harness) event(verb string, obj client.Object, reference bool) cloudevents.Event {
	h.t.Helper()
	u := ToUnstructured(h.t, obj)
	make := map[string]func(string, string, interface{}, bool) (context.Context, cloudevents.Event, error){
		"add": events.MakeAddEvent, "update": events.MakeUpdateEvent, "delete": events.MakeDeleteEvent,
	}[verb]
	require.NotNil(h.t, make, "verb %q is not add, update or delete", verb)
	// The Source's events come from the garden's source for a function that works on the
	// garden, as config/ sends them.
	from := function.Source
	if h.fn.WorksOnGarden {
		from = function.Garden
	}
	_, event, err := make(h.Env.Config.Host, sources.SourceName(from), u, reference)
	require.NoError(h.t, err)
	event.SetID(fmt.Sprintf("%s-%d", obj.GetName(), time.Now().UnixNano()))
	event.SetExtension(function.ClusterExtension, string(from))
	return event
}

// TargetEvent builds the event the Target cluster's source sends about obj: with the tenant
// extension of the multi-tenant event source when tn is set. The Target of a function that works
// on the garden is the cluster it runs in, whose events its part's own source sends.
func (h *Harness) TargetEvent(verb string, obj client.Object, tn tenant.Name) cloudevents.Event {
	h.t.Helper()
	event := h.Event(verb, obj)
	from := function.Target
	if h.fn.WorksOnGarden {
		from = function.Source
	}
	event.SetSource(sources.SourceName(from))
	event.SetExtension(function.ClusterExtension, string(from))
	if tn != "" {
		event.SetExtension(function.TenantExtension, string(tn))
	}
	return event
}

// SendTarget posts the Target event about obj and requires it to be acknowledged (200).
func (h *Harness) SendTarget(verb string, obj client.Object, tn tenant.Name) {
	h.t.Helper()
	code, body := h.Post(h.TargetEvent(verb, obj, tn))
	require.Equal(h.t, http.StatusOK, code, "target event %s %s %s: %s", verb, obj.GetObjectKind().GroupVersionKind().Kind, client.ObjectKeyFromObject(obj), body)
}

// Send posts the event about obj and requires it to be acknowledged (200).
func (h *Harness) Send(verb string, obj client.Object) {
	h.t.Helper()
	code, body := h.Post(h.Event(verb, obj))
	require.Equal(h.t, http.StatusOK, code, "event %s %s %s: %s", verb, obj.GetObjectKind().GroupVersionKind().Kind, client.ObjectKeyFromObject(obj), body)
}

// Ping builds the tick of the named sweep's PingSource.
func (h *Harness) Ping(sweep string) cloudevents.Event {
	h.t.Helper()
	e := cloudevents.NewEvent()
	e.SetID(fmt.Sprintf("ping-%d", time.Now().UnixNano()))
	e.SetSource("/apis/v1/namespaces/" + sources.Namespace + "/pingsources/" + sources.PingSourceName(h.fn.Name, sweep))
	e.SetType(function.PingEventType)
	e.SetExtension(sources.FunctionExtension, h.fn.Name)
	require.NoError(h.t, e.SetData(cloudevents.ApplicationJSON, []byte(sources.PingData(sweep))))
	return e
}

// Sweep ticks the named sweep and requires it to be acknowledged.
func (h *Harness) Sweep(sweep string) {
	h.t.Helper()
	code, body := h.Post(h.Ping(sweep))
	require.Equal(h.t, http.StatusOK, code, "sweep %s: %s", sweep, body)
}

// Requests counts the function's API requests with the given verb ("" for all) since the last
// Reset.
func (h *Harness) Requests(verb string) int { return h.Counter.Total(verb) }

// ResetRequests starts counting anew.
func (h *Harness) ResetRequests() {
	h.Counter.Reset()
}

// Touched reads obj through c, makes someone else's change to it that means nothing to a
// reconcile (an annotation) and returns it as changed: an event of it is no echo of the
// function's own write (the runtime does not reconcile those again), so it is reconciled in full,
// as a test of an unchanged reconcile's cost wants.
func Touched[T client.Object](t testing.TB, c client.Client, obj T) T {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(obj), obj))
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations["test.gardener-knative.io/touched"] = obj.GetResourceVersion()
	obj.SetAnnotations(annotations)
	require.NoError(t, c.Patch(ctx, obj, patch))
	return obj
}

// ToUnstructured converts a typed object to the unstructured form the cluster source sends,
// with its apiVersion and kind set.
func ToUnstructured(t testing.TB, obj client.Object) *unstructured.Unstructured {
	t.Helper()
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u
	}
	gvk, err := apiutil.GVKForObject(obj, scheme.Gardener)
	require.NoError(t, err)
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	require.NoError(t, err)
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(gvk)
	return u
}

// Measure returns the function's API requests by verb (only verbs with requests) made while do
// ran.
func (h *Harness) Measure(do func()) map[string]int {
	verbs := []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
	before := map[string]int{}
	for _, v := range verbs {
		before[v] = h.Requests(v)
	}
	do()
	counts := map[string]int{}
	for _, v := range verbs {
		if n := h.Requests(v) - before[v]; n > 0 {
			counts[v] = n
		}
	}
	return counts
}

// LoadConfig loads fn's configuration as the runtime does at start-up (the component
// configuration named by CONTROLLER_MANAGER_CONFIG or RESOURCE_MANAGER_CONFIG, then the
// environment) and builds every
// reconciler from it, so that a configuration the reconcilers refuse is an error here too.
func LoadConfig[C any](fn *function.Function) (*C, error) {
	cfg, err := function.LoadConfig(fn, function.ComponentConfigs{
		ControllerManager: os.Getenv("CONTROLLER_MANAGER_CONFIG"), ResourceManager: os.Getenv("RESOURCE_MANAGER_CONFIG"),
	})
	if err != nil {
		return nil, err
	}
	for _, r := range fn.Reconcilers {
		if _, err := r.New(function.Deps{Config: cfg}); err != nil {
			return nil, err
		}
	}
	return cfg.(*C), nil
}

// Metric sums the samples of the function's counter or gauge name whose labels include labels.
func (h *Harness) Metric(name string, labels map[string]string) float64 {
	h.t.Helper()
	families, err := h.Registry.Gather()
	require.NoError(h.t, err)
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	samples:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue samples
				}
			}
			switch {
			case m.GetCounter() != nil:
				sum += m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				sum += m.GetGauge().GetValue()
			}
		}
	}
	return sum
}
