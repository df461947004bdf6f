package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/hack/internal/benchkit"
)

// waitSteady waits until every ManagedResource of the namespaces is applied and healthy for
// its generation, as its resource manager reports it, while every process runs.
func waitSteady(ctx context.Context, seed client.Client, namespaces []string, procs []*benchkit.Process, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	want := map[string]bool{}
	for _, ns := range namespaces {
		want[ns] = true
	}
	var pending int
	for {
		for _, p := range procs {
			if err := p.Alive(); err != nil {
				return err
			}
		}
		list := &resourcesv1alpha1.ManagedResourceList{}
		if err := seed.List(ctx, list); err != nil {
			return err
		}
		pending = 0
		for _, mr := range list.Items {
			if want[mr.Namespace] && !steady(&mr) {
				pending++
			}
		}
		if pending == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d ManagedResources not applied and healthy after %s", pending, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

func steady(mr *resourcesv1alpha1.ManagedResource) bool {
	if mr.Status.ObservedGeneration != mr.Generation {
		return false
	}
	for _, t := range []gardencorev1beta1.ConditionType{resourcesv1alpha1.ResourcesApplied, resourcesv1alpha1.ResourcesHealthy} {
		i := slices.IndexFunc(mr.Status.Conditions, func(c gardencorev1beta1.Condition) bool { return c.Type == t })
		if i < 0 || mr.Status.Conditions[i].Status != gardencorev1beta1.ConditionTrue {
			return false
		}
	}
	return true
}

// quiet is the CPU use below which a side's processes count as idle (in cores, all together),
// for quietFor in a row, at least minSettle after the full sync and at most maxSettle.
const (
	quiet     = 0.05
	quietFor  = 3 * time.Second
	minSettle = 5 * time.Second
	maxSettle = 3 * time.Minute
)

// quiesce waits until the processes are idle: what their start set off is done.
func quiesce(ctx context.Context, procs []*benchkit.Process) (time.Duration, error) {
	start := time.Now()
	previous, err := benchkit.Sample(procs)
	if err != nil {
		return 0, err
	}
	var calm time.Duration
	for {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(time.Second):
		}
		now, err := benchkit.Sample(procs)
		if err != nil {
			return 0, err
		}
		var used time.Duration
		for i := range now {
			used += now[i].CPU - previous[i].CPU
		}
		previous = now
		if used.Seconds() < quiet {
			calm += time.Second
		} else {
			calm = 0
		}
		waited := time.Since(start)
		if (calm >= quietFor && waited >= minSettle) || waited >= maxSettle {
			return waited, nil
		}
	}
}

// auditEvent is what the benchmark reads of an audit log's line.
type auditEvent struct {
	User struct {
		Username string `json:"username"`
	} `json:"user"`
	Verb                     string      `json:"verb"`
	RequestReceivedTimestamp metav1.Time `json:"requestReceivedTimestamp"`
}

// requests counts by verb the requests users made to the kube-apiserver of an audit log that
// arrived in [from, to). A watch is logged once it ends, so only the watches that ended in it are
// counted: at steady state, the ones that were re-established.
func requests(path string, users []string, from, to time.Time) (map[string]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	counts := map[string]int{}
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 1<<20), 16<<20)
	for scanner.Scan() {
		var ev auditEvent
		if err := json.Unmarshal(scanner.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		at := ev.RequestReceivedTimestamp.Time
		if at.Before(from) || !at.Before(to) || !slices.Contains(users, ev.User.Username) {
			continue
		}
		counts[ev.Verb]++
	}
	return counts, scanner.Err()
}

// add adds counts into sum.
func add(sum, counts map[string]int) {
	for verb, n := range counts {
		sum[verb] += n
	}
}

// drift edits ConfigMaps a side manages in one shoot, edits times, one every editEvery, never
// one still drifted, and measures how long each takes to be reverted to what its
// ManagedResource says.
func drift(ctx context.Context, shoot kubernetes.Interface, w workload, edits int, timeout time.Duration) ([]time.Duration, error) {
	ns := w.shootNamespace()
	var names []string
	for i := range w.managedResources {
		for j := range driftedPerManagedResource {
			names = append(names, w.configMapName(i, j))
		}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// A kube-apiserver may end a watch at any time (at N = 50 one ended while Gardener's side
	// waited for its sync): it is resumed from the last event's resourceVersion.
	list, err := shoot.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return nil, err
	}
	watcher, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return shoot.CoreV1().ConfigMaps(ns).Watch(ctx, opts)
		},
	})
	if err != nil {
		return nil, err
	}
	defer watcher.Stop()

	type edit struct {
		start   time.Time
		drifted bool
	}
	free := map[string]chan struct{}{}
	for _, name := range names {
		free[name] = make(chan struct{}, 1)
		free[name] <- struct{}{}
	}
	started := make(chan struct {
		name string
		at   time.Time
	}, edits)
	editErr := make(chan error, 1)
	go func() {
		defer close(started)
		for k := range edits {
			name := names[k%len(names)]
			select {
			case <-free[name]:
			case <-ctx.Done():
				return
			}
			at := time.Now()
			started <- struct {
				name string
				at   time.Time
			}{name, at}
			patch := fmt.Appendf(nil, `{"data":{"config.yaml":"drift %d\n"}}`, k)
			if _, err := shoot.CoreV1().ConfigMaps(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				editErr <- err
				return
			}
			select {
			case <-time.After(editEvery):
			case <-ctx.Done():
				return
			}
		}
	}()

	pending := map[string]*edit{}
	var latencies []time.Duration
	for len(latencies) < edits {
		select {
		case <-ctx.Done():
			return latencies, fmt.Errorf("%d of %d edits not reverted within %s", edits-len(latencies), edits, timeout)
		case err := <-editErr:
			return latencies, err
		case s, ok := <-started:
			if ok {
				pending[s.name] = &edit{start: s.at}
			}
		case ev, ok := <-watcher.ResultChan():
			if !ok {
				return latencies, errors.New("the watch of the drifted ConfigMaps ended")
			}
			if ev.Type == watch.Error {
				return latencies, fmt.Errorf("the watch of the drifted ConfigMaps: %v", apierrors.FromObject(ev.Object))
			}
			cm, isCM := ev.Object.(*corev1.ConfigMap)
			if !isCM || ev.Type != watch.Modified {
				continue
			}
			// The start of an edit is known before its patch is sent, so its events follow.
			for drained := false; !drained; {
				select {
				case s, ok := <-started:
					if ok {
						pending[s.name] = &edit{start: s.at}
					} else {
						drained = true
					}
				default:
					drained = true
				}
			}
			e := pending[cm.Name]
			if e == nil {
				continue
			}
			if cm.Data["config.yaml"] != desiredData["config.yaml"] {
				e.drifted = true
				continue
			}
			if e.drifted {
				latencies = append(latencies, time.Since(e.start))
				delete(pending, cm.Name)
				free[cm.Name] <- struct{}{}
			}
		}
	}
	return latencies, nil
}

// editEvery spaces the drift test's edits.
const editEvery = 100 * time.Millisecond

// verbs formats request counts by verb, scaled by 1/per, in a fixed order.
func verbs(counts map[string]int, per int) string {
	order := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	for verb := range counts {
		if !slices.Contains(order, verb) {
			order = append(order, verb)
		}
	}
	var parts []string
	for _, verb := range order {
		if n := counts[verb]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %s", verb, trim(float64(n)/float64(per))))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func total(counts map[string]int) int {
	var n int
	for _, c := range counts {
		n += c
	}
	return n
}

func trim(f float64) string {
	if f == float64(int64(f)) {
		return fmt.Sprintf("%d", int64(f))
	}
	return fmt.Sprintf("%.1f", f)
}
