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

	load := admitUnderLoad(t, c, pod)
	defer load.stop()

	time.Sleep(3 * time.Second)
	before := load.admitted.Load()
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
	admitted, refused := load.stop()

	t.Logf("%d dry-run Pod creations admitted (%d after the eviction, over %s until two pods served again), %d refused",
		admitted, admitted-before, back.Round(time.Second), len(refused))
	require.Greater(t, admitted-before, int64(10), "too few admissions after the eviction at %s to tell", evicted.Format("15:04:05"))
	require.Empty(t, refused, "admission refused while a pod of %s was lost", service)
}

// admissionLoad is four workers creating a Pod (server-side dry runs, through one kube-apiserver)
// over and over, counting
// what is admitted and what refused.
type admissionLoad struct {
	admitted atomic.Int64
	mu       sync.Mutex
	refused  []string
	done     chan struct{}
	wg       sync.WaitGroup
	once     sync.Once
}

// admitUnderLoad creates obj over and over as server-side dry runs, four at a time, until stopped,
// counting what was admitted and what refused.
func admitUnderLoad(t *testing.T, cl client.Client, obj client.Object) *admissionLoad {
	t.Helper()
	ctx := context.Background()
	load := &admissionLoad{done: make(chan struct{})}
	for range 4 {
		load.wg.Add(1)
		go func() {
			defer load.wg.Done()
			for {
				select {
				case <-load.done:
					return
				default:
				}
				if err := cl.Create(ctx, obj.DeepCopyObject().(client.Object), client.DryRunAll); err != nil {
					load.mu.Lock()
					load.refused = append(load.refused, time.Now().Format("15:04:05.000")+" "+err.Error())
					load.mu.Unlock()
					continue
				}
				load.admitted.Add(1)
			}
		}()
	}
	return load
}

// stop ends the workers (once) and returns the admitted count and the refusals.
func (l *admissionLoad) stop() (int64, []string) {
	l.once.Do(func() {
		close(l.done)
		l.wg.Wait()
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.admitted.Load(), l.refused
}
