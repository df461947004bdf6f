package webhook

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type testSettings struct {
	Host string `envconfig:"CONFIGURED_TEST_HOST"`
}

// Settings come from the defaults (the component configuration), the environment wins over
// them, and With fixes them whatever the environment says.
func TestConfigured(t *testing.T) {
	var built []string
	c := Configured[testSettings]{
		Name:     "test",
		Defaults: func(Deps) testSettings { return testSettings{Host: "from-config"} },
		Build: func(_ Deps, s testSettings) (Webhook, error) {
			built = append(built, s.Host)
			return Webhook{Name: "test"}, nil
		},
	}
	_, err := c.Constructor().New(Deps{})
	require.NoError(t, err)
	t.Setenv("CONFIGURED_TEST_HOST", "from-env")
	_, err = c.Constructor().New(Deps{})
	require.NoError(t, err)
	_, err = c.With(testSettings{Host: "fixed"}).New(Deps{})
	require.NoError(t, err)
	assert.Equal(t, []string{"from-config", "from-env", "fixed"}, built)
}
