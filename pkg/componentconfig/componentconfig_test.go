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

// A file written to the specification works: its keys where Gardener v1.150 names them otherwise
// (tokenValidator, controllers.node.backoff, the connections' single namespace) are honoured,
// reported as renamed, and not as unknown; v1.150's own key wins where a file sets both.
func TestResourceManagerSpecificationKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`apiVersion: resourcemanager.config.gardener.cloud/v1alpha1
kind: ResourceManagerConfiguration
sourceClientConnection:
  namespace: shoot--p--s
targetClientConnection:
  namespace: kube-system
controllers:
  tokenValidator:
    enabled: true
  node:
    backoff: 30s
webhooks:
  tokenValidator:
    enabled: true
`), 0o600))
	file, err := ResourceManager(path)
	require.NoError(t, err)
	assert.Empty(t, file.Unknown)
	assert.True(t, file.Extensions.Controllers.TokenInvalidator.Enabled)
	assert.True(t, file.Extensions.Webhooks.TokenInvalidator.Enabled)
	require.NotNil(t, file.Controllers.NodeCriticalComponents.Backoff)
	assert.Equal(t, "30s", file.Controllers.NodeCriticalComponents.Backoff.Duration.String())
	assert.Equal(t, []string{"shoot--p--s"}, file.SourceClientConnection.Namespaces)
	require.NotNil(t, file.TargetClientConnection)
	assert.Equal(t, []string{"kube-system"}, file.TargetClientConnection.Namespaces)
	assert.Len(t, file.Renamed, 5)

	require.NoError(t, os.WriteFile(path, []byte(`apiVersion: resourcemanager.config.gardener.cloud/v1alpha1
kind: ResourceManagerConfiguration
controllers:
  node:
    backoff: 30s
  nodeCriticalComponents:
    backoff: 5s
`), 0o600))
	file, err = ResourceManager(path)
	require.NoError(t, err)
	assert.Equal(t, "5s", file.Controllers.NodeCriticalComponents.Backoff.Duration.String())
}
