package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/gardener-knative/gardener-knative/pkg/bootstrap"
	"github.com/gardener-knative/gardener-knative/pkg/tenantproof"
)

// snapshot is the normalised state of the landscape's clusters: every object of every kind
// that can be listed, by "cluster group/resource namespace/name".
type snapshot map[string]any

// notCompared are resources whose objects are no one's desired state: the record of what
// happened (Events: a duplicated event may well record a second "Reconciled"), and the
// kube-apiserver's own objects. The Events the script created are compared all the same: that
// the event function deleted the expired ones is an outcome.
var notCompared = map[schema.GroupResource]string{
	{Resource: "events"}:                                                             "a record of what happened, not state",
	{Group: "events.k8s.io", Resource: "events"}:                                     "a record of what happened, not state",
	{Group: "coordination.k8s.io", Resource: "leases"}:                               "kube-apiserver's own heartbeats, and the seeds' leases the script renews",
	{Resource: "endpoints"}:                                                          "the kube-apiserver's own",
	{Group: "networking.k8s.io", Resource: "ipaddresses"}:                            "the kube-apiserver's own ClusterIP allocations",
	{Group: "discovery.k8s.io", Resource: "endpointslices"}:                          "the kube-apiserver's own",
	{Group: "flowcontrol.apiserver.k8s.io", Resource: "flowschemas"}:                 "the kube-apiserver's own",
	{Group: "flowcontrol.apiserver.k8s.io", Resource: "prioritylevelconfigurations"}: "the kube-apiserver's own",
}

// take lists every listable resource of each cluster and normalises the objects; of the
// resources notCompared, it keeps the objects the script created (by "cluster namespace/name").
// The LISTs run side by side: each consistent LIST of a custom resource waits about a second
// here for kube-apiserver's watch cache to catch up.
func take(ctx context.Context, clusters map[string]*rest.Config, created map[string]bool) (snapshot, error) {
	var mu sync.Mutex
	raw := map[string][]unstructured.Unstructured{}
	lists, ctx := errgroup.WithContext(ctx)
	lists.SetLimit(32)
	for name, cfg := range clusters {
		cfg = rest.CopyConfig(cfg)
		bootstrap.Unthrottled(cfg) // a few hundred LISTs
		disco, err := discovery.NewDiscoveryClientForConfig(cfg)
		if err != nil {
			return nil, err
		}
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		resources, err := disco.ServerPreferredResources()
		if err != nil {
			return nil, fmt.Errorf("%s: discovery: %w", name, err)
		}
		for _, list := range resources {
			gv, err := schema.ParseGroupVersion(list.GroupVersion)
			if err != nil {
				return nil, err
			}
			for _, r := range list.APIResources {
				if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") {
					continue
				}
				resource := schema.GroupResource{Group: gv.Group, Resource: r.Name}
				lists.Go(func() error {
					objs, err := dyn.Resource(gv.WithResource(r.Name)).List(ctx, metav1.ListOptions{})
					if err != nil {
						return fmt.Errorf("%s: listing %s: %w", name, r.Name, err)
					}
					items := objs.Items
					if _, onlyCreated := notCompared[resource]; onlyCreated {
						items = slices.DeleteFunc(items, func(o unstructured.Unstructured) bool {
							return !created[name+" "+o.GetNamespace()+"/"+o.GetName()]
						})
					}
					mu.Lock()
					defer mu.Unlock()
					raw[name+" "+resource.String()] = items
					return nil
				})
			}
		}
	}
	if err := lists.Wait(); err != nil {
		return nil, err
	}
	return normalise(raw), nil
}

// kubeAPIServersOwn are objects every kube-apiserver writes for itself, different in each
// control plane: its client CAs, its own Service (its port).
var kubeAPIServersOwn = map[string]bool{"configmaps kube-system/extension-apiserver-authentication": true, "services default/kubernetes": true}

// racyByDesign are objects whose end the samples leave to a race between two functions, in
// Gardener as here: the Project stale-expired is created already past its auto-delete date, so
// the stale sweep deletes it while the project function may or may not have labelled its
// namespace yet; and the namespace controller that would then delete the namespace does not run
// in the landscape's garden.
var racyByDesign = map[string]string{
	"garden namespaces /garden-stale-expired": "the stale sweep's deletion of its Project races the project function's first reconciliation",
}

var (
	// timeOfDay is a maintenance window's begin or end (HHMMSS+ZONE), which the samples set
	// around the time they are created.
	timeOfDay = regexp.MustCompile(`^[0-9]{6}[+-][0-9]{4}$`)
	// projectNamespace is the namespace Gardener names after a Project and a hash of its UID.
	projectNamespace = regexp.MustCompile(`^garden-(.+)-[0-9a-f]{5}$`)
)

// normalise drops what differs between two runs of the same script without saying anything
// about the outcome: resourceVersions, UIDs, timestamps, managed fields, random names, ClusterIPs,
// the order of conditions and secret material (tokens, Helm's compressed releases, keys). It
// also drops what kube-controller-manager's garbage collector would delete (objects whose
// controller is gone): the landscape runs none, so whether they exist depends only on whether a
// function wrote them before their owner went.
func normalise(raw map[string][]unstructured.Unstructured) snapshot {
	uids := map[string]bool{}
	// Objects named by generateName get the same placeholder in every run; names built from
	// them (a release namespace named after its ControllerInstallation) follow.
	generated := map[string]string{}
	exists := map[string]bool{} // "cluster Kind namespace/name"
	for resource, objs := range raw {
		cluster := strings.SplitN(resource, " ", 2)[0]
		for _, o := range objs {
			if o.GetUID() != "" {
				uids[string(o.GetUID())] = true
			}
			exists[cluster+" "+o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName()] = true
			if prefix := o.GetGenerateName(); prefix != "" && strings.HasPrefix(o.GetName(), prefix) {
				generated[o.GetName()] = prefix + "<generated>"
			}
			if o.GetKind() == "Project" {
				ns, _, _ := unstructured.NestedString(o.Object, "spec", "namespace")
				if m := projectNamespace.FindStringSubmatch(ns); m != nil && m[1] == o.GetName() {
					generated[ns] = "garden-" + o.GetName() + "-<generated>"
				}
			}
		}
	}
	garbage := func(cluster string, o unstructured.Unstructured) bool {
		for _, owner := range o.GetOwnerReferences() {
			if owner.Controller != nil && *owner.Controller &&
				!exists[cluster+" "+owner.Kind+" "+o.GetNamespace()+"/"+owner.Name] && !exists[cluster+" "+owner.Kind+" /"+owner.Name] {
				return true
			}
		}
		return false
	}
	names := make([]string, 0, len(generated))
	for n := range generated {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return len(names[i]) > len(names[j]) })
	var replacePairs []string
	for _, n := range names {
		replacePairs = append(replacePairs, n, generated[n])
	}
	renamer := strings.NewReplacer(replacePairs...)

	var cleanString func(s string) string
	cleanString = func(s string) string {
		if uids[s] {
			return "<uid>"
		}
		if _, err := time.Parse(time.RFC3339, s); err == nil {
			return "<time>"
		}
		if timeOfDay.MatchString(s) {
			return "<time of day>"
		}
		return renamer.Replace(s)
	}
	var clean func(v any) any
	clean = func(v any) any {
		switch v := v.(type) {
		case map[string]any:
			out := make(map[string]any, len(v))
			for k, val := range v {
				switch k {
				case "resourceVersion": // also in references (a ControllerInstallation's)
					continue
				case "clusterIP", "clusterIPs":
					val = "<allocated>"
				case "modifiedAt", "createdAt": // Helm's labels, in Unix seconds
					val = "<time>"
				}
				out[cleanString(k)] = clean(val)
			}
			if conditions, ok := out["conditions"].([]any); ok {
				// The order of conditions is that of the writers' first writes.
				sort.SliceStable(conditions, func(i, j int) bool { return conditionType(conditions[i]) < conditionType(conditions[j]) })
			}
			return out
		case []any:
			out := make([]any, len(v))
			for i, val := range v {
				out[i] = clean(val)
			}
			return out
		case string:
			return cleanString(v)
		}
		return v
	}

	snap := snapshot{}
	for resource, objs := range raw {
		cluster, kind, _ := strings.Cut(resource, " ")
		for _, o := range objs {
			if _, racy := racyByDesign[resource+" "+o.GetNamespace()+"/"+o.GetName()]; racy || garbage(cluster, o) || kubeAPIServersOwn[kind+" "+o.GetNamespace()+"/"+o.GetName()] {
				continue
			}
			name := o.GetName()
			u := o.DeepCopy().Object
			if o.Object["type"] == "helm.sh/release.v1" {
				// A release's history is how often its values changed while the run went on
				// (the Seed's status and labels are among them); its outcome is the release
				// deployed. Its values are in its compressed data, which is not compared, and
				// their hash includes the Seed's UID.
				if o.GetLabels()["status"] != "deployed" {
					continue
				}
				name = strings.TrimSuffix(name, ".v"+o.GetLabels()["version"]) + ".<deployed>"
				labels := u["metadata"].(map[string]any)["labels"].(map[string]any)
				delete(labels, "version")
				delete(labels, "controllerinstallation.gardener-knative.io/checksum")
				u["metadata"].(map[string]any)["name"] = name
			}
			if o.GetKind() == "Shoot" {
				// A Shoot hibernated and woken every other minute is hibernated or not by the
				// minute the snapshot is taken in.
				if schedules, _, _ := unstructured.NestedSlice(u, "spec", "hibernation", "schedules"); everyOtherMinute(schedules) {
					unstructured.RemoveNestedField(u, "spec", "hibernation", "enabled")
					unstructured.RemoveNestedField(u, "status", "lastHibernationTriggerTime")
				}
			}
			meta, _ := u["metadata"].(map[string]any)
			for _, field := range []string{"resourceVersion", "uid", "creationTimestamp", "managedFields", "generation", "selfLink"} {
				delete(meta, field)
			}
			if finalizers, ok := meta["finalizers"].([]any); ok {
				// A set: the order is that of the functions' first writes.
				sort.Slice(finalizers, func(i, j int) bool { return fmt.Sprint(finalizers[i]) < fmt.Sprint(finalizers[j]) })
			}
			if _, ok := meta["deletionTimestamp"]; ok {
				meta["deletionTimestamp"] = "<set>"
			}
			if owners, ok := meta["ownerReferences"].([]any); ok {
				for _, owner := range owners {
					delete(owner.(map[string]any), "uid")
				}
			}
			// Secret material differs from run to run by nature; that it is there is the outcome.
			if strings.HasSuffix(resource, " secrets") {
				// The tenant proof keys are named by the second they were made in: how many there
				// are is the outcome.
				if keys, ok := u["data"].(map[string]any); ok && o.GetName() == tenantproof.SecretName {
					u["data"] = map[string]any{"keys": fmt.Sprint(len(keys))}
				}
				for _, field := range []string{"data", "stringData"} {
					if data, ok := u[field].(map[string]any); ok && o.GetName() != tenantproof.SecretName {
						for k := range data {
							data[k] = "<set>"
						}
					}
				}
			}
			if strings.HasSuffix(resource, " certificatesigningrequests.certificates.k8s.io") {
				if spec, ok := u["spec"].(map[string]any); ok {
					spec["request"] = "<key of this run>"
					delete(spec, "extra") // the requester's credential: a client certificate of this run
				}
			}
			key := resource + " " + renamer.Replace(o.GetNamespace()+"/"+name)
			for i := 2; snap[key] != nil; i++ { // several objects generated from one prefix
				key = fmt.Sprintf("%s #%d", strings.SplitN(key, " #", 2)[0], i)
			}
			snap[key] = clean(u)
		}
	}
	return snap
}

// divergence compares a run's snapshot with the fault-free one: the objects compared, and a
// description of each object that differs.
func divergence(want, got snapshot) (compared int, diffs []string) {
	keys := map[string]bool{}
	for k := range want {
		keys[k] = true
	}
	for k := range got {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		w, inWant := want[k]
		g, inGot := got[k]
		switch {
		case !inWant:
			diffs = append(diffs, fmt.Sprintf("%s: only in this run: %s", k, compact(g)))
		case !inGot:
			diffs = append(diffs, fmt.Sprintf("%s: only in the fault-free run: %s", k, compact(w)))
		default:
			if d := cmp.Diff(w, g); d != "" {
				diffs = append(diffs, fmt.Sprintf("%s (-fault-free +this run):\n%s", k, d))
			}
		}
	}
	return len(sorted), diffs
}

func everyOtherMinute(schedules []any) bool {
	for _, s := range schedules {
		if start, _ := s.(map[string]any)["start"].(string); strings.HasPrefix(start, "*/2 ") {
			return true
		}
	}
	return false
}

func conditionType(c any) string {
	m, _ := c.(map[string]any)
	t, _ := m["type"].(string)
	return t
}

func compact(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 600 {
		return string(b[:600]) + "…"
	}
	return string(b)
}
