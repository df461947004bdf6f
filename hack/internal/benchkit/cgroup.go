package benchkit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// MemoryCgroup holds one process to a memory limit, as a container's limit holds a pod: the
// kernel reclaims and, past the limit, kills the process (an OOM kill, which the run reports).
// It uses cgroup v1's memory controller or cgroup v2, whichever the machine mounts writable.
type MemoryCgroup struct {
	dir string
	v2  bool
}

// cgroupParent is where the benchmarks' cgroups are made, one per process.
const cgroupParent = "gardener-knative-bench"

// NewMemoryCgroup makes the cgroup name with limit bytes; an error when the machine gives this
// program no writable memory controller (the benchmark then runs without limits and says so).
func NewMemoryCgroup(name string, limit int64) (*MemoryCgroup, error) {
	candidates := []struct {
		root string
		v2   bool
	}{{"/sys/fs/cgroup/memory", false}, {"/sys/fs/cgroup", true}}
	for _, c := range candidates {
		if c.v2 {
			if _, err := os.Stat(filepath.Join(c.root, "cgroup.controllers")); err != nil {
				continue
			}
		} else if _, err := os.Stat(filepath.Join(c.root, "memory.limit_in_bytes")); err != nil {
			continue
		}
		parent := filepath.Join(c.root, cgroupParent)
		if err := os.MkdirAll(parent, 0o755); err != nil {
			continue
		}
		if c.v2 {
			// Children of the parent get the memory controller only if the parent delegates it.
			_ = os.WriteFile(filepath.Join(c.root, "cgroup.subtree_control"), []byte("+memory"), 0o644)
			_ = os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte("+memory"), 0o644)
		}
		dir := filepath.Join(parent, name)
		_ = os.Remove(dir) // a previous run's, empty
		if err := os.Mkdir(dir, 0o755); err != nil {
			return nil, err
		}
		g := &MemoryCgroup{dir: dir, v2: c.v2}
		file, value := "memory.limit_in_bytes", strconv.FormatInt(limit, 10)
		if c.v2 {
			file = "memory.max"
		}
		if err := os.WriteFile(filepath.Join(dir, file), []byte(value), 0o644); err != nil {
			_ = os.Remove(dir)
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if !c.v2 {
			// Without swap limits the kernel would swap instead of killing, where a pod has none.
			_ = os.WriteFile(filepath.Join(dir, "memory.memsw.limit_in_bytes"), []byte(value), 0o644)
		}
		return g, nil
	}
	return nil, errors.New("no writable memory cgroup controller (cgroup v1 memory or v2) on this machine")
}

// Add puts the process pid into the cgroup.
func (g *MemoryCgroup) Add(pid int) error {
	return os.WriteFile(filepath.Join(g.dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644)
}

// OOMKills is how many times the kernel killed a process of the cgroup for its limit.
func (g *MemoryCgroup) OOMKills() (int64, error) {
	file, key := "memory.oom_control", "oom_kill"
	if g.v2 {
		file = "memory.events"
	}
	data, err := os.ReadFile(filepath.Join(g.dir, file))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(data)) {
		fields := strings.Fields(line)
		if len(fields) == 2 && fields[0] == key {
			return strconv.ParseInt(fields[1], 10, 64)
		}
	}
	return 0, nil // a kernel that does not count them
}

// Remove removes the cgroup once its processes ended.
func (g *MemoryCgroup) Remove() error { return os.Remove(g.dir) }
