package cluster_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// readyPodsOf lists a Knative Service's pods that are Ready and not terminating.
func readyPodsOf(t *testing.T, service string) []corev1.Pod {
	t.Helper()
	var ready []corev1.Pod
	for _, p := range allPodsOf(t, service) {
		if p.DeletionTimestamp != nil {
			continue
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				ready = append(ready, p)
			}
		}
	}
	return ready
}

// A fail-closed webhook survives the loss of a pod (docs/deployment.md, "Fail-closed webhooks"):
// while workers keep creating Pods (server-side dry runs) that grm-webhooks' projected-token-mount
// must admit, one of its two pods is evicted through the Eviction API, as a node drain does
// (the PodDisruptionBudget allows one), and the Service comes back to two pods. Not one of the
// creations is refused.
func TestWebhookPodLossRefusesNothing(t *testing.T) {
	const service = "grm-webhooks"
	ctx := context.Background()
	eventually(t, 3*time.Minute, service+" with two Ready pods", func() error {
		if n := len(readyPodsOf(t, service)); n != 2 {
			return fmt.Errorf("%d Ready pods", n)
		}
		return nil
	})

	pod := tokenMountPod(t, "a")
	// The webhook knows the ServiceAccount before the measured part (assertTokenMounted retries until it does).
	assertTokenMounted(t, c, pod)

	var (
		admitted atomic.Int64
		mu       sync.Mutex
		refused  []string
		stop     = make(chan struct{})
		wg       sync.WaitGroup
	)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := c.Create(ctx, pod.DeepCopy(), client.DryRunAll); err != nil {
					mu.Lock()
					refused = append(refused, time.Now().Format("15:04:05.000")+" "+err.Error())
					mu.Unlock()
					continue
				}
				admitted.Add(1)
			}
		}()
	}
	stopped := false
	stopWorkers := func() {
		if !stopped {
			stopped = true
			close(stop)
			wg.Wait()
		}
	}
	defer stopWorkers()

	time.Sleep(3 * time.Second)
	before := admitted.Load()
	victim := readyPodsOf(t, service)[0]
	require.NoError(t, c.SubResource("eviction").Create(ctx, &victim, &policyv1.Eviction{}), "the PodDisruptionBudget allows one eviction")
	evicted := time.Now()
	t.Logf("evicted %s after %d admissions", victim.Name, before)
	back := eventually(t, 3*time.Minute, service+" back to two Ready pods, the evicted one gone", func() error {
		if n := len(readyPodsOf(t, service)); n != 2 {
			return fmt.Errorf("%d Ready pods", n)
		}
		for _, p := range allPodsOf(t, service) {
			if p.UID == victim.UID {
				return fmt.Errorf("%s still terminating", victim.Name)
			}
		}
		return nil
	})
	time.Sleep(3 * time.Second)
	stopWorkers()

	t.Logf("%d dry-run Pod creations admitted (%d after the eviction, over %s until two pods served again), %d refused",
		admitted.Load(), admitted.Load()-before, back.Round(time.Second), len(refused))
	require.Greater(t, admitted.Load()-before, int64(10), "too few admissions after the eviction at %s to tell", evicted.Format("15:04:05"))
	require.Empty(t, refused, "admission refused while a pod of %s was lost", service)
}
