// Package project_test serves the project function's reconcilers in-process (functiontest)
// against one real kube-apiserver and etcd with gardener-apiserver serving the garden's API, and
// sends them the CloudEvents their sources would.
// The files of this package share env: main_test.go starts it, project_test.go covers the Main
// reconciler, stale_test.go and activity_test.go the Stale and Activity reconcilers.
package project_test

import (
	"testing"

	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

// env is the package's one control plane.
var env *testenv.Env

func TestMain(m *testing.M) {
	// A garden's kube-apiserver may enforce that whoever makes an object block its owner's
	// deletion may update the owner's finalizers: the Main reconciler's namespaces and
	// ResourceQuotas do, so the tests run with that check on, and its checks are written down
	// for hack/leastprivilege.
	testenv.MainWith(m, &env, testenv.Options{APIServerArgs: map[string]string{
		"enable-admission-plugins": "OwnerReferencesPermissionEnforcement",
	}, AuthorizationLog: true, GardenerAPIServer: true})
}
