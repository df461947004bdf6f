package seed

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/scheme"
)

// gardenLoads counts the passes over the garden (one LIST of Seeds each) and holds each until
// released, so that reconciles arrive while one runs.
type gardenLoads struct {
	client.Reader
	passes  atomic.Int32
	running chan struct{}
	release chan struct{}
}

func (g *gardenLoads) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, seeds := list.(*gardencorev1beta1.SeedList); seeds {
		g.passes.Add(1)
		g.running <- struct{}{}
		<-g.release
	}
	return g.Reader.List(ctx, list, opts...)
}

// A burst of registration events holds one garden at a time, and the reconciles that waited
// for a pass that began after they arrived are served by it: a running pass and one more.
func TestAllSeedsRunsOnePassAtATimeForABurst(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(scheme.Gardener).Build()
	r, err := NewAllSeeds(function.Deps{Log: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	loads := &gardenLoads{Reader: c, running: make(chan struct{}), release: make(chan struct{})}
	req := function.Request{Reader: loads, Key: function.Key{Name: "registration"}}
	ctx := context.Background()

	var wg sync.WaitGroup
	wg.Go(func() { assert.NoError(t, r.Reconcile(ctx, req)) })
	<-loads.running // the first pass lists the garden
	const burst = 20
	for range burst {
		wg.Go(func() { assert.NoError(t, r.Reconcile(ctx, req)) })
	}
	require.Eventually(t, func() bool { return r.(*AllSeeds).arrivals.Load() == burst+1 }, 5*time.Second, 10*time.Millisecond, "the burst arrived")
	loads.release <- struct{}{}
	<-loads.running // the one pass for the whole burst
	loads.release <- struct{}{}
	wg.Wait()
	assert.Equal(t, int32(2), loads.passes.Load(), "the burst's reconciles share one pass")

	canceled, cancel := context.WithCancel(ctx)
	cancel()
	r.(*AllSeeds).pass <- struct{}{}
	assert.ErrorIs(t, r.Reconcile(canceled, req), context.Canceled, "a reconcile waiting for a pass ends with its request")
}
