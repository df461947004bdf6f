package main

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
	taken, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(lowestPort+2)) // another process's listener, say
	if err == nil {
		t.Cleanup(func() { _ = taken.Close() })
	}
	first, err := freePorts(3)
	require.NoError(t, err)
	second, err := freePorts(2)
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
	assert.NotContains(t, seen, lowestPort+2, "a port another listener holds is skipped")
}
