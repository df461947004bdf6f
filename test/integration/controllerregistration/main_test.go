// Package controllerregistration_test serves the controllerregistration function in-process
// (functiontest) against one real kube-apiserver and etcd, and sends it the CloudEvents its
// sources would. Seeds, ControllerRegistrations and ControllerInstallations are cluster-scoped
// and the sweep visits every Seed, so each test names its objects with a suffix of its own,
// scopes Always policies to its seeds with a seed selector, and removes what it created.
package controllerregistration_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gardener-knative/gardener-knative/pkg/controller/controllerregistration"
	"github.com/gardener-knative/gardener-knative/pkg/function/functiontest"
	"github.com/gardener-knative/gardener-knative/pkg/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

var suffixes atomic.Int32

// fixture is the function served over HTTP, with a suffix and a namespace of the test's own.
type fixture struct {
	*functiontest.Harness
	t      testing.TB
	suffix string
	ns     string
}

func newFixture(t testing.TB, options ...functiontest.Option) *fixture {
	t.Helper()
	f := &fixture{
		Harness: functiontest.New(t, env, controllerregistration.Function, options...),
		t:       t,
		suffix:  fmt.Sprintf("t%d", suffixes.Add(1)),
	}
	f.ns = env.Namespace(t)
	t.Cleanup(f.cleanup)
	return f
}

// name makes a cluster-wide name of the test's own.
func (f *fixture) name(base string) string { return base + "-" + f.suffix }

// testLabels select the test's seeds.
func (f *fixture) testLabels() map[string]string { return map[string]string{"test": f.suffix} }

// seed creates a Seed of the test, labelled for it, with the provider type "<provider>-<suffix>".
func (f *fixture) seed(name, provider string, mutate ...func(*gardencorev1beta1.Seed)) *gardencorev1beta1.Seed {
	f.t.Helper()
	s := &gardencorev1beta1.Seed{ObjectMeta: metav1.ObjectMeta{Name: f.name(name), Labels: f.testLabels()}}
	s.Spec.Provider.Type = f.name(provider)
	s.Spec.Provider.Region = "local"
	s.Spec.Ingress = &gardencorev1beta1.Ingress{Domain: "ingress.example.com"}
	for _, m := range mutate {
		m(s)
	}
	require.NoError(f.t, env.Client.Create(context.Background(), s))
	return s
}

type resource = gardencorev1beta1.ControllerResource

// registration creates a ControllerRegistration "<name>-<suffix>" for the resources (types are
// suffixed too). Always-like policies get a seed selector for the test's seeds.
func (f *fixture) registration(name string, policy gardencorev1beta1.ControllerDeploymentPolicy, resources ...resource) *gardencorev1beta1.ControllerRegistration {
	f.t.Helper()
	r := &gardencorev1beta1.ControllerRegistration{ObjectMeta: metav1.ObjectMeta{Name: f.name(name)}}
	for _, res := range resources {
		res.Type = f.name(res.Type)
		r.Spec.Resources = append(r.Spec.Resources, res)
	}
	if policy != "" {
		r.Spec.Deployment = &gardencorev1beta1.ControllerRegistrationDeployment{
			Policy:       ptr.To(policy),
			SeedSelector: &metav1.LabelSelector{MatchLabels: f.testLabels()},
		}
	}
	require.NoError(f.t, env.Client.Create(context.Background(), r))
	return r
}

// providerRegistration serves a seed or shoot provider's ControlPlane, Infrastructure and Worker.
func (f *fixture) providerRegistration(provider string) *gardencorev1beta1.ControllerRegistration {
	return f.registration("provider-"+provider, "",
		resource{Kind: "ControlPlane", Type: provider}, resource{Kind: "Infrastructure", Type: provider}, resource{Kind: "Worker", Type: provider})
}

// shoot creates a Shoot of the test's namespace on seed (spec and status), with one worker pool
// of provider and machine image os (both suffixed).
func (f *fixture) shoot(name, seed, provider, os string) *gardencorev1beta1.Shoot {
	f.t.Helper()
	ctx := context.Background()
	s := &gardencorev1beta1.Shoot{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns}}
	s.Spec.SeedName = ptr.To(seed)
	s.Spec.Provider.Type = f.name(provider)
	s.Spec.Provider.Workers = []gardencorev1beta1.Worker{{Name: "w", Machine: gardencorev1beta1.Machine{Type: "m", Image: &gardencorev1beta1.ShootMachineImage{Name: f.name(os)}}, Minimum: 1, Maximum: 1}}
	require.NoError(f.t, env.Client.Create(ctx, s))
	s.Status.SeedName = ptr.To(seed)
	s.Status.ObservedGeneration = s.Generation
	require.NoError(f.t, env.Client.Status().Update(ctx, s))
	return s
}

// installations are the ControllerInstallations of the seed, by registration name.
func (f *fixture) installations(seed string) map[string]gardencorev1beta1.ControllerInstallation {
	f.t.Helper()
	list := &gardencorev1beta1.ControllerInstallationList{}
	require.NoError(f.t, env.Client.List(context.Background(), list, client.MatchingFields{"spec.seedRef.name": seed}))
	byRegistration := map[string]gardencorev1beta1.ControllerInstallation{}
	for _, ci := range list.Items {
		_, dup := byRegistration[ci.Spec.RegistrationRef.Name]
		require.False(f.t, dup, "two installations of %s on %s", ci.Spec.RegistrationRef.Name, seed)
		byRegistration[ci.Spec.RegistrationRef.Name] = ci
	}
	return byRegistration
}

// registrationNames are the registrations installed on the seed, without the test's suffix.
func (f *fixture) registrationNames(seed string) []string {
	var names []string
	for name := range f.installations(seed) {
		names = append(names, strings.TrimSuffix(name, "-"+f.suffix))
	}
	return sortedStrings(names)
}

func sortedStrings(s []string) []string {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s
}

// get reads obj's current state into it.
func (f *fixture) get(obj client.Object) {
	f.t.Helper()
	require.NoError(f.t, env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj))
}

// cleanup removes every cluster-scoped object of the test: installations of its seeds and its
// registrations, then the seeds and registrations without their finalizers.
func (f *fixture) cleanup() {
	ctx := context.Background()
	installations := &gardencorev1beta1.ControllerInstallationList{}
	require.NoError(f.t, env.Client.List(ctx, installations))
	for _, ci := range installations.Items {
		if strings.HasSuffix(ci.Spec.RegistrationRef.Name, "-"+f.suffix) {
			require.NoError(f.t, client.IgnoreNotFound(env.Client.Delete(ctx, &ci)))
		}
	}
	seeds := &gardencorev1beta1.SeedList{}
	require.NoError(f.t, env.Client.List(ctx, seeds, client.MatchingLabels(f.testLabels())))
	for i := range seeds.Items {
		forceDelete(f.t, &seeds.Items[i])
	}
	registrations := &gardencorev1beta1.ControllerRegistrationList{}
	require.NoError(f.t, env.Client.List(ctx, registrations))
	for i := range registrations.Items {
		if strings.HasSuffix(registrations.Items[i].Name, "-"+f.suffix) {
			forceDelete(f.t, &registrations.Items[i])
		}
	}
}

func forceDelete(t testing.TB, obj client.Object) {
	ctx := context.Background()
	if len(obj.GetFinalizers()) > 0 {
		patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
		obj.SetFinalizers(nil)
		if err := env.Client.Patch(ctx, obj, patch); !apierrors.IsNotFound(err) {
			require.NoError(t, err)
		}
	}
	require.NoError(t, client.IgnoreNotFound(env.Client.Delete(ctx, obj)))
}

// secretIn creates a Secret with the gardener.cloud/role label and annotations in namespace
// (created if missing).
func secretIn(t testing.TB, namespace, role string, annotations map[string]string) *corev1.Secret {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, client.IgnoreAlreadyExists(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})))
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{GenerateName: role + "-", Namespace: namespace,
		Labels: map[string]string{"gardener.cloud/role": role}, Annotations: annotations}}
	require.NoError(t, env.Client.Create(ctx, s))
	return s
}
