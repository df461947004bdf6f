package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/gardener-knative/gardener-knative/functions"
	"github.com/gardener-knative/gardener-knative/hack/internal/benchkit"
	"github.com/gardener-knative/gardener-knative/pkg/configgen"
	"github.com/gardener-knative/gardener-knative/pkg/function"
)

// perSeedFunctions are the per-seed deployment's functions, as config/ deploys them: every
// function of the registry deployed per seed (GRM's controllers that serve the shoots of a seed,
// and the one that keeps their registrations' CA bundles).
var perSeedFunctions = func() []string {
	var names []string
	for _, fn := range functions.All {
		if fn.DeploymentMode() == function.PerSeed {
			names = append(names, fn.Name)
		}
	}
	return names
}()

// periodic are the PingSources of the sweeps whose period the benchmark sets (-period): the
// ManagedResource controller's sync and the health controller's. The others keep the shoot
// role's schedules, as Gardener's keep gardenlet's.
var periodic = []string{"managedresource-sync", "health-health", "health-progressing"}

// webhookServer is our resource manager's webhook server, served per seed too.
const webhookServer = "resource-manager"

// Our processes reach the seed as these users (the audit log tells them apart); at the shoots
// they are the shoot's resource manager's ServiceAccount, whose token gardenlet keeps in the
// tenant's access Secret.
const (
	oursSeedUser   = "gardener-knative"
	oursSourceUser = "gardener-knative-source"
	oursShootUser  = "system:serviceaccount:kube-system:gardener-resource-manager"
)

// buildOurs builds the per-seed functions and the webhook server into dir, as ko builds them.
func buildOurs(ctx context.Context, dir string) error {
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", dir+string(filepath.Separator))
	for _, name := range perSeedFunctions {
		build.Args = append(build.Args, configgen.ModulePath+"/functions/"+name)
	}
	build.Args = append(build.Args, configgen.ModulePath+"/webhooks/"+webhookServer)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %w\n%s", err, out)
	}
	return nil
}

// startOurs starts the per-seed deployment as processes: each function, the webhook server and
// the event plumbing (the Broker and the seed's cluster source, this program run as a process
// of its own for each), with the sync period for every sweep that has one.
func (r *run) startOurs(ctx context.Context) ([]*benchkit.Process, error) {
	var procs []*benchkit.Process
	fail := func(err error) ([]*benchkit.Process, error) {
		for _, p := range procs {
			p.Stop()
		}
		return nil, err
	}
	seedKubeconfig := filepath.Join(r.dir, "ours-seed-kubeconfig")
	if err := r.seedKubeconfig(oursSeedUser, seedKubeconfig); err != nil {
		return nil, err
	}
	sinks := map[string]string{}
	for _, name := range perSeedFunctions {
		port, err := benchkit.FreePort()
		if err != nil {
			return fail(err)
		}
		cmd := exec.Command(filepath.Join(r.opts.binDir, name))
		cmd.Env = append(r.oursEnviron(), "PORT="+strconv.Itoa(port), "KUBECONFIG="+seedKubeconfig, "MULTI_TENANT=true", "LOG_LEVEL=warn", "ENABLE_PROFILING=true",
			"MANAGED_RESOURCE_SYNC_PERIOD="+r.opts.period.String(), "HEALTH_SYNC_PERIOD="+r.opts.period.String())
		p, err := benchkit.Start(name, cmd, filepath.Join(r.dir, "ours-"+name+".log"))
		if err != nil {
			return fail(err)
		}
		procs = append(procs, p)
		url := "http://127.0.0.1:" + strconv.Itoa(port)
		if r.functionURLs == nil {
			r.functionURLs = map[string]string{}
		}
		r.functionURLs[name] = url
		r.profile(name, url)
		if err := p.WaitReady(ctx, url+"/readyz", time.Minute); err != nil {
			return fail(err)
		}
		front, err := benchkit.QueueProxy(url, configgen.FunctionContainerConcurrency)
		if err != nil {
			return fail(err)
		}
		r.fronts = append(r.fronts, front)
		sinks[name] = "http://" + front.Addr
	}

	serving := &envtest.WebhookInstallOptions{LocalServingHost: "127.0.0.1"}
	if err := serving.PrepWithoutInstalling(); err != nil {
		return fail(err)
	}
	cmd := exec.Command(filepath.Join(r.opts.binDir, webhookServer))
	cmd.Env = append(r.oursEnviron(), "PORT="+strconv.Itoa(serving.LocalServingPort), "KUBECONFIG="+seedKubeconfig, "MULTI_TENANT=true", "LOG_LEVEL=warn",
		"TLS_CERT_FILE="+filepath.Join(serving.LocalServingCertDir, "tls.crt"), "TLS_KEY_FILE="+filepath.Join(serving.LocalServingCertDir, "tls.key"))
	p, err := benchkit.Start(webhooksProcess, cmd, filepath.Join(r.dir, "ours-webhooks.log"))
	if err != nil {
		return fail(err)
	}
	procs = append(procs, p)

	self, err := os.Executable()
	if err != nil {
		return fail(err)
	}
	brokerPort, err := benchkit.FreePort()
	if err != nil {
		return fail(err)
	}
	brokerAddr := "127.0.0.1:" + strconv.Itoa(brokerPort)
	brokerDebug, err := r.debugAddr(brokerProcess)
	if err != nil {
		return fail(err)
	}
	spec, err := json.Marshal(benchkit.BrokerSpec{Functions: perSeedFunctions, Mode: function.PerSeed, Sinks: sinks, Addr: brokerAddr, Debug: brokerDebug})
	if err != nil {
		return fail(err)
	}
	cmd = exec.Command(self)
	cmd.Env = append(os.Environ(), benchkit.ProfileRate, benchkit.BrokerRoleEnv+"="+string(spec))
	p, err = benchkit.Start(brokerProcess, cmd, filepath.Join(r.dir, "ours-broker.log"))
	if err != nil {
		return fail(err)
	}
	procs = append(procs, p)
	if err := p.WaitReady(ctx, "http://"+brokerAddr+benchkit.BrokerHealthPath, time.Minute); err != nil {
		return fail(err)
	}

	sourceKubeconfig := filepath.Join(r.dir, "ours-source-kubeconfig")
	if err := r.seedKubeconfig(oursSourceUser, sourceKubeconfig); err != nil {
		return fail(err)
	}
	schedules := map[string]string{}
	for _, name := range periodic {
		schedules[name] = function.ScheduleEvery(r.opts.period)
	}
	sourceDebug, err := r.debugAddr(sourceProcess)
	if err != nil {
		return fail(err)
	}
	spec, err = json.Marshal(benchkit.SourceSpec{Functions: perSeedFunctions, Mode: function.PerSeed, Tenants: true, Broker: "http://" + brokerAddr, Schedules: schedules, Debug: sourceDebug})
	if err != nil {
		return fail(err)
	}
	cmd = exec.Command(self)
	cmd.Env = append(r.oursEnviron(), benchkit.SourceRoleEnv+"="+string(spec), "KUBECONFIG="+sourceKubeconfig)
	p, err = benchkit.Start(sourceProcess, cmd, filepath.Join(r.dir, "ours-source.log"))
	if err != nil {
		return fail(err)
	}
	procs = append(procs, p)
	return procs, nil
}

// The names of our processes in the figures besides the functions': the webhook server, and the
// event plumbing's two, as in a cluster: the source (the cluster sources' watchers and the
// PingSources, one pod per seed) and the Broker (Knative's, shared by every function; here
// pkg/localsources' stand-in).
const (
	webhooksProcess = "webhooks"
	sourceProcess   = "source"
	brokerProcess   = "broker"
)

// servingProcesses are our processes that serve the shoots: the functions and the webhook server.
func servingProcesses() []string {
	return append(append([]string{}, perSeedFunctions...), webhooksProcess)
}

// profiledProcesses are the processes whose heap is profiled: the functions and the plumbing
// (the webhook server serves only TLS here, and its heap does not grow with shoots).
func profiledProcesses() []string {
	return append(append([]string{}, perSeedFunctions...), sourceProcess, brokerProcess)
}

// oursEnviron is the environment every process of ours starts from.
func (r *run) oursEnviron() []string {
	return append(append(os.Environ(), benchkit.ProfileRate), r.opts.oursEnv...)
}

// profile records where process name serves Go's profiles.
func (r *run) profile(name, url string) {
	if r.profileURLs == nil {
		r.profileURLs = map[string]string{}
	}
	r.profileURLs[name] = url
}

// debugAddr is a loopback address for a plumbing process's profiles, recorded for it.
func (r *run) debugAddr(name string) (string, error) {
	port, err := benchkit.FreePort()
	if err != nil {
		return "", err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	r.profile(name, "http://"+addr)
	return addr, nil
}
