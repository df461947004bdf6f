// Command landscape runs gardener-knative locally (`make run`): a kube-apiserver and etcd
// with the Gardener CRDs, every function as a local process, the cluster sources (sending
// Knative's ApiServerSource events) and Knative's PingSource runner in-process feeding them, and a
// few sample objects. It prints where the kubeconfig is and a live line of what the functions are
// doing; Ctrl-C stops it all.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gardener-knative/gardener-knative/functions"
	"github.com/gardener-knative/gardener-knative/pkg/landscape"
	"github.com/gardener-knative/gardener-knative/pkg/landscape/samples"
	"github.com/gardener-knative/gardener-knative/pkg/tenant"
	"github.com/gardener-knative/gardener-knative/sources"
	"github.com/go-logr/logr"
)

func main() {
	dir := flag.String("dir", ".landscape", "where the kubeconfig, the function binaries and their logs go")
	samples := flag.Bool("samples", true, "create sample Shoots and Bastions")
	flag.Parse()
	if err := run(*dir, *samples); err != nil {
		fmt.Fprintln(os.Stderr, "landscape:", err)
		os.Exit(1)
	}
}

func run(dir string, withSamples bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		return err
	}
	// client-go logs through klog; keep the terminal for the live line.
	klog.SetOutput(io.Discard)
	klog.LogToStderr(false)
	status := newStatus(os.Stdout)
	sourceLog, err := fileLogger(filepath.Join(dir, "logs", "sources.log"))
	if err != nil {
		return err
	}
	// controller-runtime's clients (envtest's, the landscape's own) log through its logger: to a
	// file, instead of a warning with a stack trace on the first screen.
	landscapeLog, err := os.Create(filepath.Join(dir, "logs", "landscape.log"))
	if err != nil {
		return err
	}
	defer landscapeLog.Close()
	ctrllog.SetLogger(logr.FromSlogHandler(slog.NewJSONHandler(landscapeLog, nil)))
	fmt.Println("starting kube-apiserver, etcd and the functions …")
	land, err := landscape.Start(ctx, landscape.Options{
		Dir: dir,
		FunctionOutput: func(name string) io.Writer {
			f, err := os.Create(filepath.Join(dir, "logs", name+".log"))
			if err != nil {
				return io.Discard
			}
			return f
		},
		SourceLogger: sourceLog,
		Env:          landscape.Settings,
		Webhooks:     true,
	})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Println("\nstopping …")
		if err := land.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	if withSamples {
		// Created before the sources start: the cluster sources do not replay existing objects,
		// so only the first sweep can find them, as after a cold start on a real cluster.
		if err := samples.Create(ctx, samples.Clusters{Garden: land.Env.Client, Runtime: land.Env.Client}, land.SampleChartRef); err != nil {
			return err
		}
	}
	if err := land.StartSources(ctx, demoSchedules()); err != nil {
		return err
	}

	status.headline("kubeconfig: %s", land.Kubeconfig)
	status.headline("try:        kubectl --kubeconfig %s get bastions,shoots -A", land.Kubeconfig)
	if land.Seed != nil {
		status.headline("seed:       %s (the Target of two-cluster functions; charts from the OCI registry at %s)", land.SeedKubeconfig, land.ChartRegistry.Host)
		status.headline("try:        kubectl --kubeconfig %s get secrets -l owner=helm -A  # Helm releases", land.SeedKubeconfig)
	}
	names := make([]string, 0, len(land.URLs))
	for name := range land.URLs {
		names = append(names, name)
	}
	sort.Strings(names)
	status.headline("functions:  %s (each at a local URL with /metrics; logs in %s)", strings.Join(names, ", "), filepath.Join(dir, "logs"))
	if land.WebhooksURL != "" {
		status.headline("webhooks:   GRM's webhook server at %s, both shoots enrolled with it (log in %s)", land.WebhooksURL, filepath.Join(dir, "logs", "webhooks.log"))
	}
	status.headline("Every sweep runs every 20 s here (on a cluster: its own schedule).")
	status.headline("Ctrl-C stops everything. What each function did, from its /metrics:")
	if land.Seed != nil && withSamples {
		status.lines = append(status.lines, samples.RegistrationChain{Garden: land.Env.Client, Runtime: land.Env.Client, Seed: land.Seed.Client}.Line)
	}
	if withSamples {
		status.lines = append(status.lines, samples.NetworkPolicyLine(land.Env.Client))
	}
	if land.Shoot != nil && withSamples {
		status.headline("shoot:      %s (tenant %s of the seed, the Target of GRM's functions)", land.ShootKubeconfig, landscape.Tenant)
		kubelet, err := land.Shoot.As("system:node:"+samples.NodeName, "system:nodes")
		if err != nil {
			return err
		}
		status.lines = append(status.lines, (&samples.GRM{Seed: land.Env.Client, Shoot: land.Shoot.Client}).Line,
			(&samples.ShootNodes{Shoot: land.Shoot.Client, Seed: land.Env.Client, Kubelet: kubelet}).Line)
	}
	if land.BinPackingShoot != nil && withSamples {
		status.headline("shoot:      %s (tenant %s: bin-packing, a tainted system pool, MatchLabelKeysInPodTopologySpread off)", land.BinPackingShootKubeconfig, landscape.BinPackingTenant)
		status.lines = append(status.lines, (&samples.Webhooks{Shoots: map[tenant.Name]client.Client{
			landscape.Tenant: land.Shoot.Client, landscape.BinPackingTenant: land.BinPackingShoot.Client,
		}}).Line)
	}
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-land.Exited():
			return err
		case <-ticker.C:
			status.print(land.URLs)
		}
	}
}

// demoSchedules run every sweep every 20 seconds, so that the samples show each function at
// work within a minute, whatever its schedule on a cluster (hourly, daily).
func demoSchedules() map[string]string {
	schedules := map[string]string{}
	for _, fn := range functions.All {
		for _, sw := range fn.Sweeps {
			schedules[sources.PingSourceName(fn.Name, sw.Name)] = "*/20 * * * * *"
		}
	}
	return schedules
}

func fileLogger(path string) (*zap.SugaredLogger, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	core := zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(f), zap.InfoLevel)
	return zap.New(core).Sugar(), nil
}
