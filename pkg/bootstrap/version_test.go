package bootstrap

import (
	"context"
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// `<binary> --version` prints the component and the version it was built with, and runs nothing.
func TestMainPrintsItsVersion(t *testing.T) {
	args, stdout := os.Args, os.Stdout
	t.Cleanup(func() { os.Args, os.Stdout = args, stdout })
	read, write, err := os.Pipe()
	require.NoError(t, err)
	os.Args, os.Stdout = []string{"project", "--version"}, write

	Main("function project", func(context.Context) error {
		t.Error("--version ran the process")
		return nil
	})
	require.NoError(t, write.Close())
	printed, err := io.ReadAll(read)
	require.NoError(t, err)
	assert.Equal(t, "function project "+Version+"\n", string(printed))
	assert.Equal(t, "devel", Version, "a build without ko.yaml's ldflags")
}
