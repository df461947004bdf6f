// Package cluster_test drives gardener-knative as an operator installs it, a release of config/
// applied with kubectl (hack/cluster.sh release and deploy), on the one-node cluster of
// hack/cluster.sh: Knative Serving and Eventing built from source, every function and webhook a
// Knative Service on real pods, fed by our cluster sources' pods (Knative's ApiServerSource
// events) through a real Broker, called by a real kube-apiserver (docs/cluster.md).
//
//	make e2e-cluster      # up, release, deploy, this suite, down
//
// It needs the cluster's KUBECONFIG and CLUSTER_DIR (hack/cluster.sh env) and skips without them,
// so that `go test ./...` stays a machine-independent run.
package cluster_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	operationsv1alpha1 "github.com/gardener/gardener/pkg/apis/operations/v1alpha1"
	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gardener-knative/gardener-knative/functions"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/scheme"
	"github.com/gardener-knative/gardener-knative/sources"
)

// namespace is where the seed part of config/ deploys the resource manager's functions and
// webhooks; the runtime part's are in function.Runtime.Namespace() (the cluster is the runtime
// cluster and the seed at once).
var namespace = function.Seed.Namespace()

// ourNamespaces are the namespaces of every part, the seed's first.
var ourNamespaces = []string{function.Seed.Namespace(), function.Runtime.Namespace()}

// serviceNamespaces maps our Knative Services' names to their namespaces, once listed.
var serviceNamespaces sync.Map

// namespaceOf is the namespace of our Knative Service name: the seed's when the seed part has it
// (webhookcertificates and dead-letter are in both), else the runtime part's.
func namespaceOf(t *testing.T, name string) string {
	t.Helper()
	if ns, ok := serviceNamespaces.Load(name); ok {
		return ns.(string)
	}
	for _, s := range slices.Backward(ourServices(t)) {
		serviceNamespaces.Store(s.GetName(), s.GetNamespace())
	}
	ns, ok := serviceNamespaces.Load(name)
	require.True(t, ok, "no Knative Service %s in %v", name, ourNamespaces)
	return ns.(string)
}

// c is the one-node cluster: the runtime cluster and the seed. garden is the virtual garden, a
// kube-apiserver of its own with no nodes, where Gardener's API is (hack/cluster.sh).
var c, garden client.Client

func TestMain(m *testing.M) {
	kubeconfig, gardenKubeconfig, dir := os.Getenv("KUBECONFIG"), os.Getenv("GARDEN_KUBECONFIG"), os.Getenv("CLUSTER_DIR")
	if kubeconfig == "" || gardenKubeconfig == "" || dir == "" {
		fmt.Println("test/cluster: skipped, no cluster (make e2e-cluster runs it on hack/cluster.sh's)")
		os.Exit(0)
	}
	// controller-runtime logs through its logger (envtest, for the shoots): nowhere here.
	ctrllog.SetLogger(logr.Discard())
	for _, cl := range []struct {
		kubeconfig string
		client     *client.Client
	}{{kubeconfig, &c}, {gardenKubeconfig, &garden}} {
		cfg, err := clientcmd.BuildConfigFromFlags("", cl.kubeconfig)
		if err == nil {
			cfg.QPS, cfg.Burst = 50, 100
			*cl.client, err = client.New(cfg, client.Options{Scheme: scheme.Gardener})
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	os.Exit(m.Run())
}

// ready reads an object's Ready condition ("" when it has none yet) and its message.
func ready(t *testing.T, gvk schema.GroupVersionKind, key client.ObjectKey) (string, string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := c.Get(context.Background(), key, u); err != nil {
		return "", err.Error()
	}
	conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, cond := range conditions {
		m, _ := cond.(map[string]any)
		if m["type"] == "Ready" {
			msg, _ := m["message"].(string)
			return fmt.Sprint(m["status"]), msg
		}
	}
	return "", "no Ready condition"
}

// eventually polls f every 50 ms (latencies are measured with it) until it returns nil or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, f func() error) time.Duration {
	t.Helper()
	start := time.Now()
	var err error
	for time.Since(start) < timeout {
		if err = f(); err == nil {
			return time.Since(start)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: not within %s: %v", what, timeout, err)
	return 0
}

var ksvcGVK = schema.GroupVersionKind{Group: "serving.knative.dev", Version: "v1", Kind: "Service"}

// ourServices lists the Knative Services of every part, the seed's first.
func ourServices(t *testing.T) []unstructured.Unstructured {
	t.Helper()
	var all []unstructured.Unstructured
	for _, ns := range ourNamespaces {
		services := &unstructured.UnstructuredList{}
		services.SetGroupVersionKind(ksvcGVK.GroupVersion().WithKind("ServiceList"))
		require.NoError(t, c.List(context.Background(), services, client.InNamespace(ns)))
		require.NotEmpty(t, services.Items, "no Knative Service in %s", ns)
		all = append(all, services.Items...)
	}
	return all
}

// Every object config/ deploys for the functions is accepted and reconciled by real Knative: each
// function's Knative Service, the Broker, the shared sources, each Trigger and PingSource; the
// webhooks' Services too, and kube-apiserver took their registrations.
func TestDeployedAndReady(t *testing.T) {
	type item struct {
		gvk schema.GroupVersionKind
		key client.ObjectKey
	}
	var items []item
	var objects []client.Object
	for _, part := range function.AllParts {
		objs, err := sources.PartObjects(part, functions.All, sources.DefaultPlumbing())
		require.NoError(t, err)
		objects = append(objects, objs...)
		for _, fn := range functions.All {
			if slices.Contains(fn.Parts, part) {
				items = append(items, item{ksvcGVK, client.ObjectKey{Namespace: part.Namespace(), Name: fn.Name}})
			}
		}
		items = append(items, item{ksvcGVK, client.ObjectKey{Namespace: part.Namespace(), Name: "dead-letter"}})
	}
	for _, name := range []string{"grm-webhooks", "grm-webhooks-best-effort", "grm-node-agent-authorizer"} {
		items = append(items, item{ksvcGVK, client.ObjectKey{Namespace: namespace, Name: name}})
	}
	items = append(items, item{ksvcGVK, client.ObjectKey{Namespace: function.Runtime.Namespace(), Name: "extension-registration"}})
	for _, o := range objects {
		// Knative's kinds report Ready; the ServiceAccounts and RBAC beside them have no status.
		if gvk := o.GetObjectKind().GroupVersionKind(); strings.HasSuffix(gvk.Group, "knative.dev") {
			items = append(items, item{gvk, client.ObjectKeyFromObject(o)})
		}
	}
	// A fail-closed server's pods start only once webhookcertificates has issued their Secret,
	// and kubelet retries the missing volume with a growing back-off: the last Service became
	// Ready 283 s after the apply in one run and after more than 300 s in the next.
	const readyWithin = 8 * time.Minute
	deadline := time.Now().Add(readyWithin)
	var notReady []string
	for time.Now().Before(deadline) {
		notReady = nil
		for _, it := range items {
			if status, msg := ready(t, it.gvk, it.key); status != "True" {
				notReady = append(notReady, fmt.Sprintf("%s %s: %s %s", it.gvk.Kind, it.key, status, msg))
			}
		}
		if len(notReady) == 0 {
			break
		}
		time.Sleep(2 * time.Second)
	}
	sort.Strings(notReady)
	if len(notReady) > 0 {
		logWaitingPods(t)
	}
	require.Empty(t, notReady, "not Ready after %s:\n%s", readyWithin, strings.Join(notReady, "\n"))
	t.Logf("%d objects Ready: %d function Services, the webhook and dead-letter Services, and the event plumbing", len(items), len(functions.All))
}

// logWaitingPods logs the pods of our namespaces that are not ready, with what their containers
// wait for, so that a Service that never became Ready says why.
func logWaitingPods(t *testing.T) {
	var items []corev1.Pod
	for _, ns := range ourNamespaces {
		pods := &corev1.PodList{}
		if err := c.List(context.Background(), pods, client.InNamespace(ns)); err != nil {
			t.Logf("listing the pods: %v", err)
			return
		}
		items = append(items, pods.Items...)
	}
	for _, pod := range items {
		for _, cs := range pod.Status.ContainerStatuses {
			if cs.Ready {
				continue
			}
			reason := ""
			if cs.State.Waiting != nil {
				reason = cs.State.Waiting.Reason + ": " + cs.State.Waiting.Message
			}
			t.Logf("pod %s (%s): container %s not ready, %d restarts %s", pod.Name, pod.Status.Phase, cs.Name, cs.RestartCount, reason)
		}
		if len(pod.Status.ContainerStatuses) == 0 {
			t.Logf("pod %s (%s): no container started; conditions %+v", pod.Name, pod.Status.Phase, pod.Status.Conditions)
		}
	}
}

// podsOf counts a Knative Service's pods that are not terminating.
func podsOf(t *testing.T, service string) int {
	t.Helper()
	return podsIn(t, namespaceOf(t, service), service)
}

// podsIn counts the pods of the Knative Service namespace/service that are not terminating.
func podsIn(t *testing.T, namespace, service string) int {
	t.Helper()
	n := 0
	for _, p := range allPodsIn(t, namespace, service) {
		if p.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

// allPodsOf lists a Knative Service's pods, terminating ones included.
func allPodsOf(t *testing.T, service string) []corev1.Pod {
	t.Helper()
	return allPodsIn(t, namespaceOf(t, service), service)
}

// allPodsIn lists the pods of the Knative Service namespace/service, terminating ones included.
func allPodsIn(t *testing.T, namespace, service string) []corev1.Pod {
	t.Helper()
	pods := &corev1.PodList{}
	require.NoError(t, c.List(context.Background(), pods, client.InNamespace(namespace),
		client.MatchingLabels{"serving.knative.dev/service": service}))
	return pods.Items
}

// waitForZero waits until a Service has no pod at all (podsLeft).
func waitForZero(t *testing.T, service string, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, service+" at zero pods, none draining", func() error {
		if n := podsLeft(t, service); n > 0 {
			return fmt.Errorf("%d pods", n)
		}
		return nil
	})
}

// podsLeft counts a Service's pods, terminating ones included, and deletes the terminating ones
// at once: Knative's queue-proxy drains a scaled-down pod for 30 s, and such a pod still serves
// what is routed to it, so a cold start needs it gone. The autoscaler has already given it up
// and nothing is in flight, so ending its drain changes nothing but the wait (30 s per cold run).
func podsLeft(t *testing.T, service string) int {
	t.Helper()
	pods := allPodsOf(t, service)
	for i := range pods {
		if pods[i].DeletionTimestamp != nil {
			err := c.Delete(context.Background(), &pods[i], client.GracePeriodSeconds(0))
			require.NoError(t, client.IgnoreNotFound(err))
		}
	}
	return len(pods)
}

// exists is nil once obj exists (NotFound keeps eventually polling).
func exists(obj client.Object) error {
	err := garden.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%s not found yet", obj.GetName())
	}
	return err
}

// The project function creates the namespace a Project names, with the Project's labels.
func TestProjectCreatesItsNamespace(t *testing.T) {
	ns, took := projectNamespace(t, fmt.Sprintf("e2e-%d", time.Now().Unix()%100000))
	require.Equal(t, "project", ns.Labels["gardener.cloud/role"])
	t.Logf("namespace %s created %s after its Project", ns.Name, took.Round(time.Millisecond))
}

// projectNamespace creates a Project and times until the project function has created its
// namespace: source pod, Broker, Trigger filter, (activator and a new pod when at zero), the
// function's reads and writes. Its resync sweep runs every 10 minutes, so only the event can
// be the cause.
func projectNamespace(t *testing.T, name string) (*corev1.Namespace, time.Duration) {
	t.Helper()
	p := &gardencorev1beta1.Project{ObjectMeta: metav1.ObjectMeta{Name: name}}
	p.Spec.Namespace = ptr.To("garden-" + name)
	owner := rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "owner@example.com"}
	p.Spec.Owner = &owner
	p.Spec.Members = []gardencorev1beta1.ProjectMember{{Subject: owner, Role: gardencorev1beta1.ProjectMemberAdmin, Roles: []string{gardencorev1beta1.ProjectMemberOwner}}}
	start := time.Now()
	require.NoError(t, garden.Create(context.Background(), p))
	t.Cleanup(func() { _ = garden.Delete(context.Background(), p) })
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "garden-" + name}}
	eventually(t, 2*time.Minute, "namespace of project "+name, func() error { return exists(ns) })
	took := time.Since(start)
	require.Equal(t, name, ns.Labels["project.gardener.cloud/name"])
	return ns, took
}

// An event reaches a function that has no pod: Knative wakes one and the function writes. The
// project function creates the namespace of a new Project; each run starts with no project pod
// at all, not even a draining one, and away from the ten-minute resync tick that wakes it.
func TestEventFromZero(t *testing.T) {
	runs := envInt("COLD_RUNS", 10)
	var took []time.Duration
	for i := range runs {
		eventually(t, 4*time.Minute, "project with no pod at all, away from its tick", func() error {
			now := time.Now()
			if now.Minute()%10 == 9 || now.Second() < 5 || now.Second() > 45 {
				return fmt.Errorf("%s is near a tick", now.Format(time.TimeOnly))
			}
			if n := podsLeft(t, "project"); n > 0 {
				return fmt.Errorf("%d pods", n)
			}
			return nil
		})
		_, d := projectNamespace(t, fmt.Sprintf("cold-%d-%d", time.Now().Unix()%100000, i))
		took = append(took, d)
	}
	t.Logf("event to the function's write (a Project's namespace created), from no pod at all, %d runs: %s", runs, summary(took))
}

// Steady state: the function is warm; object change to the function's write. A namespace comes
// and goes beside each Bastion, as projects and shoots do: the cluster sources watch every
// namespace without a list, so no event is lost and no source restarts (Knative's own
// ApiServerSource rolled its adapter for each namespace, docs/cluster.md).
func TestEventSteadyState(t *testing.T) {
	runs := envInt("WARM_RUNS", 20)
	ns := shootNamespace(t, "garden-steady")
	before := sourceGenerations(t)
	orphanBastion(t, ns, "warmup")
	var took []time.Duration
	for i := range runs {
		churn := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("churn-%d-%d", time.Now().Unix()%100000, i)}}
		require.NoError(t, garden.Create(context.Background(), churn))
		took = append(took, orphanBastion(t, ns, fmt.Sprintf("warm-%d", i)))
		require.NoError(t, garden.Delete(context.Background(), churn))
	}
	t.Logf("event to the function's write (a Bastion of a missing Shoot deleted), warm, %d runs with a namespace created and deleted in each: %s", runs, summary(took))
	require.Equal(t, before, sourceGenerations(t), "the sources' Deployments never change with namespaces")
}

// sourceGenerations are the generations of the cluster sources' Deployments of every part, by
// namespace and name.
func sourceGenerations(t *testing.T) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, ns := range ourNamespaces {
		deployments := &appsv1.DeploymentList{}
		require.NoError(t, c.List(context.Background(), deployments, client.InNamespace(ns)))
		for _, d := range deployments.Items {
			if d.Labels["sources.knative.dev/containerSource"] != "" {
				out[ns+"/"+d.Name] = d.Generation
			}
		}
	}
	require.Len(t, out, 5, "each part's source-cluster and garden-cluster, and the seed's target-clusters")
	return out
}

// orphanBastion creates a Bastion whose Shoot does not exist and times until the bastion function
// has deleted it: the runtime part's garden-cluster pod (our watchers), Broker, Trigger filter, (activator
// and a new pod when at zero), the function's reads and its DELETE.
func orphanBastion(t *testing.T, ns, name string) time.Duration {
	t.Helper()
	b := &operationsv1alpha1.Bastion{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	b.Spec.ShootRef.Name = "no-such-shoot"
	b.Spec.SeedName = ptr.To("local")
	start := time.Now()
	require.NoError(t, garden.Create(context.Background(), b))
	eventually(t, 2*time.Minute, "Bastion "+name+" of a missing Shoot deleted", func() error { return gone(b) })
	return time.Since(start)
}

// shootNamespace creates a namespace with a Shoot "local" on seed "local" (bastions need one).
func shootNamespace(t *testing.T, prefix string) string {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", prefix, time.Now().Unix()%100000)}}
	require.NoError(t, garden.Create(ctx, ns))
	t.Cleanup(func() { _ = garden.Delete(ctx, ns) })
	shoot := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: "local", Namespace: ns.Name}}
	shoot.Spec.SeedName = ptr.To("local")
	require.NoError(t, garden.Create(ctx, shoot))
	return ns.Name
}

// gone is nil once obj no longer exists.
func gone(obj client.Object) error {
	err := garden.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err == nil {
		return fmt.Errorf("%s still there", obj.GetName())
	}
	return err
}

// A PingSource drives a sweep: a Bastion that expires after its create event was handled is
// deleted by the bastion function's resync sweep (every minute), with no event about it.
func TestPingSourceSweep(t *testing.T) {
	ctx := context.Background()
	ns := shootNamespace(t, "garden-sweep")
	b := &operationsv1alpha1.Bastion{ObjectMeta: metav1.ObjectMeta{Name: "expires-soon", Namespace: ns}}
	b.Spec.ShootRef.Name = "local"
	b.Spec.SeedName = ptr.To("local")
	require.NoError(t, garden.Create(ctx, b))
	b.Status.ExpirationTimestamp = &metav1.Time{Time: time.Now().Add(15 * time.Second)}
	require.NoError(t, garden.Status().Update(ctx, b))
	took := eventually(t, 3*time.Minute, "the expired Bastion deleted by a sweep", func() error { return gone(b) })
	t.Logf("Bastion deleted %s after creation (expired after 15 s; the resync PingSource ticks every minute)", took.Round(time.Second))
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// summary is the median, p99 (the largest below 100 runs), min and max of durations.
func summary(d []time.Duration) string {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	p := func(q float64) time.Duration { return s[int(q*float64(len(s)-1)+0.5)] }
	return fmt.Sprintf("median %s, p99 %s, min %s, max %s", p(0.5).Round(time.Millisecond),
		p(0.99).Round(time.Millisecond), s[0].Round(time.Millisecond), s[len(s)-1].Round(time.Millisecond))
}
