// Package gardencabundle_test serves the gardencabundle function in-process (functiontest)
// against real kube-apiservers and etcd: the garden (the package's env), where the runtime part's
// registrations are, and the runtime cluster, where their Secrets are.
package gardencabundle_test

import (
	"testing"

	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

// env is the package's garden.
var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }
