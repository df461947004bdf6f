package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gardener-knative/gardener-knative/webhooks"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMeasuresEveryWebhookOfTheServer checks that the command knows the webhooks the
// resource-manager server serves, runs on a tiny load and prints a row per webhook and mode.
// It checks no timing: the numbers are the command's output, not a test's verdict.
func TestMeasuresEveryWebhookOfTheServer(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(options{requests: 3, concurrency: 2, timeout: defaultTimeout}, &out))
	for _, c := range webhooks.All {
		rows := 0
		for line := range strings.Lines(out.String()) {
			if fields := strings.Fields(line); len(fields) > 0 && fields[0] == c.Name {
				rows++
			}
		}
		assert.Equal(t, 2, rows, "rows of %s (sequential and concurrent) in:\n%s", c.Name, out.String())
	}
}

// Every side gets n requests after its warm-up, in rounds that take turns, the first turn
// alternating between rounds.
func TestInterleavedTakesTurns(t *testing.T) {
	var order []int
	side := func(i int) func(context.Context) (time.Duration, error) {
		return func(context.Context) (time.Duration, error) {
			order = append(order, i)
			return time.Duration(len(order)), nil
		}
	}
	latencies, err := interleaved(context.Background(), []func(context.Context) (time.Duration, error){side(0), side(1)}, 3*round, 1)
	require.NoError(t, err)
	require.Len(t, latencies, 2)
	for i, l := range latencies {
		assert.Len(t, l, 3*round, "side %d", i)
		assert.True(t, slices.IsSorted(l), "side %d sorted", i)
	}
	measured := order[2*warmup:]
	var turns []int
	for i := 0; i < len(measured); i += round {
		turns = append(turns, measured[i])
	}
	assert.Equal(t, []int{0, 1, 1, 0, 0, 1}, turns, "who starts each block: side 0 then 1, then 1 then 0, ...")
}
