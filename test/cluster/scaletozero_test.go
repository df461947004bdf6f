package cluster_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// These run on every part of config/ plus its variant in config/scale-to-zero/ (every Service may scale to zero, the webhooks'
// timeouts raised to 30 s): hack/e2e-cluster.sh deploys that variant before it runs them.

// After idling, every function and webhook Service is seen at zero pods. Functions whose sweeps
// tick every minute wake for each tick and scale down again in between, so each Service is
// watched for a window rather than all at one instant.
func TestScaleToZero(t *testing.T) {
	waiting := map[client.ObjectKey]bool{}
	for _, s := range ourServices(t) {
		waiting[client.ObjectKeyFromObject(&s)] = true
	}
	deadline := time.Now().Add(4 * time.Minute)
	for len(waiting) > 0 && time.Now().Before(deadline) {
		for s := range waiting {
			if podsIn(t, s.Namespace, s.Name) == 0 {
				delete(waiting, s)
			}
		}
		time.Sleep(time.Second)
	}
	var never []string
	for s := range waiting {
		never = append(never, s.String())
	}
	sort.Strings(never)
	require.Empty(t, never, "never seen at zero pods within 4 minutes")
	footprint(t)
}

// footprint reports the pods that stay up at idle and their summed RSS (the pods' memory cgroups),
// Knative's and ours apart.
func footprint(t *testing.T) {
	pods := &corev1.PodList{}
	require.NoError(t, c.List(context.Background(), pods))
	type group struct {
		pods int
		rss  uint64
		list []string
	}
	groups := map[string]*group{}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
			continue
		}
		if _, scaled := p.Labels["serving.knative.dev/service"]; scaled {
			continue // a Service's pod: it comes and goes with events
		}
		g := groups[p.Namespace]
		if g == nil {
			g = &group{}
			groups[p.Namespace] = g
		}
		rss := podRSS(string(p.UID))
		g.pods++
		g.rss += rss
		g.list = append(g.list, fmt.Sprintf("%s %d MiB", p.Name, rss>>20))
	}
	for ns, g := range groups {
		sort.Strings(g.list)
		t.Logf("always-on in %s: %d pods, %d MiB RSS (%s)", ns, g.pods, g.rss>>20, strings.Join(g.list, ", "))
	}
}

// podRSS sums total_rss of a pod's memory cgroup (kubelet's cgroupfs layout, cgroup v1).
func podRSS(uid string) uint64 {
	var rss uint64
	_ = filepath.WalkDir("/sys/fs/cgroup/memory/kubepods", func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() || d.Name() != "pod"+uid {
			return nil
		}
		f, err := os.Open(filepath.Join(path, "memory.stat"))
		if err != nil {
			return filepath.SkipDir
		}
		defer f.Close()
		s := bufio.NewScanner(f)
		for s.Scan() {
			if v, ok := strings.CutPrefix(s.Text(), "total_rss "); ok {
				rss, _ = strconv.ParseUint(v, 10, 64)
			}
		}
		return filepath.SkipDir
	})
	return rss
}

// An admission request to a webhook Service with no pod at all: the kube-apiserver's call wakes one
// through Knative's ingress and activator, and the answer is the webhook's (a protected CRD's
// deletion refused), never a failure-policy default.
func TestAdmissionFromZero(t *testing.T) {
	runs := envInt("COLD_RUNS", 10)
	crd := protectedCRD(t)
	var took []time.Duration
	for range runs {
		waitForZero(t, "grm-webhooks", 3*time.Minute)
		start := time.Now()
		deleteRefused(t, crd)
		took = append(took, time.Since(start))
	}
	t.Logf("admission request to response, from no pod at all, %d runs: %s", runs, summary(took))
}
