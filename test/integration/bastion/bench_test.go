package bastion_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	operationsv1alpha1 "github.com/gardener/gardener/pkg/apis/operations/v1alpha1"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gardener-knative/gardener-knative/pkg/function"
)

// BenchmarkSweep1000 measures a no-op resync sweep over 1,000 Bastions against a real
// kube-apiserver, through HTTP, and reports API requests per sweep.
func BenchmarkSweep1000(b *testing.B) {
	f := newFixture(b)
	ctx := context.Background()
	f.shoot(b, "shoot", "seed-a")
	for i := range 1000 {
		nb := &operationsv1alpha1.Bastion{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bastion-%04d", i), Namespace: f.ns}}
		nb.Spec.ShootRef.Name = "shoot"
		nb.Spec.SeedName = ptr.To("seed-a")
		require.NoError(b, env.Client.Create(ctx, nb))
	}
	ping := cloudevents.NewEvent()
	ping.SetID("bench")
	ping.SetSource("bench")
	ping.SetType(function.PingEventType)
	require.NoError(b, ping.SetData(cloudevents.ApplicationJSON, []byte(`{"sweep":"resync"}`)))
	target := cloudevents.ContextWithTarget(ctx, f.sink)
	if result := f.sender.Send(target, ping); !cloudevents.IsACK(result) { // warm up discovery
		b.Fatal(result)
	}

	before := f.counter.Total("")
	b.ResetTimer()
	for b.Loop() {
		if result := f.sender.Send(target, ping); !cloudevents.IsACK(result) {
			b.Fatal(result)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(f.counter.Total("")-before)/float64(b.N), "requests/sweep")
}

// BenchmarkNoopBastionEvent measures one Reference-mode Bastion event that changes nothing.
func BenchmarkNoopBastionEvent(b *testing.B) {
	f := newFixture(b)
	hour := time.Hour
	f.shoot(b, "shoot", "seed-a")
	bastion := f.bastion(b, "bastion", "shoot", "seed-a", &hour)
	f.sendBastion(b, bastion) // warm up discovery
	before := f.counter.Total("")
	b.ResetTimer()
	for b.Loop() {
		f.sendBastion(b, bastion)
	}
	b.StopTimer()
	b.ReportMetric(float64(f.counter.Total("")-before)/float64(b.N), "requests/event")
}
