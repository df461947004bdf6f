package componentconfig

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The TokenInvalidator's keys (v1.113's, gone from v1.150's type) are read, not reported as
// unknown; a field nobody knows still is.
func TestResourceManagerTokenInvalidatorKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`apiVersion: resourcemanager.config.gardener.cloud/v1alpha1
kind: ResourceManagerConfiguration
controllers:
  tokenInvalidator:
    enabled: true
    concurrentSyncs: 5
  tokenRequestor:
    enabled: true
  frobnicator:
    enabled: true
webhooks:
  tokenInvalidator:
    enabled: true
`), 0o600))
	file, err := ResourceManager(path)
	require.NoError(t, err)
	assert.True(t, file.Extensions.Controllers.TokenInvalidator.Enabled)
	assert.True(t, file.Extensions.Webhooks.TokenInvalidator.Enabled)
	assert.True(t, file.Controllers.TokenRequestor.Enabled)
	require.Len(t, file.Unknown, 1)
	assert.Contains(t, file.Unknown[0], "controllers.frobnicator")
}
