package benchkit

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/pprof/profile"
)

// Process is one always-on process of a side: what a pod of it would be.
type Process struct {
	Name string
	Log  string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan error
	// supervised restarts the process when it exits (Supervise); stopping is set by Stop.
	supervised, stopping bool
	onStart              func(pid int) error
	restarts             int
	restartFailed        error
	// earlier are the CPU time and the peak of the processes that ran before a restart.
	earlierCPU  time.Duration
	earlierPeak int64
}

// Start runs cmd with its output in logPath.
func Start(name string, cmd *exec.Cmd, logPath string) (*Process, error) {
	p := &Process{Name: name, Log: logPath}
	if err := p.launch(cmd, os.O_CREATE|os.O_TRUNC|os.O_WRONLY); err != nil {
		return nil, err
	}
	return p, nil
}

// launch starts cmd, its output appended to the log (flags), and waits for it in the background;
// a supervised process that exits is started again, as the kubelet restarts a container.
func (p *Process) launch(cmd *exec.Cmd, flags int) error {
	logFile, err := os.OpenFile(p.Log, flags, 0o644)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return fmt.Errorf("%s: %w", p.Name, err)
	}
	exited := make(chan error, 1)
	p.mu.Lock()
	p.cmd, p.exited = cmd, exited
	onStart := p.onStart
	p.mu.Unlock()
	if onStart != nil {
		if err := onStart(cmd.Process.Pid); err != nil {
			_ = cmd.Process.Kill()
		}
	}
	go func() {
		err := cmd.Wait()
		_ = logFile.Close()
		p.mu.Lock()
		restart := p.supervised && !p.stopping
		if restart {
			p.restarts++
			if state := cmd.ProcessState; state != nil {
				p.earlierCPU += state.UserTime() + state.SystemTime()
				if usage, ok := state.SysUsage().(*syscall.Rusage); ok {
					p.earlierPeak = max(p.earlierPeak, usage.Maxrss*1024)
				}
			}
		}
		p.mu.Unlock()
		if restart {
			again := exec.Command(cmd.Path, cmd.Args[1:]...)
			again.Env, again.Dir = cmd.Env, cmd.Dir
			if err := p.launch(again, os.O_APPEND|os.O_WRONLY); err != nil {
				p.mu.Lock()
				p.restartFailed = err
				p.mu.Unlock()
			}
		}
		exited <- err
		close(exited)
	}()
	return nil
}

// Supervise restarts the process whenever it exits until Stop, running onStart (e.g. putting it
// into its memory cgroup) for it now and for each new process.
func (p *Process) Supervise(onStart func(pid int) error) error {
	p.mu.Lock()
	p.supervised, p.onStart = true, onStart
	pid := p.cmd.Process.Pid
	p.mu.Unlock()
	return onStart(pid)
}

// Restarts is how often a supervised process was started again.
func (p *Process) Restarts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.restarts
}

// WaitReady polls url until it answers 200, the process exits or timeout passes.
func (p *Process) WaitReady(ctx context.Context, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	p.mu.Lock()
	exited := p.exited
	p.mu.Unlock()
	for {
		if req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody); err == nil {
			if resp, err := readinessClient.Do(req); err == nil {
				_ = resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return nil
				}
			}
		}
		select {
		case err := <-exited:
			return fmt.Errorf("%s exited before it was ready (%v); its log ends:\n%s", p.Name, err, Tail(p.Log))
		case <-ctx.Done():
			return fmt.Errorf("%s not ready within %s; its log ends:\n%s", p.Name, timeout, Tail(p.Log))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

var readinessClient = &http.Client{Timeout: time.Second}

// saveClient waits for a profile, which a process takes after a collection.
var saveClient = &http.Client{Timeout: 30 * time.Second}

// Save writes what a process answers at url (its metrics, a profile) to path.
func Save(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return err
	}
	resp, err := saveClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// Alive says whether the process still runs; an exit is an error of the run, unless the process
// is supervised and was started again.
func (p *Process) Alive() error {
	p.mu.Lock()
	exited, supervised, failed := p.exited, p.supervised, p.restartFailed
	p.mu.Unlock()
	if failed != nil {
		return fmt.Errorf("%s exited and could not be started again: %w", p.Name, failed)
	}
	if supervised {
		return nil
	}
	select {
	case err := <-exited:
		return fmt.Errorf("%s exited (%v); its log ends:\n%s", p.Name, err, Tail(p.Log))
	default:
		return nil
	}
}

// Stop ends the process with SIGTERM, as Kubernetes ends a pod, and SIGKILL after 10 s.
func (p *Process) Stop() {
	p.mu.Lock()
	p.stopping = true
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
}

// Usage is what /proc tells of a process now: resident memory (VmRSS), its anonymous part
// (RssAnon: heap, stacks and the runtime's, without the binary's file pages), its peak (VmHWM),
// and the CPU time it used so far (user and system).
type Usage struct {
	RSS, Anon, Peak int64 // bytes
	CPU             time.Duration
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times: 100 on every Linux platform Go
// supports.
const clockTicks = 100

// Usage is the process's now, the CPU time and the peak of those before a restart included.
func (p *Process) Usage() (Usage, error) {
	p.mu.Lock()
	pid, earlierCPU, earlierPeak := p.cmd.Process.Pid, p.earlierCPU, p.earlierPeak
	p.mu.Unlock()
	u, err := usageOf(pid)
	u.CPU += earlierCPU
	u.Peak = max(u.Peak, earlierPeak)
	return u, err
}

func usageOf(pid int) (Usage, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Usage{}, err
	}
	var u Usage
	for Line := range strings.Lines(string(status)) {
		if kb, ok := strings.CutPrefix(Line, "VmRSS:"); ok {
			u.RSS = kibibytes(kb)
		}
		if kb, ok := strings.CutPrefix(Line, "RssAnon:"); ok {
			u.Anon = kibibytes(kb)
		}
		if kb, ok := strings.CutPrefix(Line, "VmHWM:"); ok {
			u.Peak = kibibytes(kb)
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Usage{}, err
	}
	// The command name, in parentheses, may hold spaces: the fields counted start after it.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(fields) < 13 {
		return Usage{}, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields))
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return Usage{}, fmt.Errorf("/proc/%d/stat: %q %q", pid, fields[11], fields[12])
	}
	u.CPU = time.Duration(utime+stime) * time.Second / clockTicks
	return u, nil
}

func kibibytes(field string) int64 {
	n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(field), " kB"), 10, 64)
	return n * 1024
}

// Tail is the end of a log, for an error message.
func Tail(path string) string {
	data, _ := os.ReadFile(path)
	return string(data[max(0, len(data)-3000):])
}

// LiveHeap is the bytes of live objects in a heap profile taken after a collection: the sum of
// its inuse_space samples.
func LiveHeap(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	index := -1
	for i, t := range p.SampleType {
		if t.Type == "inuse_space" {
			index = i
		}
	}
	if index < 0 {
		return 0, fmt.Errorf("%s: no inuse_space samples", path)
	}
	var live int64
	for _, s := range p.Sample {
		live += s.Value[index]
	}
	return live, nil
}

// Pid is the process's ID.
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd.Process.Pid
}
