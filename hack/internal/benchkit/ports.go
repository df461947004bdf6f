package benchkit

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

// Ports for the processes the benchmark starts come from below the kernel's ephemeral range
// (net.ipv4.ip_local_port_range), never from a listen on port 0, which hands out a port of that
// range: every outgoing connection takes its local port from there too, and with 50 shoots'
// connections opening, one took a resource manager's health-probe port between the moment it was
// found free and the moment the manager, started with 49 others, bound it, which ended the run.
// Below the range only listeners take ports, and this program picks its own ones in turn, never
// the same twice.

// lowestPort is where the benchmark's ports begin, above the ports services usually listen on.
const lowestPort = 20000

var nextPort = struct {
	sync.Mutex
	next int
}{next: lowestPort}

// FreePorts returns n distinct loopback ports that were free a moment ago and that no outgoing
// connection will take.
func FreePorts(n int) ([]int, error) {
	ephemeral, err := ephemeralPortsFrom()
	if err != nil {
		return nil, err
	}
	if ephemeral <= lowestPort {
		// A kernel whose ephemeral range leaves no room below it: ports as tests take them.
		return testenv.FreeLoopbackPorts(n)
	}
	nextPort.Lock()
	defer nextPort.Unlock()
	found := make([]int, 0, n)
	for ; len(found) < n && nextPort.next < ephemeral; nextPort.next++ {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(nextPort.next)))
		if err != nil {
			continue // another process's listener
		}
		if err := l.Close(); err != nil {
			return nil, err
		}
		found = append(found, nextPort.next)
	}
	if len(found) < n {
		return nil, fmt.Errorf("no %d free ports left between %d and the ephemeral range from %d", n, lowestPort, ephemeral)
	}
	return found, nil
}

func FreePort() (int, error) {
	found, err := FreePorts(1)
	if err != nil {
		return 0, err
	}
	return found[0], nil
}

// ephemeralPortsFrom is the first port of the kernel's ephemeral range.
func ephemeralPortsFrom() (int, error) {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, fmt.Errorf("the ephemeral port range: %w", err)
	}
	fields := strings.Fields(string(data))
	if len(fields) != 2 {
		return 0, fmt.Errorf("the ephemeral port range: %q", data)
	}
	return strconv.Atoi(fields[0])
}
