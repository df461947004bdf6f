package controllerregistration_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/controllerregistration/seed"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

// BenchmarkSeedSweep100Seeds10000Shoots50Registrations measures the main reconciler's sweep
// over 100 seeds hosting 10,000 shoots (100 each), with 50 registrations, against a real
// kube-apiserver, through HTTP. "converge" is the first sweep, which creates every seed's
// installations; the loop is the steady sweep with nothing changed. Requests are per sweep.
func BenchmarkSeedSweep100Seeds10000Shoots50Registrations(b *testing.B) {
	const (
		seeds         = 100
		shootsPerSeed = 100
		providers     = 5
		images        = 10
		networks      = 5
	)
	f := newFixture(b)
	ctx := context.Background()

	// 50 registrations: 5 providers, 10 OS images, 5 networks, 10 Extensions auto-enabled for
	// shoots, 5 with policy Always, 5 AlwaysExceptNoShoots, 10 unused.
	for i := range providers {
		f.providerRegistration(fmt.Sprintf("p%d", i))
	}
	for i := range images {
		f.registration(fmt.Sprintf("os%d", i), "", resource{Kind: "OperatingSystemConfig", Type: fmt.Sprintf("img%d", i)})
	}
	for i := range networks {
		f.registration(fmt.Sprintf("net%d", i), "", resource{Kind: "Network", Type: fmt.Sprintf("net%d", i)})
	}
	for i := range 10 {
		f.registration(fmt.Sprintf("ext%d", i), "", resource{Kind: "Extension", Type: fmt.Sprintf("ext%d", i)})
	}
	for i := range 5 {
		f.registration(fmt.Sprintf("always%d", i), gardencorev1beta1.ControllerDeploymentPolicyAlways, resource{Kind: "Extension", Type: fmt.Sprintf("always%d", i)})
		f.registration(fmt.Sprintf("ens%d", i), gardencorev1beta1.ControllerDeploymentPolicyAlwaysExceptNoShoots, resource{Kind: "Extension", Type: fmt.Sprintf("ens%d", i)})
	}
	for i := range 10 {
		f.registration(fmt.Sprintf("unused%d", i), "", resource{Kind: "DNSRecord", Type: fmt.Sprintf("unused%d", i)})
	}

	for i := range seeds {
		f.seed(fmt.Sprintf("seed%03d", i), fmt.Sprintf("p%d", i%providers))
	}
	require.NoError(b, testenv.Parallel(seeds*shootsPerSeed, func(i int) error {
		s := &gardencorev1beta1.Shoot{}
		s.Name, s.Namespace = fmt.Sprintf("shoot-%05d", i), f.ns
		s.Spec.SeedName = ptr.To(f.name(fmt.Sprintf("seed%03d", i%seeds)))
		s.Spec.Provider.Type = f.name(fmt.Sprintf("p%d", i%providers))
		s.Spec.Networking = &gardencorev1beta1.Networking{Type: ptr.To(f.name(fmt.Sprintf("net%d", i%networks)))}
		s.Spec.Extensions = []gardencorev1beta1.Extension{{Type: f.name(fmt.Sprintf("ext%d", i%10))}}
		s.Spec.Provider.Workers = []gardencorev1beta1.Worker{{Name: "w", Minimum: 1, Maximum: 3,
			Machine: gardencorev1beta1.Machine{Type: "m5.large", Image: &gardencorev1beta1.ShootMachineImage{Name: f.name(fmt.Sprintf("img%d", i%images))}}}}
		return env.Client.Create(ctx, s)
	}))

	start := time.Now()
	converge := f.Measure(func() { f.Sweep(seed.SweepName) })
	convergeTime := time.Since(start)
	// seed000 and its shoots share provider p0; each of its shoots uses image 0, network 0 and
	// extension 0 (i%100 == 0 for all of them): provider, OS, network, extension, 5 Always and
	// 5 AlwaysExceptNoShoots.
	require.Equal(b, 1+1+1+1+5+5, len(f.installations(f.name("seed000"))))

	f.ResetRequests()
	for b.Loop() {
		f.Sweep(seed.SweepName)
	}
	steady := map[string]float64{}
	for _, verb := range []string{"list", "get", "create", "patch", "delete"} {
		steady[verb] = float64(f.Requests(verb)) / float64(b.N)
	}
	// One event: a Shoot of seed000 changed; its seed is reconciled with field-selected LISTs.
	shoot := &gardencorev1beta1.Shoot{}
	require.NoError(b, env.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "shoot-00000"}, shoot))
	event := f.Measure(func() { f.Send("add", shoot) })

	// A registration changed: every seed is reconciled live, within one event's budget.
	registration := &gardencorev1beta1.ControllerRegistration{}
	require.NoError(b, env.Client.Get(ctx, client.ObjectKey{Name: f.name("always0")}, registration))
	start = time.Now()
	fanOut := f.Measure(func() { f.Send("update", registration) })
	fanOutTime := time.Since(start)

	// Reported after the loop: b.Loop resets the metrics reported before it.
	b.ReportMetric(float64(convergeTime.Milliseconds()), "converge-ms")
	b.ReportMetric(float64(fanOutTime.Milliseconds()), "registration-event-ms")
	b.ReportMetric(float64(fanOut["list"]), "registration-event-list")
	b.ReportMetric(float64(fanOut["get"]), "registration-event-get")
	for _, verb := range []string{"list", "get", "create", "patch", "delete"} {
		b.ReportMetric(float64(converge[verb]), "converge-"+verb)
		b.ReportMetric(float64(event[verb]), "event-"+verb)
	}
	for verb, n := range steady {
		b.ReportMetric(n, verb+"/sweep")
	}
}
