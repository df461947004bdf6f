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

	"github.com/robfig/cron/v3"
	"k8s.io/apimachinery/pkg/api/resource"
	sourcesv1 "knative.dev/eventing/pkg/apis/sources/v1"

	"github.com/gardener-knative/gardener-knative/functions"
	"github.com/gardener-knative/gardener-knative/hack/internal/benchkit"
	"github.com/gardener-knative/gardener-knative/pkg/configgen"
	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/sources"
)

// runtimeFunctions are the functions config/runtime/ deploys: every function of the registry in
// the runtime part (GCM's controllers, and gardener-operator's the project runs there).
var runtimeFunctions = func() []string {
	var names []string
	for _, fn := range functions.All {
		for _, p := range fn.Parts {
			if p == function.Runtime {
				names = append(names, fn.Name)
			}
		}
	}
	return names
}()

// The names of our processes besides the functions': the event plumbing's two, as in a cluster:
// the source (the garden's cluster source and the PingSources, one pod) and the Broker
// (Knative's; here pkg/localsources' stand-in with Knative's filter code).
const (
	sourceProcess = "source"
	brokerProcess = "broker"
)

// buildOurs builds the runtime functions into dir, as ko builds them.
func buildOurs(ctx context.Context, dir string) error {
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", dir+string(filepath.Separator))
	for _, name := range runtimeFunctions {
		build.Args = append(build.Args, configgen.ModulePath+"/functions/"+name)
	}
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %w\n%s", err, out)
	}
	return nil
}

// longPeriod is where a sweep's period is too long to fall into the window: such sweeps are
// fired once each, apart, and their cost is counted per hour by their period.
const longPeriod = time.Hour

// sweepSchedule is one PingSource of ours.
type sweepSchedule struct {
	function, sweep, name string
	period                time.Duration
}

// schedules are the PingSources of the runtime functions as config/ deploys them, with their
// periods.
func schedules() ([]sweepSchedule, error) {
	fns, err := benchkit.Declarations(runtimeFunctions)
	if err != nil {
		return nil, err
	}
	objs, err := sources.ObjectsFor(fns, function.PerSeed, sources.DefaultPlumbing())
	if err != nil {
		return nil, err
	}
	parser := cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)
	var out []sweepSchedule
	for _, o := range objs {
		ping, ok := o.(*sourcesv1.PingSource)
		if !ok {
			continue
		}
		schedule, err := parser.Parse(ping.Spec.Schedule)
		if err != nil {
			return nil, fmt.Errorf("PingSource %s: %w", ping.Name, err)
		}
		// The period: between two activations a day from now (cron schedules are periodic).
		first := schedule.Next(time.Now().Add(24 * time.Hour))
		var sweep struct {
			Sweep string `json:"sweep"`
		}
		if err := json.Unmarshal([]byte(ping.Spec.Data), &sweep); err != nil {
			return nil, err
		}
		out = append(out, sweepSchedule{function: ping.Spec.CloudEventOverrides.Extensions[sources.FunctionExtension], sweep: sweep.Sweep, name: ping.Name,
			period: schedule.Next(first).Sub(first)})
	}
	return out, nil
}

// functionSettings are what config/ leaves to the operator and the benchmark sets on both sides
// alike: the event function's TTL of non-Shoot Events (off by default in both).
var functionSettings = map[string][]string{"event": {"EVENT_TTL_NON_SHOOT_EVENTS=1h"}}

// never is a schedule that does not fire within a run: the long sweeps are fired explicitly.
const never = "0 0 0 1 1 *"

// side is one side's running processes, each reading the garden through a proxy of its own.
type side struct {
	procs   []*benchkit.Process
	proxies map[string]*benchkit.APIProxy
	cgroups map[string]*benchkit.MemoryCgroup
	// metrics are our functions' own addresses (their /metrics); broker is the Broker's URL.
	metrics map[string]string
	broker  string
	fronts  []interface{ Close() error }
}

func (s *side) stop() {
	for i := len(s.procs) - 1; i >= 0; i-- {
		s.procs[i].Stop()
	}
	for _, f := range s.fronts {
		_ = f.Close()
	}
	for _, p := range s.proxies {
		_ = p.Close()
	}
	for _, g := range s.cgroups {
		_ = g.Remove()
	}
}

// counts are the requests and bytes every process of the side read so far, by process.
func (s *side) counts() map[string]benchkit.Counts {
	out := map[string]benchkit.Counts{}
	for name, p := range s.proxies {
		out[name] = p.Counts()
	}
	return out
}

// proxied starts a proxy to the garden for process name and writes its kubeconfig.
func (r *run) proxied(s *side, name string) (string, error) {
	proxy, err := benchkit.StartAPIProxy(r.garden.Config)
	if err != nil {
		return "", err
	}
	s.proxies[name] = proxy
	path := filepath.Join(r.dir, name+"-kubeconfig")
	return path, proxy.Kubeconfig(path)
}

// supervised restarts p whenever it exits, as the kubelet restarts a container, held to limit
// (if set) in a memory cgroup as config/ holds its pod; without a writable cgroup controller the
// run goes on without limits and says so once.
func (r *run) supervised(s *side, p *benchkit.Process, limit string) error {
	if limit == "" {
		return p.Supervise(func(int) error { return nil })
	}
	quantity := resource.MustParse(limit)
	g, err := benchkit.NewMemoryCgroup(r.side+"-"+p.Name, quantity.Value())
	if err != nil {
		if !r.warnedCgroup {
			fmt.Fprintf(r.log, "bench-garden: no memory limits (%v)\n", err)
			r.warnedCgroup = true
		}
		return p.Supervise(func(int) error { return nil })
	}
	s.cgroups[p.Name] = g
	return p.Supervise(g.Add)
}

// startOurs starts every runtime function, the Broker and the source as processes, the long
// sweeps' schedules set to never (they are fired explicitly).
func (r *run) startOurs(ctx context.Context, long []sweepSchedule) (*side, error) {
	s := &side{proxies: map[string]*benchkit.APIProxy{}, cgroups: map[string]*benchkit.MemoryCgroup{}, metrics: map[string]string{}}
	fail := func(err error) (*side, error) {
		s.stop()
		return nil, err
	}
	sinks := map[string]string{}
	for _, name := range runtimeFunctions {
		kubeconfig, err := r.proxied(s, name)
		if err != nil {
			return fail(err)
		}
		port, err := benchkit.FreePort()
		if err != nil {
			return fail(err)
		}
		cmd := exec.Command(filepath.Join(r.opts.binDir, name))
		cmd.Env = append(os.Environ(), benchkit.ProfileRate, "PORT="+strconv.Itoa(port), "KUBECONFIG="+kubeconfig,
			"LOG_LEVEL=warn", "POD_NAME="+name, function.NamespaceEnv+"="+function.Runtime.Namespace())
		if fn, _ := functions.ByName(name); fn.WorksOnGarden {
			// The garden is the runtime cluster here, as config/ gives the part's garden access.
			cmd.Env = append(cmd.Env, "GARDEN_KUBECONFIG="+kubeconfig)
		}
		cmd.Env = append(cmd.Env, functionSettings[name]...)
		cmd.Env = append(cmd.Env, r.opts.oursEnv...)
		p, err := benchkit.Start(name, cmd, filepath.Join(r.dir, "ours-"+name+".log"))
		if err != nil {
			return fail(err)
		}
		s.procs = append(s.procs, p)
		if err := r.supervised(s, p, configgen.FunctionMemoryLimit); err != nil {
			return fail(err)
		}
		url := "http://127.0.0.1:" + strconv.Itoa(port)
		s.metrics[name] = url + "/metrics"
		if err := p.WaitReady(ctx, url+"/readyz", time.Minute); err != nil {
			return fail(err)
		}
		front, err := benchkit.QueueProxy(url, configgen.FunctionContainerConcurrency)
		if err != nil {
			return fail(err)
		}
		s.fronts = append(s.fronts, front)
		sinks[name] = "http://" + front.Addr
	}

	self, err := os.Executable()
	if err != nil {
		return fail(err)
	}
	brokerPort, err := benchkit.FreePort()
	if err != nil {
		return fail(err)
	}
	brokerAddr := "127.0.0.1:" + strconv.Itoa(brokerPort)
	debug, err := benchkit.FreePort()
	if err != nil {
		return fail(err)
	}
	spec, err := json.Marshal(benchkit.BrokerSpec{Functions: runtimeFunctions, Mode: function.PerSeed, Sinks: sinks, Addr: brokerAddr, Debug: "127.0.0.1:" + strconv.Itoa(debug)})
	if err != nil {
		return fail(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), benchkit.ProfileRate, benchkit.BrokerRoleEnv+"="+string(spec))
	p, err := benchkit.Start(brokerProcess, cmd, filepath.Join(r.dir, "ours-broker.log"))
	if err != nil {
		return fail(err)
	}
	s.procs = append(s.procs, p)
	if err := r.supervised(s, p, ""); err != nil {
		return fail(err)
	}
	s.broker = "http://" + brokerAddr
	if err := p.WaitReady(ctx, s.broker+benchkit.BrokerHealthPath, time.Minute); err != nil {
		return fail(err)
	}

	overrides := map[string]string{}
	for _, sw := range long {
		overrides[sw.name] = never
	}
	kubeconfig, err := r.proxied(s, sourceProcess)
	if err != nil {
		return fail(err)
	}
	if debug, err = benchkit.FreePort(); err != nil {
		return fail(err)
	}
	spec, err = json.Marshal(benchkit.SourceSpec{Functions: runtimeFunctions, Mode: function.PerSeed, Broker: s.broker, Schedules: overrides, Debug: "127.0.0.1:" + strconv.Itoa(debug)})
	if err != nil {
		return fail(err)
	}
	cmd = exec.Command(self)
	cmd.Env = append(os.Environ(), benchkit.ProfileRate, benchkit.SourceRoleEnv+"="+string(spec), "KUBECONFIG="+kubeconfig)
	cmd.Env = append(cmd.Env, r.opts.oursEnv...)
	if p, err = benchkit.Start(sourceProcess, cmd, filepath.Join(r.dir, "ours-source.log")); err != nil {
		return fail(err)
	}
	s.procs = append(s.procs, p)
	if err := r.supervised(s, p, ""); err != nil {
		return fail(err)
	}
	return s, nil
}

// fire sends the Broker the tick of sweep sw, as its PingSource would.
func fire(ctx context.Context, broker string, sw sweepSchedule) error {
	return benchkit.SendPing(ctx, broker, sourcesv1.PingSourceSource(sources.Namespace, sw.name), sources.FunctionExtension, sw.function, sources.PingData(sw.sweep))
}
