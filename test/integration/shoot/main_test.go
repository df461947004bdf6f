// Package shoot_test serves the shoot function's reconcilers in-process (functiontest) against
// one real kube-apiserver and etcd, and sends them the CloudEvents their sources would.
// main_test.go starts the control plane; reference_test.go covers the "reference" reconciler.
package shoot_test

import (
	"testing"

	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

// env is the package's one control plane.
var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }
