package testenv

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWebhookManifests(t *testing.T) {
	manifests, err := WebhookManifests("../../config")
	require.NoError(t, err)
	assert.Equal(t, "../../config/seed/grm-webhooks.yaml", manifests["projected-token-mount"])
	assert.Equal(t, "../../config/seed/grm-webhooks.yaml", manifests["node-agent-authorizer"])
	assert.Equal(t, "../../config/runtime/webhook-extension-registration.yaml", manifests["extension-registration"])
	objects, err := ManifestRBAC(manifests["extension-registration"])
	require.NoError(t, err)
	user, err := ServiceAccountUser(objects)
	require.NoError(t, err)
	assert.Equal(t, "system:serviceaccount:gardener-knative-runtime:extension-registration", user)
}
