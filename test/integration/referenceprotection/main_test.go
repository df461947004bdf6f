// Package referenceprotection_test serves the reference protection functions (cloudprofile,
// namespacedcloudprofile, controllerdeployment, exposureclass, quota) against a real
// kube-apiserver and etcd, each as its own ServiceAccount with exactly its declared RBAC, and
// sends them the CloudEvents the sources would.
package referenceprotection_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

// serve serves fn as its own ServiceAccount: a request its RBAC does not allow fails the test.
func serve(t *testing.T, fn *function.Function, opts ...functiontest.Option) *functiontest.Harness {
	t.Helper()
	return functiontest.New(t, env, fn, append([]functiontest.Option{functiontest.AsFunction()}, opts...)...)
}

var names atomic.Int64

// unique returns a name no other test uses: protected kinds are mostly cluster-scoped.
func unique(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, names.Add(1))
}

// namespace creates a project namespace for one test.
func namespace(t *testing.T) string { return env.Namespace(t) }

func create(t *testing.T, obj client.Object) {
	t.Helper()
	require.NoError(t, env.Client.Create(context.Background(), obj))
}

// createWithStatus creates obj with a status, as gardener-apiserver serves every object (the
// typed API always encodes one; a stand-in CRD keeps what it is given, and status is a
// subresource, so it is written once to exist for the functions' status patches).
func createWithStatus(t *testing.T, obj client.Object) {
	t.Helper()
	create(t, obj)
	require.NoError(t, env.Client.Status().Update(context.Background(), obj))
}

// reread returns the object as the API server has it now, nil if it is gone.
func reread[T client.Object](t *testing.T, obj T) T {
	t.Helper()
	fresh := obj.DeepCopyObject().(T)
	err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), fresh)
	if apierrors.IsNotFound(err) {
		var gone T
		return gone
	}
	require.NoError(t, err)
	return fresh
}

func exists(t *testing.T, obj client.Object) bool {
	t.Helper()
	err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
	if apierrors.IsNotFound(err) {
		return false
	}
	require.NoError(t, err)
	return true
}

// deleteAndReread deletes obj and returns it as it is now (being deleted, if something holds it).
func deleteAndReread[T client.Object](t *testing.T, obj T) T {
	t.Helper()
	require.NoError(t, env.Client.Delete(context.Background(), obj))
	return reread(t, obj)
}

// eventsAbout returns the reasons and messages of the Events recorded about obj (Events of
// cluster-scoped objects are recorded in the default namespace, as client-go's recorder does).
func eventsAbout(t *testing.T, obj client.Object) []corev1.Event {
	t.Helper()
	ns := obj.GetNamespace()
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	list := &corev1.EventList{}
	require.NoError(t, env.Client.List(context.Background(), list, client.InNamespace(ns)))
	var found []corev1.Event
	for _, e := range list.Items {
		if e.InvolvedObject.Name == obj.GetName() && e.InvolvedObject.UID == obj.GetUID() {
			found = append(found, e)
		}
	}
	return found
}
