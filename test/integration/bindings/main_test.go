// Package bindings_test serves the secretbinding and credentialsbinding functions in-process
// (functiontest) against one real kube-apiserver and etcd, and sends them the CloudEvents their
// sources would. main_test.go starts the control plane and holds the helpers both use;
// secretbinding_test.go and credentialsbinding_test.go cover one function each.
package bindings_test

import (
	"context"
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/function"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

// env is the package's one control plane.
var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

// fixture is a binding function served over HTTP, with a project namespace of its own and a
// second namespace for the Quotas (Gardener keeps them in "garden").
type fixture struct {
	*functiontest.Harness
	ns, quotaNS string
}

func newFixture(t testing.TB, fn *function.Function, options ...functiontest.Option) *fixture {
	t.Helper()
	return &fixture{Harness: functiontest.New(t, env, fn, options...), ns: namespace(t), quotaNS: namespace(t)}
}

func namespace(t testing.TB) string { return env.Namespace(t) }

func create[T client.Object](t testing.TB, obj T) T {
	t.Helper()
	require.NoError(t, env.Client.Create(context.Background(), obj))
	return obj
}

func (f *fixture) secret(t testing.TB, name string) *corev1.Secret {
	return create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns}})
}

func (f *fixture) quota(t testing.TB, name string) *gardencorev1beta1.Quota {
	return create(t, &gardencorev1beta1.Quota{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.quotaNS}})
}

func (f *fixture) quotaRef(name string) corev1.ObjectReference {
	return corev1.ObjectReference{Name: name, Namespace: f.quotaNS}
}

// shoot creates a Shoot of the fixture's namespace; use sets the binding it uses.
func (f *fixture) shoot(t testing.TB, name string, use func(*gardencorev1beta1.Shoot)) *gardencorev1beta1.Shoot {
	s := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns}}
	use(s)
	return create(t, s)
}

// deleteShoot deletes a Shoot and sends its delete event.
func (f *fixture) deleteShoot(t testing.TB, s *gardencorev1beta1.Shoot) {
	t.Helper()
	require.NoError(t, env.Client.Delete(context.Background(), s))
	f.Send("delete", s)
}

// deleteAndSend deletes obj (its finalizer keeps it) and sends the update event of the deletion.
func (f *fixture) deleteAndSend(t testing.TB, obj client.Object) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, env.Client.Delete(ctx, obj))
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj))
	f.Send("update", obj)
}

// fresh re-reads obj.
func fresh[T client.Object](t testing.TB, obj T) T {
	t.Helper()
	require.NoError(t, env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj))
	return obj
}

func gone(t testing.TB, obj client.Object) bool {
	t.Helper()
	err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
	if apierrors.IsNotFound(err) {
		return true
	}
	require.NoError(t, err)
	return false
}

// warningCount is the count of the Warning event about obj with the given reason (0: none).
func warningCount(t testing.TB, obj client.Object, reason string) int32 {
	t.Helper()
	events := &corev1.EventList{}
	require.NoError(t, env.Client.List(context.Background(), events, client.InNamespace(obj.GetNamespace())))
	for _, e := range events.Items {
		if e.InvolvedObject.Name == obj.GetName() && e.Type == corev1.EventTypeWarning && e.Reason == reason {
			return e.Count
		}
	}
	return 0
}

// warnings returns the messages of the Warning events about obj with the given reason.
func warnings(t testing.TB, obj client.Object, reason string) []string {
	t.Helper()
	events := &corev1.EventList{}
	require.NoError(t, env.Client.List(context.Background(), events, client.InNamespace(obj.GetNamespace())))
	var messages []string
	for _, e := range events.Items {
		if e.InvolvedObject.Name == obj.GetName() && e.Type == corev1.EventTypeWarning && e.Reason == reason {
			messages = append(messages, e.Message)
		}
	}
	return messages
}
