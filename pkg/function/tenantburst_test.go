package function

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"k8s.io/utils/ptr"
	eventingduckv1 "knative.dev/eventing/pkg/apis/duck/v1"
	"knative.dev/eventing/pkg/kncloudevents"
)

// Burst measurement (docs/architecture.md, "One tenant's burst"): tenant A's burst of 2,000
// events arrives at once at one pod of a per-seed function while tenant B's events arrive one by
// one, every 0.1 s; B's latency, from its event's first delivery to its 200, with and without
// TENANT_MAX_IN_FLIGHT.
//
//	go test ./pkg/function -run '^$' -bench BenchmarkTenantBurst -benchtime 1x
//
// The pod is emulated in the process, with no network: what Knative puts in front of the
// Server lets containerConcurrency (20) requests in at once and holds the others in one queue,
// first come first served; a request beyond the queue's depth is answered 503 at once. Two
// depths: the activator's (10,000 per revision, knative.dev/serving pkg/activator/net), which is
// in the path of every function's Service (the default target-burst-capacity of 200 exceeds
// max-scale 3 × 20, so Knative keeps the activator in front of the pods), and queue-proxy's
// alone (10 × containerConcurrency more, pkg/queue's breaker), for a Service with a
// target-burst-capacity that takes the activator out. Each event is delivered as the Broker's
// dispatcher does (Knative's own SelectiveRetry and backoff, with the shipped delivery: 5
// retries, exponential from 0.2 s; then the dead letter). A reconcile takes burstReconcile; its
// API requests are not emulated (they would add their rate limits' waits).
const (
	burstEvents = 2000
	// shootReconcileBurst is an ordinary burst: a shoot's reconcile writing its ManagedResources
	// (a few dozen) at once.
	shootReconcileBurst  = 50
	burstReconcile       = 100 * time.Millisecond
	containerConcurrency = 20
	activatorDepth       = 10000
	queueProxyDepth      = 10 * containerConcurrency
	// B sends an event every betweenBEvents, each on its own (as its objects change), for
	// bWindow: through A's burst and its retries (0.2 + 0.4 + 0.8 + 1.6 + 3.2 s).
	betweenBEvents = 100 * time.Millisecond
	bWindow        = 8 * time.Second
)

func BenchmarkTenantBurst(b *testing.B) {
	type share struct{ max, lendBelow int }
	for _, queue := range []struct {
		name  string
		depth int64
	}{{"activator", activatorDepth}, {"queue-proxy", queueProxyDepth}} {
		for _, events := range []int{burstEvents, shootReconcileBurst} {
			for _, sh := range []share{{0, 0}, {DefaultTenantMaxInFlight, 0}, {DefaultTenantMaxInFlight, DefaultTenantLendBelow}} {
				name := fmt.Sprintf("%s/A-events=%d/tenant-max-in-flight=%d/lend-below=%d", queue.name, events, sh.max, sh.lendBelow)
				if sh.max == 0 {
					name = fmt.Sprintf("%s/A-events=%d/unbounded", queue.name, events)
				}
				b.Run(name, func(b *testing.B) {
					for range b.N {
						r := runTenantBurst(b, sh.max, sh.lendBelow, events, containerConcurrency+queue.depth)
						b.ReportMetric(r.percentile(0.50).Seconds()*1000, "B-p50-ms")
						b.ReportMetric(r.percentile(0.90).Seconds()*1000, "B-p90-ms")
						b.ReportMetric(r.percentile(0.99).Seconds()*1000, "B-p99-ms")
						b.ReportMetric(r.bMax.Seconds()*1000, "B-max-ms")
						b.ReportMetric(float64(len(r.b)), "B-events")
						b.ReportMetric(float64(r.bDeadLettered), "B-dead-lettered")
						b.ReportMetric(float64(r.aDone), "A-done")
						b.ReportMetric(float64(r.aDeadLettered), "A-dead-lettered")
						b.ReportMetric(r.aTook.Seconds(), "A-s")
					}
				})
			}
		}
	}
}

type burstResult struct {
	b                    []time.Duration
	bMax                 time.Duration
	bDeadLettered        int
	aDone, aDeadLettered int64
	aTook                time.Duration
}

func (r burstResult) percentile(p float64) time.Duration {
	if len(r.b) == 0 {
		return 0
	}
	sorted := slices.Clone(r.b)
	slices.Sort(sorted)
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}

func runTenantBurst(b *testing.B, bound, lendBelow, events int, depth int64) burstResult {
	h := newGatedHandler()
	h.busy = burstReconcile
	s, _ := perSeedServer(b, h, Options{EventTimeout: time.Minute, ConflictRetries: 1, TenantMaxInFlight: bound, TenantLendBelow: lendBelow})
	pod := &queueProxy{next: s, slots: make(chan struct{}, containerConcurrency), depth: depth}
	delivery, err := kncloudevents.RetryConfigFromDeliverySpec(eventingduckv1.DeliverySpec{
		Retry: ptr.To[int32](5), BackoffPolicy: ptr.To(eventingduckv1.BackoffPolicyExponential), BackoffDelay: ptr.To("PT0.2S"),
	})
	if err != nil {
		b.Fatal(err)
	}

	var r burstResult
	var deliveries sync.WaitGroup
	var mu sync.Mutex
	start := time.Now()
	for i := range events {
		deliveries.Go(func() {
			if _, ok := pod.deliver(bastionEvent(tenantA, fmt.Sprintf("a-%d", i)), delivery); ok {
				atomic.AddInt64(&r.aDone, 1)
			} else {
				atomic.AddInt64(&r.aDeadLettered, 1)
			}
			mu.Lock()
			r.aTook = max(r.aTook, time.Since(start))
			mu.Unlock()
		})
	}
	for i := 0; time.Since(start) < bWindow; i++ {
		time.Sleep(betweenBEvents)
		deliveries.Go(func() {
			took, ok := pod.deliver(bastionEvent(tenantB, fmt.Sprintf("b-%d", i)), delivery)
			mu.Lock()
			defer mu.Unlock()
			if !ok {
				r.bDeadLettered++
				return
			}
			r.b = append(r.b, took)
			r.bMax = max(r.bMax, took)
		})
	}
	deliveries.Wait()
	return r
}

// queueProxy stands in for Knative's activator or queue-proxy: at most cap(slots) requests
// reach the container at once, depth requests at most are inside (waiting or served), the rest
// get 503.
type queueProxy struct {
	next    http.Handler
	slots   chan struct{}
	depth   int64
	pending atomic.Int64
}

func (q *queueProxy) serve(e cloudevents.Event) int {
	if q.pending.Add(1) > q.depth {
		q.pending.Add(-1)
		return http.StatusServiceUnavailable
	}
	defer q.pending.Add(-1)
	q.slots <- struct{}{}
	defer func() { <-q.slots }()
	w := httptest.NewRecorder()
	q.next.ServeHTTP(w, binaryRequest(e))
	return w.Code
}

// deliver sends e as the Broker's dispatcher does: again after its backoff while Knative retries
// the answer, until its retries are spent (ok false: dead-lettered). took is from the first
// attempt to the accepted answer.
func (q *queueProxy) deliver(e cloudevents.Event, delivery kncloudevents.RetryConfig) (took time.Duration, ok bool) {
	start := time.Now()
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			time.Sleep(delivery.Backoff(attempt-1, nil))
		}
		code := q.serve(e)
		if code >= 200 && code < 300 {
			return time.Since(start), true
		}
		retry, _ := delivery.CheckRetry(context.Background(), &http.Response{StatusCode: code}, nil)
		if !retry || attempt >= delivery.RetryMax {
			return time.Since(start), false
		}
	}
}

// BenchmarkShedEvent is what an event of a tenant at its bound costs the pod: decoded, answered
// 429.
func BenchmarkShedEvent(b *testing.B) {
	h := newGatedHandler()
	s, _ := perSeedServer(b, h, Options{EventTimeout: time.Minute, ConflictRetries: 1, TenantMaxInFlight: 1})
	release, _ := s.share.admit(tenantA)
	defer release()
	e := bastionEvent(tenantA, "a")
	b.ReportAllocs()
	for b.Loop() {
		if code := serveEvent(s, e).Code; code != http.StatusTooManyRequests {
			b.Fatal(code)
		}
	}
}
