// Package componentconfig reads Gardener's own component configuration files
// (controllermanager.config.gardener.cloud, resourcemanager.config.gardener.cloud), so that
// operators can bring the files they already have. Gardener's defaults are applied to them.
package componentconfig

import (
	"fmt"
	"os"

	cmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/controllermanager/v1alpha1"
	rmv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

var (
	configScheme = runtime.NewScheme()
	// Strict: a misspelt field in a configuration file is an error, not a silent default.
	codecs = serializer.NewCodecFactory(configScheme, serializer.EnableStrict)
)

func init() {
	utilruntime.Must(cmv1alpha1.AddToScheme(configScheme))
	utilruntime.Must(rmv1alpha1.AddToScheme(configScheme))
}

// ControllerManager reads the ControllerManagerConfiguration file at path, with Gardener's
// defaults applied. An empty path gives the defaults alone.
func ControllerManager(path string) (*cmv1alpha1.ControllerManagerConfiguration, error) {
	cfg := &cmv1alpha1.ControllerManagerConfiguration{}
	if err := load(path, cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// ResourceManager reads the ResourceManagerConfiguration file at path, with Gardener's
// defaults applied. An empty path gives the defaults alone.
func ResourceManager(path string) (*rmv1alpha1.ResourceManagerConfiguration, error) {
	cfg := &rmv1alpha1.ResourceManagerConfiguration{}
	if err := load(path, cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

func load(path string, into runtime.Object) error {
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("reading component configuration: %w", err)
		}
		if _, _, err := codecs.UniversalDeserializer().Decode(data, nil, into); err != nil {
			return fmt.Errorf("decoding component configuration %s: %w", path, err)
		}
	}
	configScheme.Default(into)
	return nil
}
