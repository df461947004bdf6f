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
)

// waitSteady waits until every ManagedResource of the namespaces is applied and healthy for
// its generation, as its resource manager reports it, while every process runs.
func waitSteady(ctx context.Context, seed client.Client, namespaces []string, procs []*process, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	want := map[string]bool{}
	for _, ns := range namespaces {
		want[ns] = true
	}
	var pending int
	for {
		for _, p := range procs {
			if err := p.alive(); err != nil {
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
func quiesce(ctx context.Context, procs []*process) (time.Duration, error) {
	start := time.Now()
	previous, err := sample(procs)
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
		now, err := sample(procs)
		if err != nil {
			return 0, err
		}
		var used time.Duration
		for i := range now {
			used += now[i].cpu - previous[i].cpu
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

// window is what a side's processes used over one sync period at steady state.
type window struct {
	// meanRSS and peakRSS are of the processes' summed resident memory, sampled every
	// sampleEvery; cpu is the CPU time they used in all.
	meanRSS, peakRSS int64
	cpu              time.Duration
	// rss is each process's mean resident memory over the window, by name: one sample at its
	// end moved by ±15 MiB per process from run to run (the heap's peaks come and go with the
	// sweeps), enough to turn a fit per part of two sizes of N around.
	rss map[string]int64
	// anon is each process's mean anonymous resident memory (RssAnon) over the window, by name:
	// RSS without the pages of its binary, which it shares with the page cache and which do not
	// grow with shoots (the source and the Broker stand-in run as this benchmark's binary, 85 MB
	// of it resident, where a cluster runs their own images).
	anon     map[string]int64
	from, to time.Time
}

const sampleEvery = 500 * time.Millisecond

// measure samples procs for d.
func measure(ctx context.Context, procs []*process, d time.Duration) (window, error) {
	w := window{from: time.Now(), rss: map[string]int64{}, anon: map[string]int64{}}
	first, err := sample(procs)
	if err != nil {
		return w, err
	}
	var sum int64
	var samples int64
	perProcess := make([]int64, len(procs))
	perProcessAnon := make([]int64, len(procs))
	ticker := time.NewTicker(sampleEvery)
	defer ticker.Stop()
	end := time.After(d)
	last := first
	for done := false; !done; {
		select {
		case <-ctx.Done():
			return w, ctx.Err()
		case <-end:
			done = true
		case <-ticker.C:
		}
		now, err := sample(procs)
		if err != nil {
			return w, err
		}
		var rss int64
		for i, u := range now {
			rss += u.rss
			perProcess[i] += u.rss
			perProcessAnon[i] += u.anon
		}
		sum += rss
		samples++
		w.peakRSS = max(w.peakRSS, rss)
		last = now
	}
	w.to = time.Now()
	w.meanRSS = sum / samples
	for i, p := range procs {
		w.cpu += last[i].cpu - first[i].cpu
		w.rss[p.name] = perProcess[i] / samples
		w.anon[p.name] = perProcessAnon[i] / samples
	}
	// The window lasts a little longer than d: the CPU time is scaled to exactly one period.
	w.cpu = time.Duration(float64(w.cpu) * float64(d) / float64(w.to.Sub(w.from)))
	return w, nil
}

func sample(procs []*process) ([]usage, error) {
	us := make([]usage, len(procs))
	for i, p := range procs {
		if err := p.alive(); err != nil {
			return nil, err
		}
		u, err := p.usage()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.name, err)
		}
		us[i] = u
	}
	return us, nil
}

// sumPeaks is the sum of each process's own peak resident memory (VmHWM) so far: at most what
// they held at once, at least the peak of any one.
func sumPeaks(procs []*process) (int64, error) {
	us, err := sample(procs)
	if err != nil {
		return 0, err
	}
	var sum int64
	for _, u := range us {
		sum += u.peak
	}
	return sum, nil
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

// percentile is the nearest-rank percentile p (0–100) of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	rank := int(float64(len(sorted))*p/100+0.999999) - 1
	return sorted[min(max(rank, 0), len(sorted)-1)]
}

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
