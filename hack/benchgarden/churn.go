package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// churnRates are the writes a landscape's gardenlets and users make, as the benchmark makes
// them while both sides run.
type churnRates struct {
	// statusEvery is how often each Shoot's status is written (gardenlet's care controller
	// writes conditions every minute and lastOperation progress during reconciles).
	statusEvery time.Duration
	// specPerHour is how many Shoot spec changes users make per hour in all.
	specPerHour int
	// leaseEvery is how often each Seed's gardenlet renews its lease (gardenlet: 10 s).
	leaseEvery time.Duration
	// seedStatusEvery is how often each Seed's status is written (gardenlet's care controller).
	seedStatusEvery time.Duration
}

// churn writes the landscape's changes until ctx ends; written counts them.
type churn struct {
	c       client.Client
	s       shape
	rates   churnRates
	written atomic.Int64
	failed  atomic.Int64
	// statusWrites counts the Shoots' status writes, for the share that carries lastOperation.
	statusWrites atomic.Int64
	// paused stops the lease renewals of the Seeds in it (a reaction's test: a gardenlet gone).
	paused sync.Map
}

// run starts one writer per kind of change; each spreads its writes evenly over its period.
func (ch *churn) run(ctx context.Context) {
	var wg sync.WaitGroup
	spread := func(count int, period time.Duration, write func(context.Context, int) error) {
		if count == 0 || period <= 0 {
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			interval := period / time.Duration(count)
			next := time.Now()
			// A few writers at once, so that a slow write does not hold the pace back.
			slots := make(chan struct{}, 8)
			for i := 0; ; i = (i + 1) % count {
				next = next.Add(interval)
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Until(next)):
				}
				select {
				case slots <- struct{}{}:
				case <-ctx.Done():
					return
				}
				go func(i int) {
					defer func() { <-slots }()
					if err := write(ctx, i); err != nil && ctx.Err() == nil {
						ch.failed.Add(1)
						return
					}
					ch.written.Add(1)
				}(i)
			}
		}()
	}
	spread(ch.s.shoots, ch.rates.statusEvery, ch.shootStatus)
	spread(ch.rates.specPerHour, time.Hour, ch.shootSpec)
	spread(ch.s.seeds, ch.rates.leaseEvery, ch.lease)
	spread(ch.s.seeds, ch.rates.seedStatusEvery, ch.seedStatus)
	// Events come at the rate that keeps their number steady under a TTL of an hour: the
	// landscape's Events per hour.
	spread(ch.s.shoots*ch.s.eventsPerShoot/2, time.Hour, ch.event)
	wg.Wait()
}

func mergePatch(data string) client.Patch { return client.RawPatch(types.MergePatchType, []byte(data)) }

// lastOperationEvery is how many of a Shoot's status writes carry a lastOperation too: gardenlet's
// care controller writes the conditions every minute, its reconcile (hourly, and on changes)
// writes lastOperation's progress about ten times.
const lastOperationEvery = 6

// shootStatus writes what gardenlet writes of a Shoot's status: every minute the conditions'
// probe times (their list whole, as a merge patch replaces a list), every lastOperationEvery-th
// time lastOperation's progress.
func (ch *churn) shootStatus(ctx context.Context, i int) error {
	now := time.Now()
	status := shootStatus(ch.s, i, now)
	patch := fmt.Sprintf(`{"status":{"conditions":%s}}`, mustJSON(status.Conditions))
	if ch.statusWrites.Add(1)%lastOperationEvery == 0 {
		// Its state stays Succeeded, so that the status label stays: a reconcile's progress
		// writes without the label's flips around them.
		patch = fmt.Sprintf(`{"status":{"conditions":%s,"lastOperation":{"type":"Reconcile","state":"Succeeded","progress":100,"description":"Shoot cluster has been successfully reconciled.","lastUpdateTime":%q}}}`,
			mustJSON(status.Conditions), now.UTC().Format(time.RFC3339))
	}
	sh := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Namespace: ch.s.shootKey(i).Namespace, Name: ch.s.shootKey(i).Name}}
	return ch.c.Status().Patch(ctx, sh, mergePatch(patch))
}

// observeAfter is how long gardenlet takes to observe a Shoot's new spec (status.observedGeneration).
const observeAfter = 30 * time.Second

// shootSpec is a user's change of a Shoot's spec (a worker pool's maximum), and gardenlet
// observing it observeAfter later.
func (ch *churn) shootSpec(ctx context.Context, i int) error {
	key := ch.s.shootKey((i * 7919) % ch.s.shoots) // spread over the Shoots
	sh := &gardencorev1beta1.Shoot{}
	if err := ch.c.Get(ctx, key, sh); err != nil {
		return err
	}
	before := sh.DeepCopy()
	sh.Spec.Provider.Workers[0].Maximum = 10 + int32(time.Now().Unix()%10)
	if err := ch.c.Patch(ctx, sh, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return nil
	case <-time.After(observeAfter):
	}
	return ch.c.Status().Patch(ctx, sh, mergePatch(fmt.Sprintf(`{"status":{"observedGeneration":%d}}`, sh.Generation)))
}

func (ch *churn) lease(ctx context.Context, i int) error {
	if _, paused := ch.paused.Load(seedName(i)); paused {
		return nil
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: gardencorev1beta1.GardenerSeedLeaseNamespace, Name: seedName(i)}}
	return ch.c.Patch(ctx, lease, mergePatch(fmt.Sprintf(`{"spec":{"renewTime":%q}}`, time.Now().UTC().Format(metav1.RFC3339Micro))))
}

func (ch *churn) seedStatus(ctx context.Context, i int) error {
	if _, paused := ch.paused.Load(seedName(i)); paused {
		return nil
	}
	status := seed(i, time.Now()).Status
	sd := &gardencorev1beta1.Seed{ObjectMeta: metav1.ObjectMeta{Name: seedName(i)}}
	return ch.c.Status().Patch(ctx, sd, mergePatch(fmt.Sprintf(`{"status":{"conditions":%s}}`, mustJSON(status.Conditions))))
}

var eventSerial atomic.Int64

func (ch *churn) event(ctx context.Context, i int) error {
	e := event(ch.s, i%ch.s.shoots, 0, time.Now())
	e.Name = fmt.Sprintf("%s.churn%x", e.Name, eventSerial.Add(1))
	e.FirstTimestamp, e.LastTimestamp = metav1.Now(), metav1.Now()
	return ch.c.Create(ctx, e)
}
