// Package shootstate_test serves the shootstate function in-process (functiontest) against one
// real kube-apiserver and etcd with gardener-apiserver serving the garden's API, and sends it the
// CloudEvents its sources would.
package shootstate_test

import (
	"testing"

	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

// env is the package's one control plane.
var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.MainWith(m, &env, testenv.Options{GardenerAPIServer: true})
}
