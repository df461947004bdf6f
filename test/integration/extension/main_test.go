// Package extension_test serves the extension function in-process (functiontest) against one
// real kube-apiserver and etcd, as its own ServiceAccount, and sends it the CloudEvents its
// sources would. Extensions, ControllerRegistrations and ControllerDeployments are
// cluster-scoped: every test names its own.
package extension_test

import (
	"testing"

	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

// env is the package's one control plane.
var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }
