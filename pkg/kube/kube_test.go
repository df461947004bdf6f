package kube

import (
	"testing"

	"github.com/kelseyhightower/envconfig"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefaultRateIsTheConfigs(t *testing.T) {
	var c ClientConfig
	// A prefix no variable has: only the tags' defaults apply.
	require.NoError(t, envconfig.Process("kube_default_rate_test", &c))
	assert.Equal(t, float32(DefaultQPS), c.QPS)
	assert.Equal(t, DefaultBurst, c.Burst)
}
