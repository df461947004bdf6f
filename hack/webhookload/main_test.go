package main

import (
	"bytes"
	"strings"
	"testing"

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
