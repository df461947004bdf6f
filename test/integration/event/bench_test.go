package event_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gardener-knative/gardener-knative/pkg/controller/event"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

// BenchmarkSweep20000Events measures one sweep over 20,000 Events (a third each expired Pod
// Events, fresh Pod Events and expired Shoot Events) against a real kube-apiserver, through
// HTTP: wall time, requests by verb, and the peak live heap during the sweep (sampled after
// forced collections, so garbage the collector has not reclaimed yet does not count), next to
// the live heap of one LIST of all Events (what a sweep that does not stream would hold). Then
// sweeps that find nothing to delete, with pages of 100 and 2,000 Events: their peak live heap
// follows the page size, not the number of Events.
func BenchmarkSweep20000Events(b *testing.B) {
	const total = 20000
	for range b.N {
		f := newFixture(b, time.Hour)
		f.Sweep(event.TTLSweep) // warm up discovery before the Events exist
		createEvents(b, f, total)

		allInMemory := liveHeapOf(func() any {
			list := &corev1.EventList{}
			require.NoError(b, env.Client.List(context.Background(), list))
			return list
		})
		b.ReportMetric(float64(allInMemory)/(1<<20), "one-list-of-all-MiB")

		base := liveHeap()
		peak := watchPeakLiveHeap()
		f.ResetRequests()
		start := time.Now()
		f.Sweep(event.TTLSweep)
		b.ReportMetric(time.Since(start).Seconds(), "sweep-seconds")
		b.ReportMetric(float64(peak()-base)/(1<<20), "sweep-peak-live-MiB")
		b.ReportMetric(float64(f.Requests("list")), "lists")
		b.ReportMetric(float64(f.Requests("delete")), "deletes")
		b.ReportMetric(float64(f.Requests("")), "requests")

		for _, pageSize := range []int64{100, 2000} {
			opts := functiontest.DefaultOptions
			opts.ListPageSize = pageSize
			g := newFixture(b, time.Hour, functiontest.WithOptions(opts))
			g.Sweep(event.TTLSweep) // warm up discovery
			base := liveHeap()
			peak := watchPeakLiveHeap()
			g.ResetRequests()
			start := time.Now()
			g.Sweep(event.TTLSweep)
			b.ReportMetric(time.Since(start).Seconds(), fmt.Sprintf("noop-sweep-page%d-seconds", pageSize))
			b.ReportMetric(float64(g.Requests("")), fmt.Sprintf("noop-sweep-page%d-requests", pageSize))
			b.ReportMetric(float64(peak()-base)/(1<<20), fmt.Sprintf("noop-sweep-page%d-peak-live-MiB", pageSize))
		}
	}
}

func createEvents(b *testing.B, f *fixture, total int) {
	ctx := context.Background()
	require.NoError(b, testenv.Parallel(total, func(i int) error {
		about, age := pod, 2*time.Hour
		switch i % 3 {
		case 1:
			age = 10 * time.Minute
		case 2:
			about = shoot
		}
		last := metav1.NewTime(now.Add(-age))
		ev := &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("event-%05d", i), Namespace: f.ns},
			InvolvedObject: corev1.ObjectReference{APIVersion: about.apiVersion, Kind: about.kind, Name: fmt.Sprintf("object-%05d", i), Namespace: f.ns},
			Reason:         "Reconciled", Message: "Reconciled the object successfully after a long and eventful operation", Type: corev1.EventTypeNormal,
			FirstTimestamp: last, LastTimestamp: last, Count: 1,
			Source: corev1.EventSource{Component: "benchmark"},
		}
		return env.Client.Create(ctx, ev)
	}))
}

// watchPeakLiveHeap samples the live heap (after a forced collection) until the returned
// function is called, which returns the highest sample.
func watchPeakLiveHeap() func() uint64 {
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if live := liveHeap(); live > peak.Load() {
				peak.Store(live)
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return func() uint64 {
		close(stop)
		<-done
		return peak.Load()
	}
}

// liveHeap is the heap in use by reachable objects.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// liveHeapOf is the live heap that what build returns holds.
func liveHeapOf(build func() any) uint64 {
	before := liveHeap()
	held := build()
	after := liveHeap()
	runtime.KeepAlive(held)
	if after < before {
		return 0
	}
	return after - before
}
