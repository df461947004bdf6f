package benchkit

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The benchmark's ports are distinct, free and below the ephemeral range, where no outgoing
// connection takes them.
func TestFreePortsAreBelowTheEphemeralRange(t *testing.T) {
	ephemeral, err := ephemeralPortsFrom()
	require.NoError(t, err)
	// Another process's listener, say, on the port the next one would be: whatever this package
	// handed out before this test.
	nextPort.Lock()
	held := nextPort.next + 1
	nextPort.Unlock()
	if taken, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(held)); err == nil {
		t.Cleanup(func() { _ = taken.Close() })
	}
	first, err := FreePorts(3)
	require.NoError(t, err)
	second, err := FreePorts(2)
	require.NoError(t, err)
	seen := map[int]bool{}
	for _, p := range append(first, second...) {
		assert.False(t, seen[p], "port %d handed out twice", p)
		seen[p] = true
		assert.GreaterOrEqual(t, p, lowestPort)
		assert.Less(t, p, ephemeral, "below the ephemeral range")
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		require.NoError(t, err, "port %d is free", p)
		require.NoError(t, l.Close())
	}
	assert.NotContains(t, seen, held, "a port another listener holds is skipped")
}
