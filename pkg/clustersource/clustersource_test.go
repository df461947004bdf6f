package clustersource

import (
	"os"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The adapters are read from both modes' configurations, with their field selectors; one that
// names namespaces is refused, since a watcher watches every namespace, as is a field selector
// that refers to a variable Kubernetes did not expand.
func TestAdapterEnvs(t *testing.T) {
	t.Setenv("NAME", "target-clusters")
	t.Setenv(ResourcesConfigEnv, `{"allNamespaces":true,"resources":[{"gvr":{"Group":"","Version":"v1","Resource":"namespaces"}}],"mode":"Resource"}`)
	t.Setenv(ReferencesConfigEnv, `{"allNamespaces":true,"resources":[{"gvr":{"Group":"","Version":"v1","Resource":"secrets"}}],"mode":"Reference"}`)
	adapters, err := AdapterEnvs()
	require.NoError(t, err)
	require.Len(t, adapters, 2)
	assert.Equal(t, "namespaces", adapters[0].Config.Resources[0].GVR.Resource)
	assert.Equal(t, "Resource", adapters[0].Config.EventMode)
	assert.Equal(t, "secrets", adapters[1].Config.Resources[0].GVR.Resource)
	assert.Equal(t, "Reference", adapters[1].Config.EventMode)
	assert.Equal(t, "target-clusters", adapters[1].Env.GetName())

	t.Setenv(ResourcesConfigEnv, `{"allNamespaces":true,"resources":[{"gvr":{"Group":"core.gardener.cloud","Version":"v1beta1","Resource":"controllerinstallations"},"fieldSelector":"spec.seedRef.name=a"}],"mode":"Resource"}`)
	adapters, err = AdapterEnvs()
	require.NoError(t, err)
	assert.Equal(t, "spec.seedRef.name=a", adapters[0].Config.Resources[0].FieldSelector)
	t.Setenv(ResourcesConfigEnv, `{"allNamespaces":true,"resources":[{"gvr":{"Group":"core.gardener.cloud","Version":"v1beta1","Resource":"controllerinstallations"},"fieldSelector":"spec.seedRef.name=$(SEED_NAME)"}],"mode":"Resource"}`)
	_, err = AdapterEnvs()
	assert.ErrorContains(t, err, "refers to a variable the container does not have", "a selector Kubernetes did not expand would select nothing")
	t.Setenv(ResourcesConfigEnv, "")

	t.Setenv(ReferencesConfigEnv, `{"namespaces":["garden"],"resources":[{"gvr":{"Group":"","Version":"v1","Resource":"secrets"}}],"mode":"Reference"}`)
	_, err = AdapterEnvs()
	assert.ErrorContains(t, err, "must watch all namespaces")
}

// A cluster source collects at GCPercent, unless its environment sets GOGC.
func TestSetGCPercent(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })

	t.Setenv("GOGC", "")
	require.NoError(t, os.Unsetenv("GOGC"))
	SetGCPercent()
	assert.Equal(t, GCPercent, debug.SetGCPercent(100), "no GOGC in the environment")

	t.Setenv("GOGC", "200")
	SetGCPercent()
	assert.Equal(t, 100, debug.SetGCPercent(100), "the environment's GOGC is left as the runtime read it")
}
