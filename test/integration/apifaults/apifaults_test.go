// Package apifaults_test puts a fault-injecting hop (testenv.APIFaults) between a function and
// a real kube-apiserver and proves what the runtime promises while the kube-apiserver throttles,
// is overloaded, unreachable or hanging, flaps, or loses the answers of writes it made:
//   - the function answers 503 while it cannot work, so the Broker retries, and never
//     acknowledges an event it did not handle;
//   - nothing is written twice or half: the writes the kube-apiserver accepted for a Project
//     converged through faults are the writes of a fault-free run;
//   - once the faults end, one sweep converges every object.
package apifaults_test

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gardener-knative/gardener-knative/pkg/cache"
	projectfn "github.com/gardener-knative/gardener-knative/pkg/controller/project"
	projectmain "github.com/gardener-knative/gardener-knative/pkg/controller/project/project"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
	"github.com/gardener-knative/gardener-knative/pkg/kube"
	"github.com/gardener-knative/gardener-knative/pkg/scheme"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/projectedtokenmount"
	"github.com/gardener-knative/gardener-knative/pkg/webhook/webhooktest"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

// createProject creates a Project with an explicit namespace and two members, as
// gardener-apiserver serves it (with a status).
func createProject(t *testing.T, name string) *gardencorev1beta1.Project {
	t.Helper()
	ctx := context.Background()
	member := func(user string) rbacv1.Subject {
		return rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}
	}
	p := &gardencorev1beta1.Project{ObjectMeta: metav1.ObjectMeta{Name: name}}
	p.Spec.Namespace = ptr.To("garden-" + name)
	p.Spec.Owner = ptr.To(member("olivia"))
	p.Spec.Members = []gardencorev1beta1.ProjectMember{
		{Subject: member("olivia"), Role: "admin", Roles: []string{"owner"}},
		{Subject: member("victor"), Role: "viewer"},
	}
	require.NoError(t, env.Client.Create(ctx, p))
	require.NoError(t, env.Client.Status().Update(ctx, p))
	return p
}

// converged asserts what the Project's reconcile leaves: Ready, observed, its namespace
// labelled for it, and a RoleBinding per role.
func converged(t *testing.T, p *gardencorev1beta1.Project) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(p), p))
	assert.Equal(t, gardencorev1beta1.ProjectReady, p.Status.Phase, "phase of %s", p.Name)
	assert.Equal(t, p.Generation, p.Status.ObservedGeneration)
	ns := &corev1.Namespace{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: *p.Spec.Namespace}, ns))
	assert.Equal(t, p.Name, ns.Labels["project.gardener.cloud/name"])
	bindings := &rbacv1.RoleBindingList{}
	require.NoError(t, env.Client.List(ctx, bindings, client.InNamespace(ns.Name)))
	var names []string
	for _, b := range bindings.Items {
		names = append(names, b.Name)
	}
	assert.Subset(t, names, []string{"gardener.cloud:system:project-member", "gardener.cloud:system:project-viewer"})
}

// objectWrites are the accepted writes of objects (not Events, which record what happened,
// failures included), with the Project's name replaced: "VERB path" and the body without its
// resourceVersion (a write repeated after a fresh read differs only there).
func objectWrites(accepted []testenv.Write, project string) (writes []string, withBodies []string) {
	for _, w := range accepted {
		if strings.HasSuffix(w.Path, "/events") || strings.Contains(w.Path, "/events/") {
			continue
		}
		write := strings.ReplaceAll(w.Verb+" "+w.Path, project, "<project>")
		writes = append(writes, write)
		withBodies = append(withBodies, write+" "+withoutResourceVersion(w.Body))
	}
	slices.Sort(writes)
	return writes, withBodies
}

var resourceVersion = regexp.MustCompile(`"resourceVersion":"[0-9]*",?`)

// withoutResourceVersion is a write's body without its resourceVersion: of a JSON patch, its
// operations but the one on the resourceVersion, in a canonical order (a patch's operations come
// in map order); of an object, the object.
func withoutResourceVersion(body string) string {
	var ops []map[string]any
	if json.Unmarshal([]byte(body), &ops) != nil {
		return resourceVersion.ReplaceAllString(body, "")
	}
	var kept []string
	for _, op := range ops {
		if op["path"] == "/metadata/resourceVersion" {
			continue
		}
		encoded, _ := json.Marshal(op)
		kept = append(kept, string(encoded))
	}
	slices.Sort(kept)
	return strings.Join(kept, ",")
}

// repeated are the writes made more than once with the same body.
func repeated(withBodies []string) []string {
	seen := map[string]int{}
	var twice []string
	for _, w := range withBodies {
		if seen[w]++; seen[w] == 2 {
			twice = append(twice, w)
		}
	}
	return twice
}

// faultOptions give an event and a sweep 2 s: a fault that outlasts them is a 503.
func faultOptions() functiontest.Option {
	opts := functiontest.DefaultOptions
	opts.EventTimeout, opts.SweepTimeout = 2*time.Second, 2*time.Second
	return functiontest.WithOptions(opts)
}

// extra are the writes of got beyond those of want (a status that said Failed meanwhile).
func extra(got, want []string) []string {
	left := slices.Clone(got)
	for _, w := range want {
		if i := slices.Index(left, w); i >= 0 {
			left = slices.Delete(left, i, i+1)
		}
	}
	return left
}

func TestProjectsConvergeThroughAPIServerFaults(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d (Flaky's draws)", seed)
	faults := testenv.NewAPIFaults(seed)
	h := functiontest.New(t, env, projectfn.Function, functiontest.AsFunction(), faultOptions(),
		functiontest.WithRESTConfig(func(c *rest.Config) { c.WrapTransport = faults.WrapTransport }))

	reference := createProject(t, "reference")
	code, body := h.Post(h.Event("add", reference))
	require.Equal(t, http.StatusOK, code, body)
	converged(t, reference)
	want, _ := objectWrites(faults.Accepted(), reference.Name)
	require.NotEmpty(t, want)

	for _, fault := range []testenv.Fault{testenv.Throttled, testenv.Overloaded, testenv.Unreachable, testenv.Hanging, testenv.LostAnswers, testenv.Flaky} {
		t.Run(string(fault), func(t *testing.T) {
			p := createProject(t, "faults-"+string(fault))
			faults.Set(fault)
			event := h.Event("add", p)
			// The Broker delivers the event, and again while it is answered 503 (twice here).
			for range 2 {
				code, body := h.Post(event)
				switch {
				case code == http.StatusOK:
					// Acknowledged: only a Flaky run may get through, and then the work is done.
					require.Equal(t, testenv.Flaky, fault, "acknowledged through fault %s: %s", fault, body)
					converged(t, p)
				default:
					require.Equal(t, http.StatusServiceUnavailable, code, "a fault that may pass asks for a retry: %s", body)
				}
			}
			switch fault {
			case testenv.Flaky:
			case testenv.LostAnswers:
				// Its LISTs get through: the sweep is done (200), its keys that failed are counted
				// and the next tick retries them.
				failed := h.Metric("gardener_knative_sweep_key_failures_total", map[string]string{"sweep": projectmain.ResyncSweepName, "failure": "transient"})
				code, body := h.Post(h.Ping(projectmain.ResyncSweepName))
				assert.Equal(t, http.StatusOK, code, body)
				assert.Greater(t, h.Metric("gardener_knative_sweep_key_failures_total", map[string]string{"sweep": projectmain.ResyncSweepName, "failure": "transient"}), failed)
			default:
				code, body := h.Post(h.Ping(projectmain.ResyncSweepName))
				assert.Equal(t, http.StatusServiceUnavailable, code, "a sweep that cannot list asks for a retry: %s", body)
			}
			assert.Positive(t, faults.Injected(fault), "the fault met requests")

			faults.Set(testenv.Healthy)
			code, body := h.Post(h.Ping(projectmain.ResyncSweepName))
			require.Equal(t, http.StatusOK, code, body)
			converged(t, p)
			got, withBodies := objectWrites(faults.Accepted(), p.Name)
			assert.Empty(t, repeated(withBodies), "no write made twice")
			for _, w := range want {
				assert.Contains(t, got, w, "every write of a fault-free run made")
			}
			t.Logf("%s: %d requests met the fault; %d object writes accepted (fault-free: %d), extra: %v", fault, faults.Injected(fault), len(got), len(want), extra(got, want))
		})
	}
}

// The check for writes made twice sees through what differs between two sends of one write:
// the resourceVersion precondition and the order of a patch's operations.
func TestRepeatedFindsAWriteMadeTwice(t *testing.T) {
	patch := func(rv, ops string) testenv.Write {
		return testenv.Write{Verb: "PATCH", Path: "/apis/core.gardener.cloud/v1beta1/projects/p/status",
			Body: `[{"op":"replace","path":"/metadata/resourceVersion","value":"` + rv + `"},` + ops + `]`}
	}
	phase := `{"op":"add","path":"/status/phase","value":"Pending"}`
	generation := `{"op":"add","path":"/status/observedGeneration","value":1}`
	_, once := objectWrites([]testenv.Write{patch("1", phase+","+generation), patch("2", `{"op":"replace","path":"/status/phase","value":"Ready"}`)}, "p")
	assert.Empty(t, repeated(once))
	_, twice := objectWrites([]testenv.Write{patch("1", phase+","+generation), patch("7", generation+","+phase)}, "p")
	assert.Len(t, repeated(twice), 1)
}

// A webhook that reads the cluster keeps its semantics through an outage and recovers:
// projected-token-mount answers from its ServiceAccount cache while the entry is fresh, then
// refuses (the kube-apiserver rejects the Pod: fail-closed, as Gardener's handler answers an
// unreadable ServiceAccount), and mounts again once the kube-apiserver is back.
func TestWebhookThroughAnOutage(t *testing.T) {
	ctx := context.Background()
	faults := testenv.NewAPIFaults(1)
	cfg := rest.CopyConfig(env.Config)
	cfg.WrapTransport = faults.WrapTransport
	c, err := kube.NewClient(cfg, scheme.Gardener)
	require.NoError(t, err)
	clk := testclock.NewFakeClock(time.Now())
	handler, err := projectedtokenmount.NewHandler(c, 3600, clk, projectedtokenmount.Config{ServiceAccountCacheTTL: 10 * time.Second, ServiceAccountCacheSize: 10})
	require.NoError(t, err)

	ns := env.Namespace(t)
	require.NoError(t, env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns}, AutomountServiceAccountToken: ptr.To(false)}))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns}, Spec: corev1.PodSpec{ServiceAccountName: "app", Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
	admit := func() admission.Response {
		return handler.Handle(ctx, webhooktest.Request(t, admissionv1.Create, pod, nil))
	}
	mounted := func(resp admission.Response) bool { return resp.Allowed && len(resp.Patches) > 0 }

	require.True(t, mounted(admit()), "healthy: mounted")
	for _, fault := range []testenv.Fault{testenv.Unreachable, testenv.Overloaded, testenv.Hanging} {
		faults.Set(fault)
		assert.True(t, mounted(admit()), "%s, the ServiceAccount cached: mounted as before", fault)
		clk.Step(11 * time.Second)
		var resp admission.Response
		if fault == testenv.Hanging {
			timeout, cancel := context.WithTimeout(ctx, time.Second)
			resp = handler.Handle(timeout, webhooktest.Request(t, admissionv1.Create, pod, nil))
			cancel()
		} else {
			resp = admit()
		}
		assert.False(t, resp.Allowed, "%s, the cache expired: refused, not admitted without the token", fault)
		faults.Set(testenv.Healthy)
		if fault == testenv.Hanging {
			// The hung read goes on for the requests that join it, until the cache's load timeout
			// (cache.DefaultLoadTimeout, as long as a kube-apiserver waits for a webhook) ends it.
			start := time.Now()
			assert.Eventually(t, func() bool { return mounted(admit()) }, cache.DefaultLoadTimeout+5*time.Second, 100*time.Millisecond, "after %s: mounted again", fault)
			t.Logf("after a hung read: mounted again after %v", time.Since(start).Round(100*time.Millisecond))
			continue
		}
		assert.True(t, mounted(admit()), "after %s: mounted again", fault)
		assert.Positive(t, faults.Injected(fault))
	}
}
