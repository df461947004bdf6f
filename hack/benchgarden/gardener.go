package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/gardener-knative/gardener-knative/hack/internal/benchkit"
)

// gcmProcess is Gardener's side: one gardener-controller-manager, as a runtime cluster runs it.
const gcmProcess = "gardener-controller-manager"

// gcmConfig is Gardener's component configuration: its defaults, with leader election off (one
// replica), its servers on free ports, and the event controller's TTL of non-Shoot Events set as
// ours is (both leave it off by default).
const gcmConfig = `apiVersion: controllermanager.config.gardener.cloud/v1alpha1
kind: ControllerManagerConfiguration
gardenClientConnection:
  kubeconfig: %s
controllers:
  event:
    ttlNonShootEvents: 1h
leaderElection:
  leaderElect: false
logLevel: info
logFormat: json
server:
  healthProbes:
    bindAddress: 127.0.0.1
    port: %d
  metrics:
    bindAddress: 127.0.0.1
    port: %d
`

// startGardener starts gardener-controller-manager, reading the garden through a proxy.
func (r *run) startGardener(ctx context.Context) (*side, error) {
	s := &side{proxies: map[string]*benchkit.APIProxy{}, cgroups: map[string]*benchkit.MemoryCgroup{}, metrics: map[string]string{}}
	kubeconfig, err := r.proxied(s, gcmProcess)
	if err != nil {
		return nil, err
	}
	ports, err := benchkit.FreePorts(2)
	if err != nil {
		s.stop()
		return nil, err
	}
	config := filepath.Join(r.dir, "gardener-controller-manager.yaml")
	if err := os.WriteFile(config, fmt.Appendf(nil, gcmConfig, kubeconfig, ports[0], ports[1]), 0o600); err != nil {
		s.stop()
		return nil, err
	}
	cmd := exec.Command(r.opts.peer, "--config="+config)
	p, err := benchkit.Start(gcmProcess, cmd, filepath.Join(r.dir, "gardener-controller-manager.log"))
	if err != nil {
		s.stop()
		return nil, err
	}
	s.procs = append(s.procs, p)
	if err := p.WaitReady(ctx, "http://127.0.0.1:"+strconv.Itoa(ports[0])+"/readyz", 5*time.Minute); err != nil {
		s.stop()
		return nil, err
	}
	if err := r.supervised(s, p, ""); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// measureGardener runs Gardener's side: start (its caches' LISTs), warm-up, the window.
func (r *run) measureGardener(ctx context.Context) (res sideResult, err error) {
	r.side = "gardener"
	s, err := r.startGardener(ctx)
	if err != nil {
		return res, err
	}
	defer s.stop()
	if res, err = r.measureWindow(ctx, s, func() {}); err != nil {
		return res, err
	}
	if res.peaks, res.oomKills, err = peaksAndKills(s); err != nil {
		return res, err
	}
	res.perHour = perHour(res, r.opts.window)
	return res, nil
}
